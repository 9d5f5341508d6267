/** Agents: wallet genesis, linking to an owner, listing, and who may act for which agent. */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { ZeroAddress, getAddress } from "ethers";
import type { AgentDoc } from "../store/documents";
import { conflict, forbidden, notFound, unauthorized } from "../errors";
import { LINK_AGENT_TYPES, serviceDomain } from "../chain/typedData";
import type { GenesisRequest, LinkRequest } from "../schemas/accounts";
import type { Principal } from "../principal";
import type { ServiceContext } from "./context";
import { linkMac, linkMacValid } from "./linkMac";

export interface GenesisResult {
  agentAddress: string;
  network: string;
  chainId: number;
  apiKey: string;
  label: string;
  createdAt: string;
  message: string;
  ownerAddress: string | null;
  activationUrl: string;
  activationCode: string;
}

export class AgentService {
  constructor(private readonly ctx: ServiceContext) {}

  /**
   * The activation code of an agent: an HMAC of its address under a key derived from the wallet encryption key, so
   * it needs no storage and the agent can ask for its link again. Only who got the link from the agent can link it.
   */
  activationCode(agentAddress: string): string {
    return createHmac("sha256", this.ctx.activationSecret).update(getAddress(agentAddress)).digest("base64url").slice(0, 22);
  }

  /** Whether `code` is the agent's activation code (constant time). */
  isActivationCode(agentAddress: string, code: string): boolean {
    return sameCode(code, this.activationCode(agentAddress));
  }

  activationLink(agentAddress: string): string {
    return `${this.ctx.urls.dashboard}/onboarding?agent=${agentAddress}&code=${this.activationCode(agentAddress)}`;
  }

  /** The activation link again, for the agent itself (its key) or its owner. */
  async activation(principal: Principal | undefined, agentAddress: string) {
    const agent = await this.authorize(principal, agentAddress);
    return {
      agentAddress: agent.address,
      linked: agent.ownerAddress !== null,
      activationUrl: this.activationLink(agent.address),
      activationCode: this.activationCode(agent.address),
    };
  }

  async genesis(principal: Principal | undefined, input: GenesisRequest): Promise<GenesisResult> {
    if (principal?.role === "agent") throw forbidden("An agent key cannot create agents; use an owner key.");
    if (!principal && !this.ctx.config.genesisOpen) {
      throw unauthorized("Registration is closed: use an owner key or the operator's registration token.");
    }
    const ownerAddress = principal?.role === "owner" ? principal.ownerAddress : null;
    const email = input.email?.toLowerCase() ?? null;
    // The natural key: email + label, scoped to the creating owner. A label alone identifies an agent only within
    // one owner's account; anonymous agents without an email never collide with each other.
    const registrationKey =
      email || (ownerAddress && input.label)
        ? createHash("sha256")
            .update(JSON.stringify([ownerAddress, email, input.label ?? null]))
            .digest("hex")
        : null;
    if (registrationKey) {
      const existing = await this.ctx.store.agents.findOne({ registrationKey });
      if (existing) throw this.alreadyRegistered(existing, ownerAddress);
    }

    // The agent's signing key, and its wallet: the factory's CREATE2 clone for that key, known (and fundable) before
    // it is deployed with the first owner-signed policy.
    const signerAddress = await this.ctx.wallets.create();
    // Created with an owner key: the address commits to that owner (CREATE2 salt over signing key and owner), so no
    // operator key or database write can ever deploy it for anyone else. Open agents get the link MAC below instead.
    const address = getAddress(await this.ctx.chain.factory.predictAgent(signerAddress, ownerAddress ?? ZeroAddress));
    const now = new Date();
    const doc: AgentDoc = {
      address,
      // This set of services is the chosen network's (NetworkServices): the agent lives there for good.
      network: this.ctx.config.networkName,
      label: input.label ?? `agent-${address.slice(2, 8).toLowerCase()}`,
      email,
      registrationKey,
      ownerAddress,
      policyAddress: address,
      signerAddress,
      ...(ownerAddress ? { ownerBound: true, linkMac: linkMac(this.ctx.config, address, ownerAddress) } : {}),
      createdAt: now,
      linkedAt: ownerAddress ? now : null,
    };
    if (registrationKey) {
      // Upsert on the natural key: of two identical concurrent requests exactly one creates the agent.
      const before = await this.ctx.store.agents.findOneAndUpdate(
        { registrationKey },
        { $setOnInsert: doc },
        { upsert: true, returnDocument: "before" },
      );
      if (before) {
        await this.ctx.store.walletKeys.deleteOne({ address: signerAddress });
        throw this.alreadyRegistered(before, ownerAddress);
      }
    } else {
      await this.ctx.store.agents.insertOne(doc);
    }
    const apiKey = await this.ctx.keys.issue({ role: "agent", agentAddress: address });
    const link = this.activationLink(address);
    return {
      agentAddress: address,
      network: this.ctx.config.networkName,
      chainId: this.ctx.config.chainId,
      apiKey,
      label: doc.label,
      createdAt: now.toISOString(),
      ownerAddress,
      activationUrl: link,
      activationCode: this.activationCode(address),
      message: ownerAddress
        ? `Agent wallet created and linked to ${ownerAddress}. Set its spend policy at ${link}`
        : `Agent wallet created. Ask your owner to activate it at ${link}`,
    };
  }

