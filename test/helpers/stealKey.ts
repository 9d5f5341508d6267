/** What a thief does with a running service's database and its WALLET_ENCRYPTION_KEY: decrypt an agent's signing key. */
import { createDecipheriv } from "node:crypto";
import { Wallet } from "ethers";
import type { Stack } from "./stack";

export async function stealAgentKey(s: Stack, encryptionKey: string, agentAddress: string): Promise<Wallet> {
  const agent = await s.svc.store.agents.findOne({ address: agentAddress });
  const doc = await s.svc.store.walletKeys.findOne({ address: agent!.signerAddress });
  const decipher = createDecipheriv("aes-256-gcm", Buffer.from(encryptionKey, "hex"), Buffer.from(doc!.iv, "base64"));
  decipher.setAAD(Buffer.from(doc!.address.toLowerCase()));
  decipher.setAuthTag(Buffer.from(doc!.tag, "base64"));
  const key = Buffer.concat([decipher.update(Buffer.from(doc!.ciphertext, "base64")), decipher.final()]);
  return new Wallet("0x" + key.toString("hex"), s.svc.chain.provider);
}
