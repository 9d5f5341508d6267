/**
 * The MCP tool tests' shared set-up, booted once per test file by useToolsStack(): the real stack, an x402 v2 seller
 * settling through its own facilitator, one owner, and builders for funded agents and SDK clients closed at the end.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { Wallet } from "ethers";
import { startStack, randomOwner, type Stack } from "../helpers/stack";
import { fundedFacilitator, mintUsdc, startV2Seller, type TestSeller } from "../helpers/sellers";
import { mcpClient } from "./client";

export const USDC = 1_000_000n;

/** Registers the file's `before` and `after` hooks and returns the stack's handles and builders. */
export function useToolsStack() {
  let s: Stack;
  let seller: TestSeller;
  let owner: Wallet;
  const clients: Client[] = [];

  before(async () => {
    s = await startStack();
    seller = await startV2Seller({ facilitator: await fundedFacilitator(s), usdc: s.svc.config.usdcAddress, price: 1n * USDC });
    owner = randomOwner();
  });
  after(async () => {
    await Promise.all(clients.map((c) => c.close().catch(() => undefined)));
    await seller?.close();
    await s?.close();
  });

  async function agent(policy: Parameters<Stack["onboard"]>[1] = {}) {
    const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
    await mintUsdc(s, a.agentAddress, 50n * USDC);
    return a;
  }
  async function connect(headers: Record<string, string>) {
    const c = await mcpClient(s.url, headers);
    clients.push(c);
    return c;
  }

  return {
    get s() {
      return s;
    },
    get seller() {
      return seller;
    },
    get owner() {
      return owner;
    },
    agent,
    connect,
  };
}