  /** 409 for a registration that exists; its address only to the owner who made it (anonymous callers learn nothing). */
  private alreadyRegistered(existing: AgentDoc, ownerAddress: string | null) {
    if (ownerAddress && existing.ownerAddress === ownerAddress) {
      return conflict(`Agent already registered with this email and label: ${existing.address}. Use the API key saved in your config.`, {
        agentAddress: existing.address,
      });
    }
    return conflict("Agent already registered with this email and label. Use the API key saved in your config.");
  }

  async link(principal: Principal | undefined, input: LinkRequest): Promise<{ agentAddress: string; ownerAddress: string }> {
    const agent = await this.ctx.store.agents.findOne({ address: input.agentAddress });
    if (!agent) throw notFound(`Agent ${input.agentAddress} not found.`);
    // Knowing an address is not enough to claim an agent: the request carries the code of the activation link the
    // agent gave its owner, or comes with the agent's own key.
    const byAgent = principal?.role === "agent" && principal.agentAddress === agent.address;
    if (!byAgent && !sameCode(input.activationCode ?? "", this.activationCode(agent.address))) {
      throw forbidden(
        input.activationCode
          ? "The activation code does not belong to this agent: open the activation link the agent gave you."
          : "Linking needs the activation code of the agent's activation link (the `code` in it): open that link.",
      );
    }
    // A link this service did not make (no valid MAC: written to the database by hand, or before MACs existed) does not
    // count while the agent is undeployed: the owner with the activation code links it again, and only that deploys.
    const linked =
      agent.ownerAddress !== null &&
      (agent.ownerBound === true ||
        linkMacValid(this.ctx.config, agent.address, agent.ownerAddress, agent.linkMac) ||
        (await this.ctx.chain.isDeployed(agent.policyAddress)));
    if (linked) throw conflict(`Agent ${agent.address} is already linked to ${agent.ownerAddress}.`);
    await this.ctx.signatures.verifyAndConsume({
      kind: "LinkAgent",
      domain: serviceDomain(this.ctx.config.chainId),
      types: LINK_AGENT_TYPES,
      message: { agent: input.agentAddress, owner: input.ownerAddress, timestamp: input.timestamp },
      signature: input.humanSignature ?? input.ownerSignature ?? "",
      expectedSigner: input.ownerAddress,
      timestamp: input.timestamp,
    });
    const result = await this.ctx.store.agents.updateOne(
      { address: agent.address, ownerAddress: agent.ownerAddress },
      {
        $set: {
          ownerAddress: input.ownerAddress,
          linkMac: linkMac(this.ctx.config, agent.address, input.ownerAddress),
          linkedAt: new Date(),
        },
      },
    );
    if (result.modifiedCount !== 1) throw conflict(`Agent ${agent.address} is already linked.`);
    await this.ctx.store.owners.updateOne(
      { address: input.ownerAddress },
      { $setOnInsert: { address: input.ownerAddress, createdAt: new Date(), lastSignInAt: new Date(0) } },
      { upsert: true },
    );
    return { agentAddress: agent.address, ownerAddress: input.ownerAddress };
  }

  /** The agent, if the principal may act for it: its own agent key, or the owner it is linked to. */
  async authorize(principal: Principal | undefined, agentAddress: string): Promise<AgentDoc> {
    if (!principal) throw unauthorized();
    const agent = await this.ctx.store.agents.findOne({ address: agentAddress });
    const allowed =
      agent &&
      ((principal.role === "agent" && principal.agentAddress === agent.address) ||
        (principal.role === "owner" && principal.ownerAddress === agent.ownerAddress));
    if (!allowed) {
      // The same answer for "not yours" and "does not exist": keys cannot probe for other agents.
      if (principal.role === "agent") throw forbidden(`This key acts for ${principal.agentAddress} only.`);
      throw forbidden(`Agent ${agentAddress} is not linked to this owner.`);
    }
    return agent;
  }

  /** Agents visible to a principal: its own agent, or every agent linked to the owner. */
  async visible(principal: Principal): Promise<AgentDoc[]> {
    if (principal.role === "agent") {
      const agent = await this.ctx.store.agents.findOne({ address: principal.agentAddress });
      return agent ? [agent] : [];
    }
    if (principal.role === "owner") {
      return this.ctx.store.agents.find({ ownerAddress: principal.ownerAddress }).sort({ createdAt: -1 }).toArray();
    }
    return [];
  }
}

function sameCode(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
