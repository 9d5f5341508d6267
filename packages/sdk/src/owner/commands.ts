/** The owner's commands that sign or read through the service: login, link, policy, approvals, pause, withdraw. */
import { readFileSync } from "node:fs";
import { ZeroAddress, getAddress, parseUnits } from "ethers";
import { toBaseUnits } from "../../../../src/amounts";
import {
  APPROVAL_DECISION_TYPES,
  LINK_AGENT_TYPES,
  SET_PAUSED_TYPES,
  WITHDRAW_TYPES,
  policyDomain,
  serviceDomain,
} from "../../../../src/chain/typedData";
import { SpendGateClient } from "../client";
import { SpendGateError } from "../errors";
import { configPath, type AgentConfig } from "../onboard";
import type { AgentLimits, Approval } from "../types";
import { type Args, usageError, value, values } from "./args";
import { builtPolicy, policyRequest, policySummary, setPolicyTyped } from "./policy";
import { anonymousClient, ownerClient, saveSession } from "./session";
import { type Typed, ownerAddress, ownerWallet, signTyped, signingTime } from "./signer";
import type { OwnerIo } from "./main";

interface AgentSummary {
  address: string;
  chainId: number;
  network: string;
  policyContract: string;
  ownerAddress: string | null;
  deployed: boolean;
}

/** One command's run: its arguments, the service, where it writes. */
export interface Run {
  a: Args;
  baseUrl: string;
  io: OwnerIo;
}

/**
 * The agent's public summary (its chain id and policy contract: the domain of what its owner signs). The agent it
 * names must be the one asked for: a server that answered another would have its owner sign for that one.
 */
async function agentSummary(baseUrl: string, agent: string): Promise<AgentSummary> {
  const summary = await anonymousClient(baseUrl).request<AgentSummary>(`/agents/${encodeURIComponent(agent)}`, { anonymous: true });
  let asked: string;
  try {
    asked = getAddress(agent);
  } catch {
    throw usageError(`${agent} is not an address`);
  }
  if (getAddress(summary.address) !== asked || getAddress(summary.policyContract) !== asked)
    throw new SpendGateError({
      error: "unexpected_response",
      message: `${baseUrl} answered agent ${summary.address} (contract ${summary.policyContract}) for ${agent}: nothing signed.`,
      status: 200,
    });
  return summary;
}

/** The agent named on the command line, or the owner's only one. */
async function agentArg(r: Run, client: SpendGateClient, at = 0): Promise<string> {
  const named = r.a.positional[at];
  if (named) return named;
  const { agents } = await client.request<{ agents: AgentSummary[] }>("/wallet/agents");
  if (agents.length !== 1)
    throw usageError(`name the agent: you have ${agents.length} (${agents.map((x) => x.address).join(", ") || "none"})`);
  return agents[0].address;
}

const limitsOf = async (client: SpendGateClient, agent: string): Promise<AgentLimits> => client.limits(agent);

/** The owner's signature of `message` in the agent's policy domain (its contract on its chain), or null once printed. */
const signForAgent = (r: Run, chainId: number, agent: string, types: Typed["types"], message: Record<string, unknown>) =>
  signTyped(r.a, ownerWallet(r.a, r.io.env), { domain: policyDomain(chainId, agent), types, message }, r.io);

/** EIP-4361's message, as the dashboard signs it (viem's createSiweMessage there: the same lines). */
function siweMessage(url: URL, address: string, chainId: number, nonce: string, now: Date): string {
  return [
    `${url.host} wants you to sign in with your Ethereum account:`,
    address,
    "",
    "Sign in to SpendGate to manage your agents' spending. This signature costs nothing and moves no funds.",
    "",
    `URI: ${url.origin}`,
    "Version: 1",
    `Chain ID: ${chainId}`,
    `Nonce: ${nonce}`,
    `Issued At: ${now.toISOString()}`,
    `Expiration Time: ${new Date(now.getTime() + 10 * 60_000).toISOString()}`,
  ].join("\n");
}

