import { expect } from "chai";
import { stackPerFile, randomOwner } from "../helpers/stack";

describe("service smoke", () => {
  const { s } = stackPerFile();

  it("onboards an agent: genesis, link, policy deployed at the predicted address", async () => {
    const owner = randomOwner();
    const { agentAddress, apiKey, policyContract } = await s.onboard(owner);
    const limits = await s.api("GET", `/limits?address=${agentAddress}`, { key: apiKey });
    expect(limits.status).to.equal(200);
    expect(limits.body.agents[0]).to.include({ address: agentAddress, perTxLimit: "5", dailyBudget: "20", policyContract, deployed: true });
    expect(limits.body.agents[0].allowlist).to.deep.equal(["127.0.0.1", "localhost"]);
  });
});
