/** Shapes of the MongoDB documents. `_id` is always an ObjectId; public ids live in their own indexed fields. */
import type { ObjectId } from "mongodb";

export interface OwnerDoc {
  _id?: ObjectId;
  address: string;
  createdAt: Date;
  lastSignInAt: Date;
}

export interface ApiKeyDoc {
  _id?: ObjectId;
  hash: string; // SHA-256 of the key, hex
  prefix: string; // first characters, to tell keys apart in lists and logs
  role: "agent" | "owner";
  agentAddress?: string;
  ownerAddress?: string;
  createdAt: Date;
  expiresAt?: Date;
  revokedAt?: Date;
}

export interface AgentDoc {
  _id?: ObjectId;
  address: string;
  label: string;
  email: string | null;
  /** sha256 of (creator owner, email, label) when email or label is given: the natural key that makes genesis 409. */
  registrationKey: string | null;
  ownerAddress: string | null;
  policyAddress: string; // the factory's prediction (equal to the deployed address once deployed)
  createdAt: Date;
  linkedAt: Date | null;
}

export interface WalletKeyDoc {
  _id?: ObjectId;
  address: string;
  provider: "local";
  ciphertext: string; // base64
  iv: string; // base64
  tag: string; // base64
  createdAt: Date;
}

export interface PolicyDoc {
  _id?: ObjectId;
  agentAddress: string;
  policyAddress: string;
  perTxLimit: string; // base units
  dailyBudget: string;
  approvalThreshold: string;
  allowlist: string[]; // normalised entries
  allowlistRoot: string;
  timestamp: number; // the owner's signed timestamp
  txHash: string;
  deployed: boolean;
  updatedAt: Date;
}

export interface UsedSignatureDoc {
  _id?: ObjectId;
  hash: string;
  kind: string;
  usedAt: Date;
}

export interface SiweNonceDoc {
  _id?: ObjectId;
  nonce: string;
  address: string;
  createdAt: Date;
  expiresAt: Date;
  usedAt: Date | null;
}

/** Content-addressed allowlists: the chain stores only the Merkle root, this maps a root back to its entries. */
export interface AllowlistDoc {
  _id?: ObjectId;
  root: string;
  entries: string[];
  createdAt: Date;
}
