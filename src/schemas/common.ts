/** Building blocks shared by every request schema (REST, MCP and the generated API reference). */
import { z } from "zod";
import { isHexString } from "ethers";
import { getAddress, isAddress } from "../chain/rpc/checksum";
import { DECIMAL_AMOUNT, MAX_AMOUNT, toBaseUnits } from "../amounts";

export const Address = z
  .string()
  .trim()
  // getAddress and isAddress of chain/rpc/checksum: each address checksummed once (keccak in JS, on every request).
  .refine(
    (v) => /^0x[0-9a-fA-F]{40}$/.test(v) && isAddress(v),
    "must be a 0x-prefixed 20-byte address (checksum, if mixed case, must be valid)",
  )
  .transform((v) => getAddress(v))
  .meta({ description: "Ethereum address, 0x-prefixed", example: "0x1111111111111111111111111111111111111111" });

/** Base units of a well-formed amount, else null. Zod 4 runs refinements even after the regex failed, and
 * toBaseUnits throws on "1e5" or "": the refinements below must never throw (a throw would be a 500). */
const unitsOf = (v: string): bigint | null => (DECIMAL_AMOUNT.test(v) ? toBaseUnits(v) : null);

/** A USDC amount as a decimal string: digits, at most 6 decimals, no sign, no exponent. */
export const Amount = z
  .string()
  .trim()
  .regex(DECIMAL_AMOUNT, 'must be a decimal string with at most 6 decimals, like "1.25"')
  .refine((v) => (unitsOf(v) ?? 0n) <= MAX_AMOUNT, "is too large")
  .meta({ description: "USDC amount as a decimal string (6 decimals at most)", example: "1.50" });

export const PositiveAmount = Amount.refine((v) => (unitsOf(v) ?? 1n) > 0n, "must be greater than 0");

/** A payment's amount: a policy authorises at most 64 bits of base units, so a larger one is no payment at all. */
export const PaymentAmount = PositiveAmount.refine(
  (v) => (unitsOf(v) ?? 0n) <= (1n << 64n) - 1n,
  "is larger than a payment can be (64 bits of base units)",
);

/** A spend-policy amount: the contract stores each in 64 bits of base units (about 18.4 trillion USDC). */
export const PolicyAmount = Amount.refine(
  (v) => (unitsOf(v) ?? 0n) <= (1n << 64n) - 1n,
  "is larger than a policy can hold (64 bits of base units)",
);

export const Signature = z
  .string()
  .trim()
  .refine((v) => isHexString(v) && v.length >= 132 && v.length <= 8_192, "must be a 0x-prefixed hex signature")
  .meta({ description: "EIP-712 or EIP-191 signature, 0x-prefixed hex" });

export const UnixTimestamp = z
  .number()
  .int("must be an integer number of seconds")
  .min(0)
  .max(2 ** 40)
  .meta({ description: "Unix time in seconds, the one in the signed message" });

export const ErrorBody = z
  .object({
    error: z.string().meta({ description: "machine-readable code, e.g. bad_request" }),
    message: z.string(),
    status: z.number().int(),
    details: z.unknown().optional(),
    retryable: z.literal(true).optional().meta({
      description:
        "present on transient answers (another payment in flight, a seller unreachable before paying, a dependency down, a rate limit): nothing was done or kept under the Idempotency-Key; retry, with the same key, after `Retry-After` seconds",
    }),
  })
  .meta({ id: "Error" });
export type ErrorBody = z.infer<typeof ErrorBody>;
