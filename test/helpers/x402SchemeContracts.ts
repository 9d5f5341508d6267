/**
 * The x402 scheme stand-ins (contracts/test/x402/) on the in-process Hardhat chain, placed exactly as the embedded
 * chain places them (src/dev/x402Schemes.ts), with TestUSDC and Multicall3 at their Base addresses, plus the EIP-712
 * types of what payers and receiver authorizers sign. Used by the contracts' own rule tests.
 */
import hre from "hardhat";
import { TypedDataEncoder, type Signer, type TypedDataField } from "ethers";
import { placeX402SchemeContracts, X402_SCHEME_ADDRESSES } from "../../src/dev/x402Schemes";
import type { ChannelConfigFields } from "../../src/store/channelDocuments";

const { ethers } = hre;
export const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
export const CHAIN_ID = 8453;
export const A = X402_SCHEME_ADDRESSES;

export async function placeSchemeFixture() {
  for (const [name, address] of [
    ["TestUSDC", BASE_USDC],
    ["Multicall3", MULTICALL3],
  ]) {
    const { deployedBytecode } = await hre.artifacts.readArtifact(name);
    await ethers.provider.send("hardhat_setCode", [address, deployedBytecode]);
  }
  await placeX402SchemeContracts(hre.network.provider);
  return {
    usdc: await ethers.getContractAt("TestUSDC", BASE_USDC),
    permit2: await ethers.getContractAt("Permit2", A.permit2),
    upto: await ethers.getContractAt("X402UptoPermit2Proxy", A.uptoPermit2Proxy),
    batch: await ethers.getContractAt("X402BatchSettlement", A.batchSettlement),
    erc3009Collector: await ethers.getContractAt("ERC3009DepositCollector", A.erc3009DepositCollector),
    permit2Collector: await ethers.getContractAt("Permit2DepositCollector", A.permit2DepositCollector),
  };
}

// ---------------------------------------------------------------------------------------------- Permit2

