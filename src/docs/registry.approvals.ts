/**
 * The owner's decisions on pending payments, for the route registry (spread into ROUTES after POST /pay).
 */
import type { z } from "zod";
import { OptionalAddressQuery } from "../schemas/accounts";
import { ApprovalDecisionRequest, ApprovalIdParam, ApprovalsResponse, ApproveResponse, DenyResponse } from "../schemas/payments";
import type { ResponseDoc, RouteDoc } from "./registry";

const json = (description: string, schema: z.ZodType): ResponseDoc => ({ description, schema });
const SIGNED = ["invalid_signature"];
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

export const APPROVAL_ROUTES: RouteDoc[] = [
  {
    method: "GET",
    path: "/approvals",
    tag: "Approvals",
    summary: "Pending approvals of the owner's agents",
    auth: "owner",
    query: OptionalAddressQuery,
    responses: { 200: json("pending approvals", ApprovalsResponse) },
    errors: ["bad_request", "unauthorized", "forbidden"],
  },
  {
    method: "POST",
    path: "/approvals/:id/approve",
    tag: "Approvals",
    summary: "Approve a pending payment: the service pays it",
    description: "The owner's ApprovalDecision signature (action approve) is also checked on-chain. The seller's price is fetched again.",
    auth: "owner",
    signature: "ApprovalDecision",
    params: { id: { schema: ApprovalIdParam, description: "the approvalId (apr_...)" } },
    body: ApprovalDecisionRequest,
    responses: { 200: json("approved and paid", ApproveResponse) },
    errors: [
      "bad_request",
      "unauthorized",
      "forbidden",
      "not_found",
      "conflict",
      "price_changed",
      "unsupported_payment",
      "blocked",
      ...SIGNED,
      ...SELLER_ERRORS,
    ],
  },
  {
    method: "POST",
    path: "/approvals/:id/deny",
    tag: "Approvals",
    summary: "Deny a pending payment",
    auth: "owner",
    signature: "ApprovalDecision",
    params: { id: { schema: ApprovalIdParam, description: "the approvalId (apr_...)" } },
    body: ApprovalDecisionRequest,
    responses: { 200: json("denied; nothing moves", DenyResponse) },
    errors: ["bad_request", "unauthorized", "forbidden", "not_found", "conflict", ...SIGNED],
  },
];
