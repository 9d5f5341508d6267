/**
 * The container files, checked without a container engine (the Docker client here has no compose plugin and no
 * daemon): compose.yaml against the Compose Specification's own JSON schema (test/fixtures/compose-spec.json, from
 * github.com/compose-spec/compose-spec schema/compose-spec.json at 170098ba07d9f53c383a41bfd4c5166b0a4529a6), the
 * Dockerfile's shape, and what .dockerignore keeps out. Building and starting the image: scripts/container/check.sh
 * (buildah), run by this file only with SPENDGATE_CONTAINER_CHECK=1 (minutes: npm ci and the build inside).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import Ajv from "ajv";
import { expect } from "chai";
import { parse } from "yaml";

const ROOT = join(__dirname, "..", "..");
const read = (f: string) => readFileSync(join(ROOT, f), "utf8");

/** The Dockerfile's instructions (continuation lines joined, comments dropped), by stage. */
function stages(dockerfile: string): { from: string; lines: string[] }[] {
  const lines = dockerfile
    .replace(/\\\n\s*/g, " ")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith("#"));
  const out: { from: string; lines: string[] }[] = [];
  for (const l of lines) {
    if (/^FROM\s/i.test(l)) out.push({ from: l, lines: [] });
    else out.at(-1)?.lines.push(l);
  }
  return out;
}

describe("Dockerfile, compose.yaml and .dockerignore", () => {
  it("compose.yaml is valid under the Compose Specification's schema, and the schema catches a wrong key", () => {
    const ajv = new Ajv({ strict: false, allErrors: true, validateSchema: false });
    const validate = ajv.compile(JSON.parse(read("test/fixtures/compose-spec.json")) as object);
    const compose = parse(read("compose.yaml"), { merge: true }) as Record<string, any>;
    expect(validate(compose), JSON.stringify(validate.errors, null, 2)).to.equal(true);
    const broken = structuredClone(compose);
    broken.services.spendgate.enviroment = { X: "1" };
    expect(validate(broken)).to.equal(false);
  });

  it("compose.yaml: the service waits for MongoDB, a one-node replica set initiated by its health check; the chain is a profile", () => {
    const compose = parse(read("compose.yaml"), { merge: true }) as Record<string, any>;
    const { spendgate, mongo, chain, deploy } = compose.services;
    expect(mongo.command).to.include.members(["--replSet", "rs0"]);
    expect(mongo.healthcheck.test.join(" ")).to.include("rs.initiate");
    expect(spendgate.environment.MONGODB_URI).to.include("replicaSet=rs0");
    expect(spendgate.depends_on.mongo).to.deep.equal({ condition: "service_healthy" });
    expect(spendgate.depends_on.deploy).to.deep.equal({ condition: "service_completed_successfully", required: false });
    expect(spendgate.profiles).to.equal(undefined);
    expect(chain.profiles).to.deep.equal(["chain"]);
    expect(deploy.profiles).to.deep.equal(["chain"]);
    expect(deploy.command).to.deep.equal(["npm", "run", "deploy", "--", "--network", "localhost"]);
    // The sandbox's keys are Hardhat's public test accounts: the deploy names the operator the env file's key is.
    expect(read("compose.chain.env")).to.include("OPERATOR_PRIVATE_KEY=0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d");
    expect(deploy.environment.OPERATOR_ADDRESS).to.equal("0x70997970C51812dc3A010C7d01b50e0d17dc79C8");
  });

  it("Dockerfile: multi-stage, npm run build in the build stage, production dependencies only, non-root, node as PID 1", () => {
    const s = stages(read("Dockerfile"));
    expect(s.length).to.be.at.least(2);
    const final = s.at(-1)!;
    const build = s.find((x) => / AS build$/i.test(x.from))!;
    expect(build.lines).to.include("RUN npm ci").and.include("RUN npm run build");
    expect(s.some((x) => x.lines.includes("RUN npm prune --omit=dev"))).to.equal(true);
    expect(
      final.lines.some((l) => /^RUN\s/.test(l)),
      "the final stage installs nothing",
    ).to.equal(false);
    expect(final.lines.filter((l) => /^COPY --from=prune .*\/app\/node_modules/.test(l))).to.have.length(1);
    expect(final.lines).to.include("USER node");
    const cmd = final.lines.filter((l) => /^(CMD|ENTRYPOINT)\s/.test(l));
    expect(cmd).to.deep.equal(['CMD ["node", "dist/src/index.js"]']);
    expect(final.lines.join("\n")).to.include("HOST=0.0.0.0");
  });

  it(".dockerignore keeps out installed and built folders, secrets and git", () => {
    const ignored = read(".dockerignore")
      .split("\n")
      .map((l) => l.trim());
    expect(ignored).to.include.members(["node_modules", "dist", "artifacts", ".git", ".env", ".env.*", "!.env.example"]);
  });

  it("builds and starts the image; /health/ready answers 200 (SPENDGATE_CONTAINER_CHECK=1 and buildah)", async function () {
    if (process.env.SPENDGATE_CONTAINER_CHECK !== "1") this.skip();
    this.timeout(1_800_000);
    const { code, out } = await new Promise<{ code: number; out: string }>((resolve) => {
      execFile("bash", ["scripts/container/check.sh"], { cwd: ROOT, timeout: 1_700_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? 1 : 0, out: stdout + stderr });
      });
    });
    expect(code, out).to.equal(0);
    expect(out).to.match(/\/health\/ready 200 after \d+ s/);
    console.log(out.trim().replace(/^/gm, "      "));
  });
});
