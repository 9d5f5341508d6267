/** @spendgate/sdk: a typed client of a SpendGate service and the agent's onboarding. */
export { SpendGateClient, type SpendGateClientOptions } from "./client";
export { SpendGateError, isSpendGateError } from "./errors";
export { mcpClientConfig } from "./mcp";
export { onboard, configPath, DEFAULT_BASE_URL, type AgentConfig, type Io } from "./onboard";
export type * from "./types";
