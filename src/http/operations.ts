/** Every operation of the service, in the order the API reference lists them. */
import type { AnyOperation } from "../api/operation";
import { ACCOUNT_OPERATIONS } from "./routes/accounts";
import { CHANNEL_OPERATIONS } from "./routes/channels";
import { OWNER_OPERATIONS, PAUSE_OPERATION } from "./routes/controls";
import { DASHBOARD_OPERATIONS } from "./routes/dashboard";
import { DEV_SCHEME_SELLER_OPERATIONS, DEV_SELLER_OPERATIONS } from "./routes/devSeller";
import { DOC_OPERATIONS } from "./routes/docs";
import { EXPLORER_OPERATIONS } from "./routes/explorer";
import { LIMIT_OPERATIONS } from "./routes/limits";
import { MCP_OPERATIONS } from "./routes/mcp";
import { MERCHANT_OPERATIONS } from "./routes/merchants";
import { METRICS_OPERATIONS } from "./routes/metrics";
import { APPROVAL_OPERATIONS, FAUCET_OPERATION, LEDGER_OPERATIONS, PAY_OPERATION } from "./routes/payments";
import { SELL_OPERATIONS } from "./routes/sell";
import { SYSTEM_OPERATIONS } from "./routes/system";
import { WEBHOOK_OPERATIONS } from "./routes/webhooks";

export const OPERATIONS: readonly AnyOperation[] = [
  ...SYSTEM_OPERATIONS,
  ...METRICS_OPERATIONS,
  ...ACCOUNT_OPERATIONS,
  ...LIMIT_OPERATIONS,
  ...MERCHANT_OPERATIONS,
  PAUSE_OPERATION,
  PAY_OPERATION,
  ...APPROVAL_OPERATIONS,
  ...LEDGER_OPERATIONS,
  ...CHANNEL_OPERATIONS,
  FAUCET_OPERATION,
  ...EXPLORER_OPERATIONS,
  ...SELL_OPERATIONS,
  ...DEV_SELLER_OPERATIONS,
  ...DEV_SCHEME_SELLER_OPERATIONS,
  ...MCP_OPERATIONS,
  ...DOC_OPERATIONS,
  ...OWNER_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...DASHBOARD_OPERATIONS,
];

/** Mount order: the dashboard's pages first, so that a page path the API shares passes API requests on. */
export const MOUNT_ORDER: readonly AnyOperation[] = [
  ...DASHBOARD_OPERATIONS,
  ...OPERATIONS.filter((op) => !DASHBOARD_OPERATIONS.includes(op)),
];