export async function login(r: Run): Promise<number> {
  const wallet = ownerWallet(r.a, r.io.env);
  const client = anonymousClient(r.baseUrl);
  let message: string;
  let signature: string;
  const messageFile = value(r.a, "--message-file");
  if (messageFile) {
    message = readFileSync(messageFile, "utf8");
    signature = value(r.a, "--signature") ?? "";
    if (!signature) throw usageError("--message-file needs the --signature of that message");
  } else {
    const address = ownerAddress(r.a, wallet);
    const { nonce } = await client.request<{ nonce: string }>("/auth/siwe/nonce", { method: "POST", body: { address }, anonymous: true });
    const { chainId } = await client.request<{ chainId: number }>("/dashboard/config", { anonymous: true });
    const url = new URL(r.baseUrl);
    const now = new Date();
    message = siweMessage(url, address, chainId, nonce, now);
    if (r.a.switches.has("--print-typed-data") || !wallet) {
      r.io.out(message);
      r.io.out(
        "Sign this text (personal_sign) within 10 minutes, save it to a file, then: spendgate owner login --message-file FILE --signature 0x…",
      );
      return 0;
    }
    signature = await wallet.signMessage(message);
  }
  const session = await client.request<{ apiKey: string; ownerAddress: string; expiresAt: string }>("/auth/siwe/verify", {
    method: "POST",
    body: { message, signature },
    anonymous: true,
  });
  const path = saveSession(r.io.env, { baseUrl: r.baseUrl, ...session });
  r.io.out(`Signed in to ${r.baseUrl} as ${session.ownerAddress} until ${session.expiresAt} (owner key in ${path}, mode 0600).`);
  return 0;
}

/** The agent to link and its activation code: an activation link, AGENT --code CODE, or this machine's agent. */
async function linkTarget(r: Run): Promise<{ agent: string; code: string }> {
  const arg = r.a.positional[0];
  if (arg && /^https?:\/\//.test(arg)) {
    const q = new URL(arg).searchParams;
    const agent = q.get("agent");
    const code = q.get("code");
    if (!agent || !code) throw usageError(`${arg} is not an activation link (it has no agent and code)`);
    return { agent, code };
  }
  const code = value(r.a, "--code");
  if (arg && code) return { agent: arg, code };
  if (arg) throw usageError("link AGENT needs --code CODE (the code of its activation link), or pass the whole link");
  // This machine's agent (`spendgate onboard` wrote it): its own key fetches its activation code.
  const path = configPath(r.io.env);
  let config: AgentConfig;
  try {
    config = JSON.parse(readFileSync(path, "utf8")) as AgentConfig;
  } catch {
    throw usageError(`no agent named and no agent config in ${path}: pass the activation link`);
  }
  const agentClient = new SpendGateClient({ baseUrl: r.baseUrl, apiKey: config.apiKey, agentAddress: config.agentAddress });
  return { agent: config.agentAddress, code: (await agentClient.activation()).activationCode };
}

export async function link(r: Run): Promise<number> {
  const { agent, code } = await linkTarget(r);
  const wallet = ownerWallet(r.a, r.io.env);
  const owner = ownerAddress(r.a, wallet);
  const { chainId, address } = await agentSummary(r.baseUrl, agent);
  const timestamp = signingTime(r.a);
  const typed = { domain: serviceDomain(chainId), types: LINK_AGENT_TYPES, message: { agent: address, owner, timestamp } };
  const humanSignature = await signTyped(r.a, wallet, typed, r.io);
  if (!humanSignature) return 0;
  const res = await anonymousClient(r.baseUrl).request<{ agentAddress: string; ownerAddress: string }>("/agents/link", {
    method: "POST",
    body: { agentAddress: address, ownerAddress: owner, humanSignature, timestamp, activationCode: code },
    anonymous: true,
  });
  r.io.out(`Linked agent ${res.agentAddress} to owner ${res.ownerAddress}. Next: spendgate owner policy set ${res.agentAddress} …`);
  return 0;
}

