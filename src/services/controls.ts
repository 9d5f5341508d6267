/** The kill switch: pause or resume an agent's payments on-chain with the owner's SetPaused signature. */
import { revertToAppError } from "../chain/errors";
import { SET_PAUSED_TYPES, policyDomain } from "../chain/typedData";
import { conflict } from "../errors";
import type { AgentDoc } from "../store/documents";
import type { ServiceContext } from "./context";

export class ControlService {
  constructor(private readonly ctx: ServiceContext) {}

  async setPaused(agent: AgentDoc, input: { paused: boolean; humanSignature: string; timestamp: number }) {
    if (!agent.ownerAddress) throw conflict(`Agent ${agent.address} has no owner yet.`);
    const { chain } = this.ctx;
    if (!(await chain.isDeployed(agent.policyAddress))) {
      throw conflict(`Agent ${agent.address} has no policy contract yet: set a policy first.`);
    }
    const digest = await this.ctx.signatures.verify({
      kind: "SetPaused",
      domain: policyDomain(this.ctx.config.chainId, agent.policyAddress),
      types: SET_PAUSED_TYPES,
      message: { agent: agent.address, paused: input.paused, timestamp: input.timestamp },
      signature: input.humanSignature,
      expectedSigner: agent.ownerAddress,
      timestamp: input.timestamp,
    });
    await this.ctx.signatures.consume("SetPaused", digest);
    const policy = chain.policyAt(agent.policyAddress);
    // Not behind the agent's payment lock: the kill switch must not wait for a payment in progress.
    const { receipt } = await chain
      .sendAndWait((o) => policy.setPaused(input.paused, input.timestamp, input.humanSignature, o))
      .catch((err) => revertToAppError(policy, err));
    this.ctx.logger.info({ agent: agent.address, paused: input.paused, txHash: receipt.hash }, "pause set");
    return { agentAddress: agent.address, paused: input.paused, policyContract: agent.policyAddress, txHash: receipt.hash };
  }
}
