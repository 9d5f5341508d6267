/**
 * The link of an open agent (created without an owner key) to its owner, authenticated by this service: an HMAC of
 * (chain, agent, owner) under a key derived from WALLET_ENCRYPTION_KEY, which is not in the database. It is written
 * when the service links the owner and checked before the first deployment, so a database write alone (setting
 * ownerAddress) cannot make the service deploy an agent, and take the money sent to its address, for someone else.
 * Owner-bound agents (created with an owner key) need no MAC: their address commits to the owner on-chain.
 */
import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";
import type { Config } from "../config";

const keys = new WeakMap<object, Buffer>();

function keyOf(config: Pick<Config, "walletEncryptionKey">): Buffer {
  let key = keys.get(config);
  if (!key) {
    key = Buffer.from(hkdfSync("sha256", config.walletEncryptionKey, "", "spendgate agent link v1", 32));
    keys.set(config, key);
  }
  return key;
}

/** The MAC of `owner` as the owner of `agent` on this chain. */
export function linkMac(config: Pick<Config, "walletEncryptionKey" | "chainId">, agent: string, owner: string): string {
  return createHmac("sha256", keyOf(config)).update(`${config.chainId}|${agent.toLowerCase()}|${owner.toLowerCase()}`).digest("hex");
}

/** Whether `mac` is this service's MAC of that link (constant time). */
export function linkMacValid(
  config: Pick<Config, "walletEncryptionKey" | "chainId">,
  agent: string,
  owner: string,
  mac: string | undefined,
): boolean {
  if (!mac || !/^[0-9a-f]{64}$/.test(mac)) return false;
  return timingSafeEqual(Buffer.from(mac, "hex"), Buffer.from(linkMac(config, agent, owner), "hex"));
}
