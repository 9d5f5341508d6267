/**
 * Buyers for the scheme interop tests: the stock @x402/core x402Client (through @x402/fetch) with a stock @x402/evm
 * client scheme, paying as an EOA or as a minimal ERC-1271 contract wallet (Test1271Wallet) that approves exactly the
 * digests its owner tells it to, as SpendGate's policy wallet answers for what its policy authorised.
 */
import hre from "hardhat";
import { Wallet } from "ethers";
import { x402Client } from "@x402/core/client";
import type { SchemeNetworkClient } from "@x402/core/types";
import type { ClientEvmSigner } from "@x402/evm";
import { wrapFetchWithPayment } from "@x402/fetch";
import { hashTypedData } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Test1271Wallet } from "../../typechain-types";
import { NETWORK } from "./schemeSellers";

export interface Buyer {
  address: `0x${string}`;
  signer: ClientEvmSigner;
  /** Sends a call as the payer (an EOA transaction, or the wallet's `execute` by its owner). */
  call(to: string, data: string): Promise<void>;
  /** Digests the payer signed (for the contract wallet: the ones it approved). */
  signed: string[];
}

export async function eoaBuyer(): Promise<Buyer> {
  const key = Wallet.createRandom();
  const [funder] = await hre.ethers.getSigners();
  await (await funder.sendTransaction({ to: key.address, value: hre.ethers.parseEther("1") })).wait();
  const account = privateKeyToAccount(key.privateKey as `0x${string}`);
  const signed: string[] = [];
  const wallet = key.connect(hre.ethers.provider);
  return {
    address: account.address,
    signed,
    signer: {
      address: account.address,
      signTypedData: async (td) => {
        signed.push(hashTypedData(td as Parameters<typeof hashTypedData>[0]));
        return account.signTypedData(td);
      },
    },
    call: async (to, data) => {
      await (await wallet.sendTransaction({ to, data })).wait();
    },
  };
}

/** A contract payer: its ERC-1271 answer is the magic value exactly for the digests it approved when asked to sign. */
export async function contractBuyer(): Promise<Buyer & { wallet: Test1271Wallet }> {
  const [owner] = await hre.ethers.getSigners();
  const wallet = (await (await hre.ethers.getContractFactory("Test1271Wallet")).deploy(owner.address)) as unknown as Test1271Wallet;
  await wallet.waitForDeployment();
  const address = (await wallet.getAddress()) as `0x${string}`;
  const bytesKey = Wallet.createRandom(); // the bytes returned; the wallet ignores them and answers by digest
  const signed: string[] = [];
  return {
    address,
    wallet,
    signed,
    signer: {
      address,
      signTypedData: async (td) => {
        const digest = hashTypedData(td as Parameters<typeof hashTypedData>[0]);
        signed.push(digest);
        await (await wallet.setApproved(digest, true)).wait();
        return bytesKey.signingKey.sign(digest).serialized as `0x${string}`;
      },
    },
    call: async (to, data) => {
      await (await wallet.execute(to, data)).wait();
    },
  };
}

/** A paying fetch over the stock x402Client with one client scheme registered. */
export function payingFetch(scheme: SchemeNetworkClient) {
  const client = new x402Client();
  client.register(NETWORK, scheme);
  return wrapFetchWithPayment(fetch, client);
}
