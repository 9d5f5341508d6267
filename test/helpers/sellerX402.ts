/** A request answered by @x402/core's x402HTTPResourceServer over node:http, as a stock x402 seller answers it. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type {
  HTTPAdapter,
  HTTPRequestContext,
  ProcessSettleSuccessResponse,
  SettlementOverrides,
  x402HTTPResourceServer,
} from "@x402/core/server";
import { header, readBody, sendJson } from "./sellerServer";

function nodeAdapter(req: IncomingMessage, url: URL): HTTPAdapter {
  return {
    getHeader: (name) => header(req, name),
    getMethod: () => req.method ?? "GET",
    getPath: () => url.pathname,
    getUrl: () => url.toString(),
    getAcceptHeader: () => header(req, "accept") ?? "",
    getUserAgent: () => header(req, "user-agent") ?? "",
  };
}

/**
 * Reads the request and answers its 402 (no payment, or a payment the server refuses) or a failed settlement; else
 * returns the settlement for the caller to answer 200 with (`overrides` is asked for a payment not settled before the
 * handler, as upto's usage is).
 */
export async function settleX402Request(
  httpServer: x402HTTPResourceServer,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
  overrides?: () => SettlementOverrides | undefined,
): Promise<ProcessSettleSuccessResponse | null> {
  await readBody(req);
  const context: HTTPRequestContext = { adapter: nodeAdapter(req, url), path: url.pathname, method: req.method ?? "GET" };
  const result = await httpServer.processHTTPRequest(context);
  if (result.type === "no-payment-required") {
    sendJson(res, 405, { error: "method_not_allowed" });
    return null;
  }
  if (result.type === "payment-error") {
    const { status, headers, body } = result.response;
    sendJson(res, status, body ?? {}, headers);
    return null;
  }
  const settled = await httpServer.processSettlement(
    result.paymentPayload,
    result.paymentRequirements,
    result.declaredExtensions,
    { request: context },
    result.beforeHandlerSettlement || !overrides ? undefined : overrides(),
    result.beforeHandlerSettlement,
  );
  if (!settled.success) {
    sendJson(res, settled.response.status, settled.response.body ?? { error: settled.errorReason }, {
      ...settled.response.headers,
      ...settled.headers,
    });
    return null;
  }
  return settled;
}
