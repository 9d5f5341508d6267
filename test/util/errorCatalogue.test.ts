/**
 * The error catalogue (src/errors.ts) is the one home of every error code: each code's status and default message come
 * from it, nothing else constructs an AppError, and the interface specification's codes are there with their status.
 */
import { expect } from "chai";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { AppError, ERROR_CATALOGUE, appError, errorBody, httpError, isErrorCode, transient, type ErrorCode } from "../../src/errors";
import { ERROR_CODES } from "../../src/docs/errors";

const ROOT = resolve(__dirname, "../..");
/** The interface specification, beside the repository (../shared/spec) where the team keeps it. */
const SPEC = resolve(ROOT, "../shared/spec/service-interface.md");
/** Its section 7 ("Errors"), as written there: the codes it names and their statuses. */
const SPEC_ERRORS: Record<string, number> = { not_found: 404, conflict: 409 };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}

/** `| 404 | not_found | ... |` rows of the spec's error table: the code column when it is one snake_case word. */
function specCodes(markdown: string): Record<string, number> {
  const section = markdown.slice(markdown.indexOf("## 7. Errors"), markdown.indexOf("## 8."));
  const codes: Record<string, number> = {};
  for (const m of section.matchAll(/^\| (\d{3}) \| ([a-z]+(?:_[a-z]+)*) \|/gm)) codes[m[2]] = Number(m[1]);
  return codes;
}

describe("error catalogue: one home for every code, its status and its default message", function () {
  it("constructs AppError nowhere but in src/errors.ts", function () {
    const outside = sourceFiles(join(ROOT, "src"))
      .filter((file) => relative(ROOT, file) !== "src/errors.ts")
      .filter((file) => readFileSync(file, "utf8").includes("new AppError("))
      .map((file) => relative(ROOT, file));
    expect(outside).to.deep.equal([]);
  });

  it("has every code of the interface specification, with its status", function () {
    for (const [code, status] of Object.entries(SPEC_ERRORS)) {
      expect(isErrorCode(code), code).to.equal(true);
      expect(ERROR_CATALOGUE[code as ErrorCode].status, code).to.equal(status);
    }
  });

  it("matches the specification's error table itself, where the specification is at hand", function () {
    if (!existsSync(SPEC)) this.skip();
    const codes = specCodes(readFileSync(SPEC, "utf8"));
    expect(codes, "the codes section 7 names").to.deep.equal(SPEC_ERRORS);
  });

  it("gives each code an HTTP error status, a default message and a meaning; the docs' table is the catalogue", function () {
    for (const [code, spec] of Object.entries(ERROR_CATALOGUE)) {
      expect(spec.status, code).to.be.within(400, 599);
      expect(spec.message, code).to.match(/^[A-Z].*\.$/);
      expect(spec.meaning.length, code).to.be.greaterThan(10);
      expect(ERROR_CODES[code as ErrorCode], code).to.include({ status: spec.status, meaning: spec.meaning });
    }
  });

  it("answers with the catalogue's status and, without a message, its default message", function () {
    const e = appError("price_changed");
    expect(e).to.be.instanceOf(AppError);
    expect(errorBody(e)).to.deep.equal({ error: "price_changed", message: ERROR_CATALOGUE.price_changed.message, status: 409 });
    const withDetails = appError("bad_request", "Invalid body.", { details: [{ path: "x", message: "bad" }] });
    expect(errorBody(withDetails)).to.deep.equal({
      error: "bad_request",
      message: "Invalid body.",
      status: 400,
      details: [{ path: "x", message: "bad" }],
    });
    const busy = transient(appError("conflict", "Busy."), 3);
    expect(errorBody(busy)).to.deep.equal({ error: "conflict", message: "Busy.", status: 409, retryable: true });
    expect(busy.headers).to.deep.equal({ "Retry-After": "3" });
  });

  it("keeps a client error's own status from Koa or a parser (the one exception), as before", function () {
    expect(errorBody(httpError(411))).to.include({ error: "bad_request", status: 411 });
    expect(errorBody(httpError(404, "No route."))).to.deep.equal({ error: "not_found", message: "No route.", status: 404 });
    expect(errorBody(httpError(502))).to.include({ error: "internal", status: 502 });
  });
});
