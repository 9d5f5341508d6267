/**
 * The owner's decisions on pending payments, for the route registry (spread into ROUTES after POST /pay).
 */
import { OptionalAddressQuery } from "../schemas/accounts";
import { ApprovalDecisionRequest, ApprovalIdParam, ApprovalsResponse, ApproveResponse, DenyResponse } from "../schemas/payments";
import type { RouteDoc } from "./registry";
import { SELLER_ERRORS, SIGNED, json } from "./registryParts";

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
