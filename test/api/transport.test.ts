/**
 * The HTTP layer under hostile clients: encodings, odd methods, unparsable requests, huge declared bodies, key
 * guessing and quota games. Each answer is in the error shape and never a 5xx.
 */
import { expect } from "chai";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { gzipSync, brotliCompressSync, deflateSync } from "node:zlib";
import { randomOwner, startStack, type Stack } from "../helpers/stack";

/** Writes raw bytes to the service and returns what it answered before closing (or after `waitMs`). */
function raw(
  url: string,
  request: string | Buffer,
  opts: { waitMs?: number; keepWriting?: number } = {},
): Promise<{ text: string; closed: boolean; written: number }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let text = "";
    let written = 0;
    let closed = false;
    const timer = setTimeout(() => finish(), opts.waitMs ?? 2_000);
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve({ text, closed, written });
    };
    socket.on("data", (d) => (text += d.toString()));
    socket.on("close", () => {
      closed = true;
      finish();
    });
    socket.on("error", () => undefined);
    socket.write(request);
    if (opts.keepWriting) {
      const chunk = Buffer.alloc(64 * 1024, 120);
      const pump = () => {
        while (!closed && written < opts.keepWriting! && socket.write(chunk)) written += chunk.length;
        if (!closed && written < opts.keepWriting!) socket.once("drain", pump);
      };
      pump();
    }
  });
}

