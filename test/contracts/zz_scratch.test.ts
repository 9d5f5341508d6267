import { expect } from "chai";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { policyFixture, signSetPaused } from "../helpers/policyFixture";

describe("scratch: a resume signed before a pause", function () {
  it("cannot undo the pause", async function () {
    const { policy, policyAddress, agent, owner, other } = await loadFixture(policyFixture);
    const now = BigInt(await time.latest());
    // The resume the server asked the owner to sign (dated 10 minutes ahead), kept back.
    const resumeTs = now + 600n;
    const resumeSig = await signSetPaused(owner, policyAddress, agent, false, resumeTs);
    // Later the owner pauses, with an honest timestamp.
    await time.increase(60);
    const pauseTs = BigInt(await time.latest()) + 1n;
    await policy.connect(other).setPaused(true, pauseTs, await signSetPaused(owner, policyAddress, agent, true, pauseTs));
    expect(await policy.paused()).to.equal(true);
    await expect(policy.connect(other).setPaused(false, resumeTs, resumeSig)).to.be.reverted;
  });
});