export async function policyShow(r: Run): Promise<number> {
  const client = ownerClient(r.baseUrl, r.io.env);
  const p = await limitsOf(client, await agentArg(r, client, 1));
  if (r.a.switches.has("--json")) {
    r.io.out(JSON.stringify(p, null, 2));
    return 0;
  }
  r.io.out(`Agent ${p.address} (${String(p.network)}), policy ${p.deployed ? "deployed" : "NOT deployed"}${p.paused ? ", PAUSED" : ""}.`);
  r.io.out(
    `Owner ${typeof p.ownerAddress === "string" ? p.ownerAddress : "(none)"}; epoch ${String(p.epoch)}; spent today ${String(p.spentToday)} of ${p.dailyBudget} USDC.`,
  );
  r.io.out(`Each payment at most ${p.perTxLimit} USDC; above ${p.approvalThreshold} USDC it waits for you.`);
  const payees = p.payees as Record<string, string>;
  const caps = p.merchantCaps as Record<string, string>;
  for (const e of p.allowlist)
    r.io.out(
      `  ${e}: ${caps[e] ? `at most ${caps[e]} USDC a day` : "no cap of its own"}, ${payees[e] ? `pays only ${payees[e]}` : "pays ANY address"}`,
    );
  return 0;
}

export async function policySet(r: Run): Promise<number> {
  const client = ownerClient(r.baseUrl, r.io.env);
  const req = policyRequest(r.a);
  const agent = r.a.positional[1] ?? req.agentAddress ?? (await agentArg(r, client, 1));
  // --pin URL: the seller is asked (nothing paid) which payee it names; its host is allowed, paying only that payee.
  for (const url of values(r.a, "--pin")) {
    const q = await client.request<{ merchant: string; payTo: string }>("/merchants/quote", {
      method: "POST",
      body: { agentAddress: agent, url },
    });
    req.allowlist = [...req.allowlist, q.merchant];
    req.payees = { ...req.payees, [q.merchant]: q.payTo };
  }
  const built = builtPolicy(req);
  const { chainId, address, network } = await agentSummary(r.baseUrl, agent);
  const typed = setPolicyTyped(chainId, address, built, signingTime(r.a));
  r.io.out(`You are about to sign the spend policy of agent ${address} on ${network} (chain ${chainId}):`);
  for (const line of policySummary(built.policy)) r.io.out(`  ${line}`);
  if (r.a.switches.has("--print-typed-data")) return (await signTyped(r.a, null, typed, r.io), 0);
  if (!r.a.switches.has("--yes")) {
    const answer = await r.io.ask("Sign and send it? [y/N] ");
    if (!/^y(es)?$/i.test(answer.trim())) {
      r.io.out("Nothing signed.");
      return 1;
    }
  }
  const humanSignature = await signTyped(r.a, ownerWallet(r.a, r.io.env), typed, r.io);
  const { agentAddress: _a, ...fields } = req;
  const res = await client.request<{ status: string; txHash: string | null; allowlistRoot: string }>("/limits", {
    method: "POST",
    body: { ...fields, agentAddress: address, humanSignature, timestamp: typed.message.timestamp },
  });
  r.io.out(
    `Policy ${res.status} (tx ${res.txHash ?? "none"}); allowlist root ${res.allowlistRoot}. Check it on-chain: spendgate owner verify ${address}`,
  );
  return 0;
}

export async function approvals(r: Run): Promise<number> {
  const client = ownerClient(r.baseUrl, r.io.env);
  const list = await client.approvals(r.a.positional[0]);
  if (r.a.switches.has("--json")) r.io.out(JSON.stringify(list, null, 2));
  else if (r.a.switches.has("--quiet")) for (const x of list) r.io.out(x.id);
  else if (!list.length) r.io.out("No payment waits for your approval.");
  else
    for (const x of list)
      r.io.out(
        `${x.id}  ${x.amount} USDC to ${x.merchant} (pays ${typeof x.payTo === "string" ? x.payTo : "any"}) for agent ${x.agentAddress}: "${x.intent}", expires ${x.expiresAt}`,
      );
  return 0;
}

