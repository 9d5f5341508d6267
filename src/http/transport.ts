/** What the HTTP layer answers before any route: unknown methods, and Node's own parser errors, in the error shape. */
import type { Server } from "node:http";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { appError, errorBody } from "../errors";
import type { Middleware } from "../api/types";

const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]);
const ALLOW = [...METHODS].join(", ");

/** TRACE, PROPFIND, M-SEARCH and other methods no route has: 405 in the error shape (never 501). */
export function knownMethods(): Middleware {
  return async function onlyKnownMethods(ctx, next) {
    if (!METHODS.has(ctx.method)) {
      ctx.set("Allow", ALLOW);
      throw appError("method_not_allowed", `${ctx.method.slice(0, 32)} is not allowed here.`);
    }
    await next();
  };
}

/**
 * Node answers a request it cannot parse (a malformed request line, headers too large) with a bare 400 and no body;
 * this answers in the interface's error shape and closes the connection.
 */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable || (err as { code?: string }).code === "ECONNRESET") {
      socket.destroy();
      return;
    }
    const tooLarge = err.code === "HPE_HEADER_OVERFLOW";
    const e = tooLarge
      ? appError("headers_too_large", "The request's headers are too large.")
      : appError("bad_request", "The request could not be parsed as HTTP.");
    const body = JSON.stringify(errorBody(e));
    socket.end(
      `HTTP/1.1 ${e.status} ${tooLarge ? "Request Header Fields Too Large" : "Bad Request"}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

/**
 * CONNECT never reaches Koa: Node hands it to the server's 'connect' listeners and, without one, closes the socket
 * unanswered. SpendGate is no proxy: 405 in the error shape, with the methods it serves, and the connection closed.
 */
export function answerConnect(server: Server): void {
  server.on("connect", (_req: unknown, socket: Duplex) => {
    socket.on("error", () => socket.destroy());
    const body = JSON.stringify(errorBody(appError("method_not_allowed", "CONNECT is not allowed here: SpendGate is not a proxy.")));
    socket.end(
      `HTTP/1.1 405 Method Not Allowed\r\nAllow: ${ALLOW}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
