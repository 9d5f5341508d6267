# SpendGate: multi-stage build. The final image holds dist/, the contract artifacts and production dependencies only,
# runs as the unprivileged `node` user, and runs node itself as PID 1 (exec form, no shell or npm in between), so
# `docker stop`'s SIGTERM reaches the service and it drains (SHUTDOWN_DRAIN_MS, 8 s, under docker's 10 s default).
#
#   docker build -t spendgate .            (podman build works the same)
#   docker run --env-file .env -p 8402:8402 spendgate
#
# NODE_IMAGE: any Debian-based Node 20.12+ image with a `node` user (uid 1000), such as the official one.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
ENV NODE_ENV=development npm_config_fund=false npm_config_audit=false npm_config_update_notifier=false
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
# Contracts compiled (solc-js from npm: no compiler download), TypeScript to dist/, the dashboard bundled.
RUN npm run build

FROM build AS prune
RUN npm prune --omit=dev

FROM ${NODE_IMAGE}
ARG GIT_COMMIT=""
ENV NODE_ENV=production HOST=0.0.0.0 PORT=8402 GIT_COMMIT=${GIT_COMMIT}
WORKDIR /app
# Read at run time: package.json (version), artifacts/ (ABIs), deployments/ (factory records), dist/; the Hardhat config
# and its tsconfig only for embedded mode (no RPC_URL, and SANDBOX=1: without it the service refuses to start), which starts a chain in-process.
COPY --from=prune /app/package.json /app/package-lock.json /app/hardhat.config.ts /app/tsconfig.json ./
COPY --from=prune /app/node_modules ./node_modules
COPY --from=prune /app/artifacts ./artifacts
COPY --from=prune /app/dist ./dist
COPY --from=prune --chown=node:node /app/deployments ./deployments
USER node
EXPOSE 8402
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8402)+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/index.js"]