/** approve ID / deny ID: the owner's ApprovalDecision over exactly what the approval shows. */
export async function decide(r: Run, action: "approve" | "deny"): Promise<number> {
  const id = r.a.positional[0];
  if (!id) throw usageError(`${action} needs the approval's id (spendgate owner approvals lists them)`);
  const client = ownerClient(r.baseUrl, r.io.env);
  const found = (await client.approvals()).find((x: Approval) => x.id === id);
  if (!found) throw usageError(`no pending approval ${id} (spendgate owner approvals lists them)`);
  const { chainId, address } = await agentSummary(r.baseUrl, found.agentAddress);
  const message = {
    action,
    approvalId: id,
    agent: address,
    merchant: found.merchant,
    payTo: (found.payTo as string | null) ?? ZeroAddress,
    amount: toBaseUnits(found.amount),
    timestamp: signingTime(r.a),
  };
  r.io.out(`${action === "approve" ? "Approving" : "Denying"} ${found.amount} USDC to ${found.merchant} (payee ${message.payTo}).`);
  const humanSignature = await signForAgent(r, chainId, address, APPROVAL_DECISION_TYPES, message);
  if (!humanSignature) return 0;
  const decision = { humanSignature, timestamp: message.timestamp };
  const res = action === "approve" ? await client.approve(id, decision) : await client.deny(id, decision);
  r.io.out(`${id}: ${res.status}${typeof res.txHash === "string" ? ` (tx ${res.txHash})` : ""}.`);
  return 0;
}

/** pause / resume: SetPaused naming the agent's current epoch (a resume must; a pause takes any). */
export async function setPaused(r: Run, paused: boolean): Promise<number> {
  const client = ownerClient(r.baseUrl, r.io.env);
  const agent = await agentArg(r, client);
  const [{ chainId, address }, { epoch }] = await Promise.all([agentSummary(r.baseUrl, agent), limitsOf(client, agent)]);
  const message = { agent: address, paused, epoch, timestamp: signingTime(r.a) };
  const humanSignature = await signForAgent(r, chainId, address, SET_PAUSED_TYPES, message);
  if (!humanSignature) return 0;
  const res = await client.request<{ paused: boolean; txHash?: string }>(`/agents/${address}/pause`, {
    method: "POST",
    body: { paused, epoch, humanSignature, timestamp: message.timestamp },
  });
  r.io.out(
    `Agent ${address} ${res.paused ? "paused: every payment is blocked on-chain" : "resumed"}${res.txHash ? ` (tx ${res.txHash})` : ""}.`,
  );
  return 0;
}

export async function withdraw(r: Run): Promise<number> {
  const client = ownerClient(r.baseUrl, r.io.env);
  const agent = await agentArg(r, client);
  const to = value(r.a, "--to");
  const amount = value(r.a, "--amount");
  if (!to || !amount)
    throw usageError("withdraw needs --to ADDRESS and --amount AMOUNT (--token USDC, ETH or an ERC-20 address with --decimals)");
  const token = value(r.a, "--token") ?? "USDC";
  const { chainId, address, network } = await agentSummary(r.baseUrl, agent);
  let tokenAddress: string;
  let decimals: number;
  if (token.toUpperCase() === "USDC") {
    const { networks } = await client.request<{ networks: { name: string; usdcAddress: string }[] }>("/dashboard/config", {
      anonymous: true,
    });
    const usdc = networks.find((n) => n.name === network)?.usdcAddress;
    if (!usdc) throw usageError(`the service runs no network ${network}`);
    [tokenAddress, decimals] = [usdc, 6];
  } else if (token.toUpperCase() === "ETH") {
    [tokenAddress, decimals] = [ZeroAddress, 18];
  } else {
    const d = value(r.a, "--decimals");
    if (!d || !/^\d{1,2}$/.test(d)) throw usageError("an ERC-20 token needs --decimals N");
    [tokenAddress, decimals] = [getAddress(token), Number(d)];
  }
  let units: bigint;
  try {
    units = parseUnits(amount, decimals);
  } catch {
    throw usageError(`--amount ${amount} is not an amount with at most ${decimals} decimals`);
  }
  const message = { agent: address, token: tokenAddress, to: getAddress(to), amount: units, timestamp: signingTime(r.a) };
  r.io.out(`Withdrawing ${amount} ${token} from ${address} to ${message.to}.`);
  const humanSignature = await signForAgent(r, chainId, address, WITHDRAW_TYPES, message);
  if (!humanSignature) return 0;
  const res = await client.request<{ txHash: string }>(`/agents/${address}/withdraw`, {
    method: "POST",
    body: {
      token: tokenAddress === ZeroAddress ? "ETH" : token.toUpperCase() === "USDC" ? "USDC" : tokenAddress,
      to: message.to,
      amount,
      humanSignature,
      timestamp: message.timestamp,
    },
  });
  r.io.out(`Withdrawn (tx ${res.txHash}).`);
  return 0;
}
