/**
 * The ERC-7730 clear-signing descriptors (erc7730/: one per network, including the common types and formats): the standard's shape, and the owner-signed types
 * exactly as the contracts hash them, every field formatted (USDC amounts as token amounts, times as dates, addresses as
 * addresses) and required, so a wallet that reads it shows the whole message in plain words.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "chai";
import { z } from "zod";
import { NETWORKS } from "../../src/chain/networks";
import { ERC7730_DIR, networkDescriptors } from "../../scripts/docs-erc7730";
import {
  APPROVAL_DECISION_TYPES,
  DOMAIN_NAME,
  DOMAIN_VERSION,
  SET_OPERATOR_TYPES,
  SET_OWNER_TYPES,
  SET_PAUSED_TYPES,
  SET_POLICY_TYPES,
  WITHDRAW_TYPES,
} from "../../src/chain/typedData";

/** A descriptor with its `includes` merged in (the including file's context and metadata over the included one's). */
function merged(file: string): unknown {
  const read = (f: string) => JSON.parse(readFileSync(join(ERC7730_DIR, f), "utf8")) as Record<string, Record<string, unknown>>;
  const { includes, ...own } = read(file) as { includes: string } & Record<string, Record<string, unknown>>;
  const base = read(includes);
  const eip712 = { ...(base.context.eip712 as object), ...(own.context.eip712 as object) };
  return { ...base, ...own, context: { ...base.context, ...own.context, eip712 }, metadata: { ...base.metadata, ...own.metadata } };
}

// ERC-7730 (specs/erc-7730.md and erc7730-v1.schema.json of the clear-signing registry), the parts an EIP-712 file uses.
const TypedField = z.strictObject({ name: z.string(), type: z.string() });
const Params = z.union([
  z.strictObject({
    tokenPath: z.string(),
    nativeCurrencyAddress: z.string().optional(),
    threshold: z.string().optional(),
    message: z.string().optional(),
  }),
  z.strictObject({ encoding: z.enum(["timestamp", "blockheight"]) }),
  z.strictObject({
    type: z.enum(["wallet", "eoa", "contract", "token", "nft"]).optional(),
    sources: z.array(z.enum(["local", "ens"])).optional(),
  }),
  z.strictObject({ base: z.string(), decimals: z.number().int().optional(), prefix: z.boolean().optional() }),
]);
const FieldFormat = z
  .strictObject({
    label: z.string().min(1),
    format: z.enum(["raw", "addressName", "calldata", "amount", "tokenAmount", "nftName", "date", "duration", "unit", "enum"]),
    params: Params.optional(),
  })
  .refine((f) => (f.format === "tokenAmount") === (f.params !== undefined && "tokenPath" in f.params), "tokenAmount needs tokenPath")
  .refine((f) => f.format !== "date" || (f.params !== undefined && "encoding" in f.params), "date needs an encoding")
  .refine((f) => f.format !== "unit" || (f.params !== undefined && "base" in f.params), "unit needs a base");
const Erc7730 = z.strictObject({
  $schema: z.url(),
  context: z.strictObject({
    $id: z.string().optional(),
    eip712: z.strictObject({
      domain: z.strictObject({ name: z.string(), version: z.string(), chainId: z.number().int() }).optional(),
      deployments: z.array(z.strictObject({ chainId: z.number().int(), address: z.string() })).optional(),
      schemas: z.array(z.strictObject({ primaryType: z.string(), types: z.record(z.string(), z.array(TypedField)) })).min(1),
    }),
  }),
  metadata: z.strictObject({ owner: z.string().min(1), constants: z.record(z.string(), z.string()).optional() }),
  display: z.strictObject({
    formats: z.record(
      z.string(),
      z.strictObject({ intent: z.string().min(1), fields: z.record(z.string(), FieldFormat), required: z.array(z.string()) }),
    ),
  }),
});