export const PERMIT2_DOMAIN = { name: "Permit2", chainId: CHAIN_ID, verifyingContract: A.permit2 };
const TOKEN_PERMISSIONS: TypedDataField[] = [
  { name: "token", type: "address" },
  { name: "amount", type: "uint256" },
];
const witnessTypes = (witnessType: string, witnessFields: TypedDataField[]) => ({
  PermitWitnessTransferFrom: [
    { name: "permitted", type: "TokenPermissions" },
    { name: "spender", type: "address" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
    { name: "witness", type: witnessType },
  ],
  TokenPermissions: TOKEN_PERMISSIONS,
  [witnessType]: witnessFields,
});
export const UPTO_TYPES = witnessTypes("Witness", [
  { name: "to", type: "address" },
  { name: "facilitator", type: "address" },
  { name: "validAfter", type: "uint256" },
]);
export const DEPOSIT_WITNESS_TYPES = witnessTypes("DepositWitness", [{ name: "channelId", type: "bytes32" }]);

export interface UptoPermit {
  permitted: { token: string; amount: bigint };
  spender: string;
  nonce: bigint;
  deadline: bigint;
  witness: { to: string; facilitator: string; validAfter: bigint };
}

export function uptoDigest(p: UptoPermit): string {
  return TypedDataEncoder.hash(PERMIT2_DOMAIN, UPTO_TYPES, p);
}

export const signUpto = (signer: Signer, p: UptoPermit) => signer.signTypedData(PERMIT2_DOMAIN, UPTO_TYPES, p);

/** The proxy's `settle` arguments for a signed upto permit. */
export function uptoSettleArgs(p: UptoPermit, amount: bigint, owner: string, signature: string) {
  return [{ permitted: p.permitted, nonce: p.nonce, deadline: p.deadline }, amount, owner, p.witness, signature] as const;
}

// ---------------------------------------------------------------------------------------------- batch settlement

export const BATCH_DOMAIN = { name: "x402 Batch Settlement", version: "1", chainId: CHAIN_ID, verifyingContract: A.batchSettlement };
export const CHANNEL_CONFIG_TYPES = {
  ChannelConfig: [
    { name: "payer", type: "address" },
    { name: "payerAuthorizer", type: "address" },
    { name: "receiver", type: "address" },
    { name: "receiverAuthorizer", type: "address" },
    { name: "token", type: "address" },
    { name: "withdrawDelay", type: "uint40" },
    { name: "salt", type: "bytes32" },
  ],
};
export const VOUCHER_TYPES = {
  Voucher: [
    { name: "channelId", type: "bytes32" },
    { name: "maxClaimableAmount", type: "uint128" },
  ],
};
export const REFUND_TYPES = {
  Refund: [
    { name: "channelId", type: "bytes32" },
    { name: "nonce", type: "uint256" },
    { name: "amount", type: "uint128" },
  ],
};
export const CLAIM_BATCH_TYPES = {
  ClaimBatch: [{ name: "claims", type: "ClaimEntry[]" }],
  ClaimEntry: [
    { name: "channelId", type: "bytes32" },
    { name: "maxClaimableAmount", type: "uint128" },
    { name: "totalClaimed", type: "uint128" },
  ],
};
/** EIP-2612 permit (USDC's `permit`). */
export const PERMIT_TYPES = {
  Permit: [
    { name: "owner", type: "address" },
    { name: "spender", type: "address" },
    { name: "value", type: "uint256" },
    { name: "nonce", type: "uint256" },
    { name: "deadline", type: "uint256" },
  ],
};
export const RECEIVE_TYPES = {
  ReceiveWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
};
export const USDC_DOMAIN = { name: "USD Coin", version: "2", chainId: CHAIN_ID, verifyingContract: BASE_USDC };

export const channelIdOf = (c: ChannelConfigFields) => TypedDataEncoder.hash(BATCH_DOMAIN, CHANNEL_CONFIG_TYPES, c);
export const voucherDigest = (channelId: string, maxClaimableAmount: bigint) =>
  TypedDataEncoder.hash(BATCH_DOMAIN, VOUCHER_TYPES, { channelId, maxClaimableAmount });
export const signVoucher = (signer: Signer, channelId: string, maxClaimableAmount: bigint) =>
  signer.signTypedData(BATCH_DOMAIN, VOUCHER_TYPES, { channelId, maxClaimableAmount });
export const signRefund = (signer: Signer, channelId: string, nonce: bigint, amount: bigint) =>
  signer.signTypedData(BATCH_DOMAIN, REFUND_TYPES, { channelId, nonce, amount });

export interface VoucherClaim {
  voucher: { channel: ChannelConfigFields; maxClaimableAmount: bigint };
  signature: string;
  totalClaimed: bigint;
}

export const signClaimBatch = (signer: Signer, claims: VoucherClaim[]) =>
  signer.signTypedData(BATCH_DOMAIN, CLAIM_BATCH_TYPES, {
    claims: claims.map((c) => ({
      channelId: channelIdOf(c.voucher.channel),
      maxClaimableAmount: c.voucher.maxClaimableAmount,
      totalClaimed: c.totalClaimed,
    })),
  });

/** ERC-3009 collector data: the payer's ReceiveWithAuthorization to the collector, nonce bound to the channel. */
export async function erc3009Deposit(
  signer: Signer | null,
  payer: string,
  channelId: string,
  amount: bigint,
  opts: { validAfter?: bigint; validBefore: bigint; salt?: bigint },
) {
  const salt = opts.salt ?? BigInt(ethers.hexlify(ethers.randomBytes(16)));
  const validAfter = opts.validAfter ?? 0n;
  const nonce = ethers.keccak256(ethers.AbiCoder.defaultAbiCoder().encode(["bytes32", "uint256"], [channelId, salt]));
  const message = { from: payer, to: A.erc3009DepositCollector, value: amount, validAfter, validBefore: opts.validBefore, nonce };
  const digest = TypedDataEncoder.hash(USDC_DOMAIN, RECEIVE_TYPES, message);
  const signature = signer ? await signer.signTypedData(USDC_DOMAIN, RECEIVE_TYPES, message) : "0x01";
  const data = ethers.AbiCoder.defaultAbiCoder().encode(
    ["uint256", "uint256", "uint256", "bytes"],
    [validAfter, opts.validBefore, salt, signature],
  );
  return { data, digest };
}
