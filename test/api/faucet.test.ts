import { expect } from "chai";
import { Contract, parseEther } from "ethers";
import { WETH_ADDRESS } from "../../src/chain/addresses";
import { randomOwner, startStack, type Stack } from "../helpers/stack";
import { expectErrorShape } from "../helpers/store";

describe("POST /dev/faucet: USDC, ETH and WETH in embedded mode", () => {
  let s: Stack;
  let weth: Contract;
  before(async () => {
    s = await startStack();
    weth = new Contract(WETH_ADDRESS, ["function balanceOf(address) view returns (uint256)"], s.svc.chain.provider);
  });
  after(async () => s?.close());

  const holdings = async (address: string) => ({
    usdc: await s.svc.chain.usdc.balanceOf(address),
    eth: await s.svc.chain.provider.getBalance(address),
    weth: (await weth.balanceOf(address)) as bigint,
  });

  it("mints USDC when no token is named (the former request still works)", async () => {
    const { agentAddress, apiKey } = await s.genesis();
    const res = await s.api("POST", "/dev/faucet", { body: { agentAddress, amount: "25.5" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ agentAddress, amount: "25.5", currency: "USDC" });
    expect(res.body.txHash).to.match(/^0x[0-9a-f]{64}$/);
    expect(await holdings(agentAddress)).to.deep.equal({ usdc: 25_500_000n, eth: 0n, weth: 0n });
    const balance = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: apiKey });
    expect(balance.body).to.include({ usdc: "25.5", eth: "0.0", weth: "0.0" });
  });

  it("sends ETH to a deployed agent wallet, to the wei, in a transaction from the operator", async () => {
    const { agentAddress } = await s.onboard(randomOwner());
    const res = await s.api("POST", "/dev/faucet", { body: { agentAddress, token: "ETH", amount: "0.5" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body).to.include({ agentAddress, amount: "0.5", currency: "ETH" });
    const tx = await s.svc.chain.provider.getTransaction(res.body.txHash);
    expect(tx?.from).to.equal(s.svc.chain.operator.address);
    expect(tx?.value).to.equal(parseEther("0.5"));
    expect((await holdings(agentAddress)).eth).to.equal(parseEther("0.5"));
  });

  it("gives WETH (wrapped by the operator) with all 18 decimals, shown by GET /wallet/balance", async () => {
    const { agentAddress, apiKey } = await s.genesis();
    const res = await s.api("POST", "/dev/faucet", { body: { agentAddress, token: "WETH", amount: "1.000000000000000001" } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    expect(res.body.currency).to.equal("WETH");
    expect(await holdings(agentAddress)).to.deep.equal({ usdc: 0n, eth: 0n, weth: 10n ** 18n + 1n });
    const balance = await s.api("GET", `/wallet/balance?address=${agentAddress}`, { key: apiKey });
    expect(balance.body).to.include({ weth: "1.000000000000000001", eth: "0.0" });
  });

  it("answers concurrent ETH and WETH requests each in full", async () => {
    const { agentAddress } = await s.genesis();
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        s.api("POST", "/dev/faucet", { body: { agentAddress, token: i % 2 ? "WETH" : "ETH", amount: "2" } }),
      ),
    );
    for (const r of results) expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const h = await holdings(agentAddress);
    expect(h.eth).to.equal(parseEther("6"));
    expect(h.weth).to.equal(parseEther("6"));
  });

  it("refuses bad input with 400 in the error shape and gives nothing", async () => {
    const { agentAddress } = await s.genesis();
    const bad: [unknown, RegExp][] = [
      [{ agentAddress, token: "DAI", amount: "1" }, /token/],
      [{ agentAddress, token: "usdc", amount: "1" }, /token/],
      [{ agentAddress, token: "USDC", amount: "1.0000001" }, /more than 6 decimals/],
      [{ agentAddress, token: "ETH", amount: "0.0000000000000000001" }, /decimal/],
      [{ agentAddress, token: "ETH", amount: "1000.000000000000000001" }, /more than the faucet gives/],
      [{ agentAddress, token: "WETH", amount: "0" }, /greater than 0/],
      [{ agentAddress, token: "USDC", amount: "1000001" }, /more than the faucet gives/],
      [{ agentAddress, token: "ETH", amount: "-1" }, /decimal/],
      [{ agentAddress, token: "ETH", amount: "1e3" }, /decimal/],
      [{ agentAddress, token: "ETH", amount: 1 }, /amount/],
      [{ agentAddress, token: null, amount: "1" }, /token/],
      [{ agentAddress, token: "ETH", amount: "1", extra: true }, /extra|unrecognized/i],
      [{ agentAddress: "0x1234", token: "ETH", amount: "1" }, /agentAddress/],
      [{ token: "ETH", amount: "1" }, /agentAddress/],
    ];
    for (const [body, message] of bad) {
      const res = await s.api("POST", "/dev/faucet", { body });
      expectErrorShape(res, 400, "bad_request");
      expect(res.body.message, JSON.stringify(body)).to.match(message);
    }
    const broken = await s.api("POST", "/dev/faucet", { body: "{not json", headers: { "Content-Type": "application/json" } });
    expectErrorShape(broken, 400);
    expect(await holdings(agentAddress)).to.deep.equal({ usdc: 0n, eth: 0n, weth: 0n });
  });
});