describe("HTTP transport under hostile clients", () => {
  let s: Stack;
  before(async () => {
    s = await startStack({ RATE_LIMIT_PER_MINUTE: "300", AUTH_FAILURES_PER_MINUTE: "100" });
  });
  after(async () => s?.close());

  const post = (path: string, body: Buffer, headers: Record<string, string>) =>
    fetch(`${s.url}${path}`, { method: "POST", body: new Uint8Array(body), headers: { "Content-Type": "application/json", ...headers } });

  it("decodes gzip, deflate and br bodies, and refuses other encodings (415) and undecodable ones (400), never 5xx", async () => {
    const json = Buffer.from(JSON.stringify({ address: randomOwner().address }));
    for (const [encoding, body] of [
      ["gzip", gzipSync(json)],
      ["deflate", deflateSync(json)],
      ["br", brotliCompressSync(json)],
    ] as const) {
      const res = await post("/auth/siwe/nonce", body, { "Content-Encoding": encoding });
      expect(res.status, encoding).to.equal(200);
      expect(((await res.json()) as { nonce: string }).nonce).to.be.a("string");
    }
    const odd = await post("/auth/siwe/nonce", json, { "Content-Encoding": "zstd" });
    expect(odd.status).to.equal(415);
    expect(await odd.json()).to.include({ error: "unsupported_media_type", status: 415 });
    for (const encoding of ["gzip", "deflate", "br"]) {
      const res = await post("/auth/siwe/nonce", Buffer.from("definitely not compressed"), { "Content-Encoding": encoding });
      expect(res.status, encoding).to.equal(400);
      expect(await res.json()).to.include({ error: "bad_request", status: 400 });
    }
  });

  it("answers TRACE, PROPFIND and M-SEARCH with 405 in the error shape, not 501", async () => {
    for (const method of ["TRACE", "PROPFIND", "M-SEARCH"]) {
      const r = await raw(s.url, `${method} /limits HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect(r.text, method).to.match(/^HTTP\/1\.1 405/);
      expect(r.text).to.include('"error":"method_not_allowed"');
    }
  });

  it("answers CONNECT with 405 in the error shape and an Allow header instead of closing the socket, and stays up", async () => {
    for (const target of ["example.com:443", "/health"]) {
      const r = await raw(s.url, `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`);
      expect(r.text, target).to.match(/^HTTP\/1\.1 405 /);
      expect(r.text).to.match(/\r\nAllow: GET, HEAD, POST/i);
      const body = JSON.parse(r.text.slice(r.text.indexOf("\r\n\r\n") + 4)) as Record<string, unknown>;
      expect(body).to.include({ error: "method_not_allowed", status: 405 });
      expect(body.message).to.be.a("string");
    }
    // Through Node's own client too: the 405 arrives as the CONNECT's answer.
    const { hostname, port } = new URL(s.url);
    const answer = await new Promise<{ status: number; allow: string | undefined; body: string }>((resolve, reject) => {
      const req = httpRequest({ host: hostname, port: Number(port), method: "CONNECT", path: "example.com:443" });
      req.on("connect", (res, socket, head) => {
        let body = head.toString();
        socket.on("data", (d: Buffer) => (body += d.toString()));
        socket.on("end", () => resolve({ status: res.statusCode ?? 0, allow: res.headers.allow, body }));
        socket.on("error", reject);
      });
      req.on("error", reject);
      req.end();
    });
    expect(answer.status).to.equal(405);
    expect(answer.allow).to.include("GET");
    expect(JSON.parse(answer.body)).to.include({ error: "method_not_allowed", status: 405 });
    expect((await fetch(`${s.url}/health`)).status).to.equal(200);
  });

  it("answers a malformed request line and oversized headers in the error shape (Node's own parser errors)", async () => {
    const bad = await raw(s.url, "GARBAGE\r\n\r\n");
    expect(bad.text).to.match(/^HTTP\/1\.1 400/);
    expect(bad.text).to.include('"error":"bad_request"');
    const big = await raw(s.url, `GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`);
    expect(big.text).to.match(/^HTTP\/1\.1 431/);
    expect(big.text).to.include('"error":"headers_too_large"');
  });

  it("does not read a refused body: a 1 GiB declared upload gets its 401 or 413 and the connection closes", async () => {
    for (const [path, auth] of [
      ["/pay", ""],
      ["/auth/siwe/nonce", ""],
    ] as const) {
      const head = `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n${auth}\r\n`;
      const r = await raw(s.url, head, { keepWriting: 64 * 1024 * 1024, waitMs: 5_000 });
      expect(r.text, path).to.match(/^HTTP\/1\.1 (401|413)/);
      expect(r.closed, `${path}: connection closed`).to.equal(true);
      expect(r.written, `${path}: bytes pushed before the close`).to.be.lessThan(32 * 1024 * 1024);
    }
  });

  it("counts one key's quota however its header is spelt, and never limits /health", async () => {
    const a = await s.genesis();
    const variants = [`Bearer ${a.apiKey}`, `bearer ${a.apiKey}`, `Bearer   ${a.apiKey}  `, `BEARER ${a.apiKey}`];
    let limited = 0;
    for (let i = 0; i < 320; i++) {
      const res = await fetch(`${s.url}/wallet/agents`, { headers: { Authorization: variants[i % variants.length] } });
      if (res.status === 429) limited++;
      await res.arrayBuffer();
    }
    expect(limited, "the 300-a-minute quota is shared by every spelling").to.be.greaterThan(0);
    for (let i = 0; i < 50; i++) expect((await fetch(`${s.url}/health`)).status).to.equal(200);
  });

  it("does not let 100 wrong-key guesses from one address lock a valid key out", async () => {
    const a = await s.genesis();
    for (let i = 0; i < 110; i++) {
      const res = await fetch(`${s.url}/wallet/agents`, { headers: { Authorization: `Bearer sk_${"0".repeat(63)}${i % 10}` } });
      expect([401, 429]).to.include(res.status);
      await res.arrayBuffer();
    }
    const wrong = await fetch(`${s.url}/wallet/agents`, { headers: { Authorization: "Bearer sk_guess" } });
    expect(wrong.status).to.equal(429);
    const right = await fetch(`${s.url}/wallet/agents`, { headers: { Authorization: `Bearer ${a.apiKey}` } });
    expect(right.status).to.equal(200);
  });
});
