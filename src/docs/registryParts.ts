/** The small builders every route registry file shares (registry.ts and the registry.*.ts parts it spreads in). */
import type { z } from "zod";
import type { ResponseDoc } from "./registry";

export const json = (description: string, schema: z.ZodType, headers?: Record<string, string>): ResponseDoc => ({
  description,
  schema,
  headers,
});
export const markdown = (description: string): ResponseDoc => ({ description, contentType: "text/markdown; charset=utf-8" });
/** Every route that checks an owner's signature can answer this. */
export const SIGNED = ["invalid_signature"];
/** What a call to a seller can fail with (POST /pay, approve). */
export const SELLER_ERRORS = [
  "upstream_error",
  "invalid_payment_required",
  "seller_redirect_refused",
  "seller_response_too_large",
  "upstream_timeout",
  "unsafe_seller_address",
  "insecure_seller",
];
