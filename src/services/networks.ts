/**
 * The services of every network the service runs, one set each (their own chain, facilitator and view of the
 * configuration) over the one store, and which set serves a request: the agent's network, chosen at genesis. The
 * edges (REST routes, MCP tools) pick the set here; nothing below them takes a network as an argument.
 */
import { badRequest, conflict } from "../errors";
import type { Principal } from "../principal";
import type { AgentDoc } from "../store/documents";
import type { Services } from "./index";

export class NetworkServices {
  /** The first network's: an agent's default, and what a request naming no agent uses. */
  readonly first: Services;
  private readonly byName: ReadonlyMap<string, Services>;

  constructor(readonly all: readonly [Services, ...Services[]]) {
    this.first = all[0];
    this.byName = new Map(all.map((s) => [s.ctx.config.networkName, s]));
  }

  /** The names of the networks run, the first one first. */
  get names(): string[] {
    return this.all.map((s) => s.ctx.config.networkName);
  }

  /** The services of network `name`, if this service runs it. */
  get(name: string): Services | undefined {
    return this.byName.get(name);
  }

  /** The network an agent lives on: its own, or the first network's for an agent from before networks were recorded. */
  networkOf(agent: Pick<AgentDoc, "network">): string {
    return agent.network ?? this.first.ctx.config.networkName;
  }

  /** The services of the agent's network; 409 when this service does not run that network (any more). */
  of(agent: Pick<AgentDoc, "address" | "network">): Services {
    const network = this.networkOf(agent);
    const s = this.byName.get(network);
    if (!s) {
      throw conflict(
        `Agent ${agent.address} lives on ${network}, which this service does not run (it runs ${this.names.join(", ")}): nothing was done.`,
      );
    }
    return s;
  }

  /** The services of the network with chain id `chainId`, if this service runs it. */
  byChainId(chainId: number): Services | undefined {
    return this.all.find((s) => s.ctx.config.chainId === chainId);
  }

  /** The services of network `name` (the first network when unnamed); 400 for a network this service does not run. */
  named(name: string | undefined): Services {
    const s = name === undefined ? this.first : this.byName.get(name);
    if (!s) throw badRequest(`This service runs no network ${name}: it runs ${this.names.join(", ")}.`);
    return s;
  }

  /** The services of the network of the agent at `address`; the first network's when there is no such agent (they answer 404). */
  async forAddress(address: string): Promise<Services> {
    const agent = await this.first.ctx.store.agents.findOne({ address }, { projection: { address: 1, network: 1 } });
    return agent ? this.of(agent) : this.first;
  }

  /** The services of the network of an approval's agent; the first network's when there is no such approval (404). */
  async forApproval(approvalId: string): Promise<Services> {
    const a = await this.first.ctx.store.approvals.findOne({ approvalId }, { projection: { agentAddress: 1 } });
    return a ? this.forAddress(a.agentAddress) : this.first;
  }

  /** Where an agent lives: its network and that network's chain id. */
  whereOf(agent: Pick<AgentDoc, "address" | "network">) {
    const s = this.of(agent);
    return { network: s.ctx.config.networkName, chainId: s.ctx.config.chainId };
  }

  /** The agent, if the principal may act for it (AgentService.authorize), with the services of its network. */
  async authorize(principal: Principal | undefined, agentAddress: string): Promise<{ agent: AgentDoc; s: Services }> {
    const agent = await this.first.agents.authorize(principal, agentAddress);
    return { agent, s: this.of(agent) };
  }

  /** Every network's payments recovered (its own chain for each); how many were finished. */
  async recover(): Promise<number> {
    let n = 0;
    for (const s of this.all) n += await s.payments.recover();
    return n;
  }
}
