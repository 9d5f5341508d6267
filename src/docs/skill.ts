/** GET /skill.md: the onboarding file agents follow, with this deployment's URLs filled in. */
// The MCP client configuration (Claude / Cursor style `mcpServers`) has one home, the SDK's, shared with `spendgate onboard`.
import { mcpClientConfig } from "../../packages/sdk/src/mcp";
import { onNetworks, type DocsContext } from "./openapi";

export const CONFIG_PATH = "~/.spendgate/config.json";

export function buildSkill(baseUrl: string, dashboardUrl: string, networks: Pick<DocsContext, "networks">): string {
  const mcp = JSON.stringify(mcpClientConfig(baseUrl), null, 2);
  const names = networks.networks.map((n) => n.displayName).join(" or ");
  return `---
name: spendgate
description: Pay x402 sellers (HTTP 402) in USDC on ${names} through SpendGate, under a spend policy your human owner controls on-chain. Use it whenever a resource you need asks for payment.
---

# SpendGate onboarding for agents

SpendGate gives you a wallet and pays x402 sellers for you, in USDC on ${onNetworks(networks)}. Your wallet is a
contract that is also your spend policy: your human owner sets and signs the policy, and the wallet lets money out
only for payments that policy authorised (or to your owner). Nobody, SpendGate included, can spend past it.

- API (base URL): ${baseUrl}
- Owner dashboard: ${dashboardUrl}
- MCP tool server: ${baseUrl}/mcp (HTTP transport)
- API reference: ${baseUrl}/references/api_docs.md (OpenAPI: ${baseUrl}/openapi.json)

Do the steps in order, once. Replace every \`<...>\` with the real value.

## 1. Check for your config first

Your config lives in \`${CONFIG_PATH}\`. Look for it before anything else:

\`\`\`sh
cat ${CONFIG_PATH}
\`\`\`

| field | meaning |
|---|---|
| agentAddress | your wallet address (0x...): a contract, known before it is deployed; fund it only after your owner's policy is deployed |
| apiKey | your API key (sk_...): a secret, shown only once, at creation |
| label | the name you were created with |
| createdAt | ISO 8601 time of creation |
| baseUrl | the SpendGate it belongs to (${baseUrl}) |

If it exists and its \`baseUrl\` is ${baseUrl}, you are already registered: skip to step 4. Never overwrite or
delete an existing config: it holds the only copy of its API key.

## 2. Create your wallet (genesis)

\`\`\`sh
curl -s -X POST ${baseUrl}/wallet/genesis -H 'Content-Type: application/json' -d '{"email":"<owner email>","label":"<agent name>"}'
\`\`\`

The answer (201) holds \`agentAddress\`, \`apiKey\`, \`label\`, \`createdAt\`, \`activationUrl\` (your owner's
activation link) and \`message\`. A 409 \`conflict\` means an agent with this email and label exists already: find its config, do
not create another. A 401 \`unauthorized\` means registration is closed on this SpendGate: ask your
owner for an owner key (or the operator's registration token) and add \`-H 'Authorization: Bearer <token>'\`.

## 3. Write your config

Create the folder and write the answer's fields, readable by you only:

\`\`\`sh
mkdir -p ~/.spendgate && chmod 700 ~/.spendgate
\`\`\`

\`\`\`json
{
  "agentAddress": "<agentAddress>",
  "apiKey": "<apiKey>",
  "label": "<label>",
  "createdAt": "<createdAt>",
  "baseUrl": "${baseUrl}"
}
\`\`\`

\`\`\`sh
chmod 600 ${CONFIG_PATH}
\`\`\`

## 4. Register the MCP server

Add SpendGate to your MCP client over HTTP with these two headers. \`Authorization\` is required on every request;
your agent key already names your agent, so a client that can send only one header may leave out \`X-Agent-Address\`:

\`\`\`json
${mcp}
\`\`\`

With Claude Code: \`claude mcp add --transport http spendgate ${baseUrl}/mcp --header "Authorization: Bearer <apiKey>" --header "X-Agent-Address: <agentAddress>"\`.

## 5. Ask your owner to activate you

Send your owner the \`activationUrl\` from the genesis answer. It looks like

${dashboardUrl}/onboarding?agent=<agentAddress>&code=<activationCode>

and only who has it can link you (keep it between you and your owner). Lost it? Ask again with your key:
\`curl -s "${baseUrl}/wallet/activation?address=<agentAddress>" -H "Authorization: Bearer <apiKey>"\`.

There the owner connects a wallet, links you to it and signs your spend policy: perTxLimit, dailyBudget, an
allowlist of merchant domains and an approval threshold, and optionally budgets per hour, 7 days, 30 days and
lifetime, a cap on payments per hour, daily caps per merchant, the payee each merchant may be paid at (the
dashboard asks each seller for its quote and offers the \`payTo\` it names) and an expiry (\`validUntil\`). Until
then every payment is refused (\`no_policy\`).

**Fund your wallet only after your policy is deployed** (\`"deployed": true\` in step 6), and tell your owner the
same: until then nothing on-chain says who owns your address, and money sent there early is at risk.
\`GET /limits\` shows a \`warning\` when an undeployed address already holds funds.

## 6. Check your limits

\`\`\`sh
curl -s "${baseUrl}/limits?address=<agentAddress>" -H "Authorization: Bearer <apiKey>"
\`\`\`

Active when your entry shows \`"deployed": true\` with the limits your owner set. If not, wait for your owner.
\`windows\` lists each budget window your owner set (hourly, daily, weekly, monthly, lifetime) with what remains
and when it resets (fixed UTC windows); \`velocity\` says how many payments are left this hour;
\`merchantRemainingToday\` what each capped merchant has left today; \`payees\` the only address each pinned
merchant may be paid at (a seller asking another address is refused with \`payee_not_allowed\`: do not retry, tell
your owner; \`verify_merchant\` says so before you pay); after \`validUntil\` every payment is blocked
(\`policy_expired\`) until your owner signs a new policy.

## 7. Use the tools

The tools are \`get_limits\`, \`verify_merchant\`, \`pay\`, \`get_balance\`, \`list_transactions\` and
\`get_payment\`. They are listed as soon as the server is registered, before your owner sets a policy (until then
\`pay\` answers \`no_policy\`), and nothing changes once the policy is active: no restart is needed then. Only a
client that loads its MCP servers at start needs one restart after step 4. Amounts (\`maxAmount\`) may be decimal
strings (\`"0.05"\`) or JSON numbers (\`0.05\`), with at most 6 decimals (more is refused, never rounded).

## Rules

1. Always read your limits (\`get_limits\`) before spending: a payment larger than what remains in any window
   will be blocked (\`hourly_budget_exceeded\`, \`daily_budget_exceeded\`, \`weekly_budget_exceeded\`,
   \`monthly_budget_exceeded\`, \`lifetime_budget_exceeded\`, \`merchant_budget_exceeded\`, \`velocity_exceeded\`).
2. Verify a merchant that is new to you (\`verify_merchant\`) before paying it: it tells you the allowlist decision,
   the seller's price and what \`pay\` would answer, without paying.
3. Send a meaningful \`intent\` with every payment: what you are buying and why. Your owner reads it.
4. Never retry a blocked payment. Report the \`reason\` to your owner and stop.
5. A pending payment waits for your owner's approval: do not retry it or pay again; look it up later with \`get_payment\`.
6. Never approve your own payments. Only your owner approves or denies, with their own wallet; no tool can.

## Paying

\`pay\` takes \`serviceUrl\`, \`maxAmount\` (your own ceiling, decimal USDC such as "0.50"), \`intent\` and optionally
\`method\`, \`body\` and \`idempotencyKey\`. It answers:

- approved: paid and settled; \`txHash\`, \`remainingDailyBudget\` and the seller's response, and \`swap\` when your
  wallet first bought the USDC it lacked with its WETH or ETH (\`{ txHash, tokenIn, amountIn, amountOut }\`);
- pending: \`approvalId\`; your owner decides. Wait, do not retry;
- blocked (\`isError\`): \`reason\` and \`onchainEvent: "PaymentBlocked"\`. Do not retry; report and stop.

Holding WETH or ETH but not enough USDC? If your owner's policy allows swaps (\`maxSwapSlippageBps\` above 0 in
\`get_limits\`), \`pay\` buys exactly the missing USDC on Uniswap first, never above the pool's average price plus
that slippage. Otherwise, or if your WETH and ETH cannot cover it, the payment is refused with
\`insufficient_funds\`; a price that moved too far is refused with \`swap_slippage_exceeded\`. \`get_balance\` shows all three.

Without MCP the same is \`POST ${baseUrl}/pay\` with \`Authorization: Bearer <apiKey>\` and
\`{"agentAddress":"<agentAddress>","serviceUrl":"...","maxAmount":"...","intent":"..."}\` (200 approved, 202 pending, 422 blocked).

Shortcut, inside a clone of the SpendGate repository or a project that has installed its SDK package
(\`@spendgate/sdk\`, from the tarball your operator gives you; it is not on the npm registry): \`npx spendgate onboard
--base-url ${baseUrl}\` does steps 1 to 4 and prints your activation link. Anywhere else do not run \`npx spendgate\`:
npx would download whatever package of that name the registry holds.
`;
}