const SIGNED = {
  SetPolicy: SET_POLICY_TYPES,
  SetPaused: SET_PAUSED_TYPES,
  SetOperator: SET_OPERATOR_TYPES,
  SetOwner: SET_OWNER_TYPES,
  Withdraw: WITHDRAW_TYPES,
  ApprovalDecision: APPROVAL_DECISION_TYPES,
};
const POLICY_DOMAIN = ["name string", "version string", "chainId uint256", "verifyingContract address"];

/** Every leaf path of `type` ("merchants.[].entry" for an array of structs), with its Solidity type. */
function leaves(types: Record<string, { name: string; type: string }[]>, type: string, prefix = ""): [string, string][] {
  return types[type].flatMap((f) => {
    const inner = f.type.endsWith("[]") ? f.type.slice(0, -2) : f.type;
    const path = `${prefix}${f.name}${f.type.endsWith("[]") ? ".[]" : ""}`;
    return types[inner] ? leaves(types, inner, `${path}.`) : [[path, f.type] as [string, string]];
  });
}

describe("ERC-7730 descriptors of the owner-signed types, one per network", function () {
  it("are what npm run docs:config writes from the network table: each binds its chain and reads amounts in its USDC", function () {
    for (const { file, text } of networkDescriptors()) {
      expect(readFileSync(join(ERC7730_DIR, file), "utf8"), `${file}: run npm run docs:config`).to.equal(text);
    }
  });

  for (const n of Object.values(NETWORKS)) {
    describe(n.name, function () {
      const doc = Erc7730.parse(merged(`eip712-spendgate-policy-${n.name}.json`));
      it("has the standard's shape and binds the policy domain on its chain", function () {
        expect(doc.context.eip712.domain).to.deep.equal({ name: DOMAIN_NAME, version: DOMAIN_VERSION, chainId: n.chainId });
        expect(doc.metadata.constants?.usdc).to.equal(n.usdc.address);
      });
      checks(doc);
    });
  }
});

function checks(doc: z.infer<typeof Erc7730>): void {
  it("describes exactly the six owner-signed types, as the contracts hash them", function () {
    expect(doc.context.eip712.schemas.map((s) => s.primaryType).sort()).to.deep.equal(Object.keys(SIGNED).sort());
    for (const schema of doc.context.eip712.schemas) {
      const ours = SIGNED[schema.primaryType as keyof typeof SIGNED];
      const { EIP712Domain, ...types } = schema.types;
      expect(EIP712Domain.map((f) => `${f.name} ${f.type}`)).to.deep.equal(POLICY_DOMAIN);
      expect(types, schema.primaryType).to.deep.equal(ours);
    }
  });

  it("formats and requires every field: USDC amounts as token amounts, times as dates, addresses as addresses", function () {
    for (const schema of doc.context.eip712.schemas) {
      const format = doc.display.formats[schema.primaryType];
      const paths = leaves(schema.types, schema.primaryType);
      expect(Object.keys(format.fields).sort(), schema.primaryType).to.deep.equal(paths.map(([p]) => p).sort());
      expect([...format.required].sort(), schema.primaryType).to.deep.equal(paths.map(([p]) => p).sort());
      for (const [path, type] of paths) {
        const f = format.fields[path];
        const name = path.split(".").at(-1)!;
        if (type === "address") expect(f.format, path).to.equal("addressName");
        if (name === "timestamp" || name === "validUntil")
          expect([f.format, f.params], path).to.deep.equal(["date", { encoding: "timestamp" }]);
        if (/Limit$|Budget$|Threshold$|dailyCap|minSwapRate/.test(name) || (name === "amount" && schema.primaryType === "ApprovalDecision"))
          expect([f.format, f.params], path).to.deep.equal(["tokenAmount", { tokenPath: "$.metadata.constants.usdc" }]);
      }
    }
    // A withdrawal names its token: the amount is read in that token (0x0: ETH).
    expect(doc.display.formats.Withdraw.fields.amount.params).to.deep.include({ tokenPath: "token" });
  });
}
