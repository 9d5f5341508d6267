/**
 * What every scheme test file shares: one stack, a stock scheme facilitator (its own funded key) for the stock sellers,
 * agents onboarded and funded, POST /pay with the file's defaults, and the auditor's view of the chain held against the
 * ledger (what each test ends with).
 */
import { expect } from "chai";
import { Wallet } from "ethers";
import { auditFromLogs } from "../../src/audit/audit";
import { fetchLedger, ledgerDisagreements } from "../../src/audit/ledgerAudit";
import { chargedWith, unsettledEntries } from "../../src/store/channels";
import type { ChannelDoc } from "../../src/store/channelDocuments";
import { mintUsdc } from "../helpers/sellers";
import { stockSchemeFacilitator, type StockFacilitator } from "../helpers/schemeSellers";
import { type ApiResponse, randomOwner, stackPerFile, type Stack } from "../helpers/stack";

export const USDC = 1_000_000n;

export interface SchemeFile {
  s: Stack;
  keep: ReturnType<typeof stackPerFile>["keep"];
  /** The stock facilitator (upto, batch-settlement, exact), set in the file's `before`. */
  facilitator: () => StockFacilitator;
  /** An agent of a new owner, with `policy` over an allowlist of 127.0.0.1, holding 10 USDC. */
  fundedAgent: (
    policy?: Record<string, unknown>,
  ) => Promise<{ agentAddress: string; apiKey: string; policyContract: string; owner: Wallet }>;
  /** POST /pay for `a` to `url`, with the file's defaults (maxAmount, intent) under `body`. */
  pay: (a: { apiKey: string; agentAddress: string }, url: string, body?: Record<string, unknown>) => Promise<ApiResponse>;
}

export function schemesPerFile(env: Record<string, string>, defaults: { maxAmount: string; intent: string }): SchemeFile {
  const { s, keep } = stackPerFile(env);
  let facilitator: StockFacilitator | undefined;
  before(async () => {
    const key = Wallet.createRandom();
    await s.svc.chain.provider.send("hardhat_setBalance", [key.address, `0x${(10n ** 21n).toString(16)}`]);
    facilitator = stockSchemeFacilitator(s.svc.config.rpcUrl, key.privateKey);
  });
  return {
    s,
    keep,
    facilitator: () => {
      if (!facilitator) throw new Error("the stock facilitator is set in the file's before()");
      return facilitator;
    },
    fundedAgent: async (policy = {}) => {
      const owner = randomOwner();
      const a = await s.onboard(owner, { allowlist: ["127.0.0.1"], ...policy });
      await mintUsdc(s, a.agentAddress, 10n * USDC);
      return { ...a, owner };
    },
    pay: (a, url, body = {}) =>
      s.api("POST", "/pay", { key: a.apiKey, body: { agentAddress: a.agentAddress, serviceUrl: url, ...defaults, ...body } }),
  };
}

/** Asserts the chain's events explain every outflow, and the ledger `key` reads agrees with them. */
export async function expectAuditClean(s: Stack, key: string): Promise<void> {
  const report = await auditFromLogs(s.svc.chain.provider, {
    factory: s.svc.config.factoryAddress,
    usdc: s.svc.config.usdcAddress,
    fromBlock: s.svc.config.factoryDeployBlock,
  });
  expect(report.inconsistencies, "the audit's anomalies").to.deep.equal([]);
  expect(ledgerDisagreements(report, await fetchLedger(s.url, key)), "the ledger against the chain").to.deep.equal([]);
}

/**
 * The agent's channel as stored, its `charged` as the ledger has it: the channel's own charge is written with its next
 * voucher, and meanwhile the entries of its unsettled vouchers say what they charged (src/payments/schemes/vouchers.ts).
 */
export async function storedChannel(s: Pick<Stack, "svc">, agentAddress: string): Promise<ChannelDoc> {
  const c = await s.svc.store.channels.findOne({ agentAddress });
  if (!c) throw new Error(`agent ${agentAddress} has no channel`);
  return { ...c, charged: chargedWith(c, await unsettledEntries(s.svc.store.payments, [c])).toString() };
}
