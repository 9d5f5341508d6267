/** The embedded sandbox's own explorer views (its chain is on no public explorer). */
import { z } from "zod";

export const ExplorerEvent = z.object({
  address: z.string().meta({ description: "the contract that emitted it" }),
  contract: z.string().nullable().meta({ description: "which of SpendGate's contracts (or USDC, WETH) it decoded as; null if none" }),
  name: z.string().nullable().meta({ description: "the event's name, e.g. PaymentAuthorized; null when not decoded" }),
  args: z.record(z.string(), z.unknown()).meta({ description: "named arguments (integers as decimal strings)" }),
});

export const ExplorerTx = z
  .object({
    network: z.string().meta({ description: "the sandbox chain it is on (the network it stands in for)" }),
    hash: z.string(),
    status: z.enum(["success", "reverted"]),
    blockNumber: z.number().int(),
    timestamp: z.string().nullable().meta({ description: "the block's time (ISO 8601)" }),
    from: z.string(),
    to: z.string().nullable(),
    gasUsed: z.string(),
    events: z.array(ExplorerEvent),
    note: z.string(),
  })
  .meta({ id: "ExplorerTx" });

export const ExplorerAddress = z
  .object({
    network: z.string().meta({ description: "the sandbox chain read (`?network=`; default an agent's network, else the first)" }),
    address: z.string(),
    contract: z.boolean().meta({ description: "whether code is deployed at the address" }),
    eth: z.string(),
    usdc: z.string(),
    note: z.string(),
  })
  .meta({ id: "ExplorerAddress" });
export type ExplorerTx = z.infer<typeof ExplorerTx>;
export type ExplorerAddress = z.infer<typeof ExplorerAddress>;
