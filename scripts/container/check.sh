#!/usr/bin/env bash
# Builds the image from the Dockerfile and starts it (embedded mode: SANDBOX=1, no other configuration), then waits for
# GET /health/ready to answer 200. Needs buildah (Debian: apt-get install buildah). Uses chroot isolation, which works
# where crun may not set rlimits (containers inside containers); the container then shares the host's network.
#
#   NODE_IMAGE=node:20-bookworm-slim PORT=18402 bash scripts/container/check.sh
#
# NODE_IMAGE: the base image (default the official node:20-bookworm-slim; where no registry can be reached, a local
# stand-in built from Debian, see docs/production.md). KEEP=1 leaves the image in place.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE_IMAGE="${NODE_IMAGE:-node:20-bookworm-slim}"
PORT="${PORT:-18402}"
TAG="localhost/spendgate:check"
log="$(mktemp)"
ctr=""
cleanup() {
  if [ -n "$ctr" ]; then
    [ -n "${pid:-}" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    buildah rm "$ctr" >/dev/null 2>&1 || true
  fi
  [ "${KEEP:-0}" = 1 ] || buildah rmi "$TAG" >/dev/null 2>&1 || true
  rm -f "$log"
}
trap cleanup EXIT

t0=$(date +%s)
buildah bud --isolation chroot --layers --format docker --build-arg NODE_IMAGE="$NODE_IMAGE" \
  --build-arg GIT_COMMIT="$(git rev-parse HEAD 2>/dev/null || true)" -t "$TAG" . >"$log" 2>&1 || {
  tail -40 "$log"
  echo "container check: the build failed" >&2
  exit 1
}
t1=$(date +%s)
echo "container check: built $TAG in $((t1 - t0)) s ($(buildah inspect --format '{{.OCIv1.Config.User}}' "$TAG") user, CMD $(buildah inspect --format '{{.OCIv1.Config.Cmd}}' "$TAG"))"

ctr="$(buildah from "$TAG")"
buildah run --isolation chroot --env PORT="$PORT" --env HOST=127.0.0.1 --env SANDBOX=1 "$ctr" -- node dist/src/index.js >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 240); do
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health/ready" || true)"
  if [ "$code" = 200 ]; then
    echo "container check: /health/ready 200 after $(($(date +%s) - t1)) s"
    curl -s "http://127.0.0.1:$PORT/health" && echo
    exit 0
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.5
done
tail -40 "$log"
echo "container check: /health/ready never answered 200" >&2
exit 1
