/**
 * One delivery attempt: POST the signed JSON body, through the seller SSRF guard (src/x402/ssrf.ts: private
 * addresses refused before and at connect time unless ALLOW_PRIVATE_SELLERS), never following a redirect, within a
 * time limit. Only a 2xx answer delivers.
 */
import { fetch as undiciFetch } from "undici";
import { sellerDispatcher } from "../x402/buyer";
import { privateAddressesOf } from "../x402/ssrf";
import type { WebhookUrlRules } from "./endpoints";

export interface AttemptResult {
  ok: boolean;
  httpStatus: number | null;
  /** Why it failed: http_<status>, redirect, timeout, unsafe_address, insecure_url, unreachable. */
  error: string | null;
  latencyMs: number | null;
  /** True when no connection was made (the guard refused it first). */
  refused: boolean;
}

const refusedResult = (error: string): AttemptResult => ({ ok: false, httpStatus: null, error, latencyMs: null, refused: true });

export async function postWebhook(
  url: string,
  body: string,
  headers: Record<string, string>,
  opts: WebhookUrlRules & { timeoutMs: number },
): Promise<AttemptResult> {
  const u = new URL(url);
  if (u.protocol === "http:" && !opts.allowHttp) return refusedResult("insecure_url: plain http is not allowed (ALLOW_HTTP_SELLERS)");
  if (!opts.allowPrivate) {
    let refused: string[];
    try {
      refused = await privateAddressesOf(u.hostname);
    } catch {
      return refusedResult(`unreachable: ${u.hostname} could not be resolved`);
    }
    if (refused.length) return refusedResult(`unsafe_address: ${u.hostname} resolves to a private address; refused by the SSRF guard`);
  }
  const started = performance.now();
  try {
    const res = await undiciFetch(u, {
      dispatcher: sellerDispatcher(opts.allowPrivate),
      method: "POST",
      headers: { "Content-Type": "application/json", "User-Agent": "SpendGate-Webhooks/1", ...headers },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(opts.timeoutMs),
    });
    const latencyMs = Math.round(performance.now() - started);
    await res.body?.cancel().catch(() => undefined);
    if (res.status >= 200 && res.status < 300) return { ok: true, httpStatus: res.status, error: null, latencyMs, refused: false };
    const error =
      res.status >= 300 && res.status < 400 ? `redirect: HTTP ${res.status} (redirects are not followed)` : `http_${res.status}`;
    return { ok: false, httpStatus: res.status, error, latencyMs, refused: false };
  } catch (err) {
    const latencyMs = Math.round(performance.now() - started);
    const e = err as { name?: string; cause?: { code?: string; message?: string } };
    if (e.name === "TimeoutError" || e.name === "AbortError") {
      return { ok: false, httpStatus: null, error: `timeout: no answer within ${opts.timeoutMs} ms`, latencyMs, refused: false };
    }
    if (e.cause?.code === "EPRIVATEADDRESS")
      return refusedResult(`unsafe_address: ${u.hostname} resolves to a private address; refused by the SSRF guard`);
    return {
      ok: false,
      httpStatus: null,
      error: `unreachable: ${e.cause?.code ?? e.cause?.message ?? "connection failed"}`.slice(0, 200),
      latencyMs,
      refused: false,
    };
  }
}
