/**
 * TestUSDC and Multicall3 on their own, placed with hardhat_setCode exactly as the embedded chain places them.
 */
import { expect } from "chai";
import hre from "hardhat";
import { loadFixture, time } from "@nomicfoundation/hardhat-network-helpers";
import { Signature, TypedDataEncoder, Wallet } from "ethers";
import { PERMIT_TYPES, RECEIVE_TYPES } from "../helpers/x402SchemeContracts";

const { ethers } = hre;
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
const MULTICALL3 = "0xcA11bde05977b3631167028862bE2a173976CA11";
const DOMAIN = { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: BASE_USDC };
/** EIP-3009's two authorisations share their fields. */
const TRANSFER_TYPES = { TransferWithAuthorization: RECEIVE_TYPES.ReceiveWithAuthorization };
const CANCEL_TYPES = {
  CancelAuthorization: [
    { name: "authorizer", type: "address" },
    { name: "nonce", type: "bytes32" },
  ],
};

interface Auth {
  from: string;
  to: string;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: string;
}

async function fixture() {
  const [relayer, bob] = await ethers.getSigners();
  for (const [name, address] of [
    ["TestUSDC", BASE_USDC],
    ["Multicall3", MULTICALL3],
  ]) {
    const { deployedBytecode } = await hre.artifacts.readArtifact(name);
    await ethers.provider.send("hardhat_setCode", [address, deployedBytecode]);
  }
  const usdc = await ethers.getContractAt("TestUSDC", BASE_USDC);
  const multicall = await ethers.getContractAt("Multicall3", MULTICALL3);
  const alice = Wallet.createRandom(); // signs only; the relayer pays gas
  await usdc.mint(alice.address, 1_000_000n);
  return { usdc, multicall, relayer, bob, alice };
}

async function authorization(from: string, to: string, value: bigint, overrides: Partial<Auth> = {}): Promise<Auth> {
  const now = BigInt(await time.latest());
  return { from, to, value, validAfter: 0n, validBefore: now + 3600n, nonce: ethers.hexlify(ethers.randomBytes(32)), ...overrides };
}

const args = (a: Auth) => [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce] as const;

describe("TestUSDC at the Base USDC address", function () {
  it("reports USD Coin / USDC / version 2 / 6 decimals and a run-time EIP-712 domain of this chain and address", async function () {
    const { usdc } = await loadFixture(fixture);
    expect(await usdc.name()).to.equal("USD Coin");
    expect(await usdc.symbol()).to.equal("USDC");
    expect(await usdc.version()).to.equal("2");
    expect(await usdc.decimals()).to.equal(6n);
    expect(await usdc.DOMAIN_SEPARATOR()).to.equal(TypedDataEncoder.hashDomain(DOMAIN));

    // The same code elsewhere has that address in its domain: nothing is fixed at construction.
    const other = await ethers.deployContract("TestUSDC");
    expect(await other.DOMAIN_SEPARATOR()).to.equal(
      TypedDataEncoder.hashDomain({ ...DOMAIN, verifyingContract: await other.getAddress() }),
    );
  });

  it("lets anyone mint and behaves as an ERC-20", async function () {
    const { usdc, relayer, bob } = await loadFixture(fixture);
    // setCode keeps the address's storage: an embedded chain started earlier in this process (its Uniswap pool's
    // liquidity) may have left a supply there.
    const supply = await usdc.totalSupply();
    await expect(usdc.connect(bob).mint(bob.address, 500n)).to.emit(usdc, "Transfer").withArgs(ethers.ZeroAddress, bob.address, 500n);
    expect(await usdc.totalSupply()).to.equal(supply + 500n);
    await expect(usdc.connect(bob).transfer(relayer.address, 200n)).to.emit(usdc, "Transfer").withArgs(bob.address, relayer.address, 200n);
    await expect(usdc.connect(bob).transfer(relayer.address, 301n)).to.be.revertedWith("ERC20: transfer amount exceeds balance");
    await expect(usdc.connect(bob).approve(relayer.address, 100n)).to.emit(usdc, "Approval").withArgs(bob.address, relayer.address, 100n);
    await expect(usdc.connect(relayer).transferFrom(bob.address, relayer.address, 101n)).to.be.revertedWith(
      "ERC20: transfer amount exceeds allowance",
    );
    await usdc.connect(relayer).transferFrom(bob.address, relayer.address, 100n);
    expect(await usdc.allowance(bob.address, relayer.address)).to.equal(0n);
    expect(await usdc.balanceOf(bob.address)).to.equal(200n);
    expect(await usdc.balanceOf(relayer.address)).to.equal(300n);
  });

  it("executes transferWithAuthorization with (v, r, s) and emits AuthorizationUsed and Transfer", async function () {
    const { usdc, relayer, bob, alice } = await loadFixture(fixture);
    const auth = await authorization(alice.address, bob.address, 250_000n);
    const sig = Signature.from(await alice.signTypedData(DOMAIN, TRANSFER_TYPES, auth));
    await expect(
      usdc
        .connect(relayer)
        ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)"](
          ...args(auth),
          sig.v,
          sig.r,
          sig.s,
        ),
    )
      .to.emit(usdc, "AuthorizationUsed")
      .withArgs(alice.address, auth.nonce)
      .and.to.emit(usdc, "Transfer")
      .withArgs(alice.address, bob.address, 250_000n);
    expect(await usdc.authorizationState(alice.address, auth.nonce)).to.equal(true);
    expect(await usdc.balanceOf(bob.address)).to.equal(250_000n);
  });

  it("executes transferWithAuthorization with a bytes signature and refuses its replay", async function () {
    const { usdc, relayer, bob, alice } = await loadFixture(fixture);
    const auth = await authorization(alice.address, bob.address, 1n);
    const sig = await alice.signTypedData(DOMAIN, TRANSFER_TYPES, auth);
    const send = () =>
      usdc.connect(relayer)["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](...args(auth), sig);
    await expect(send()).to.emit(usdc, "AuthorizationUsed").withArgs(alice.address, auth.nonce);
    await expect(send()).to.be.revertedWith("FiatTokenV2: authorization is used or canceled");
  });

  it("refuses authorisations that are not yet valid, expired, over the balance or signed by someone else", async function () {
    const { usdc, relayer, bob, alice } = await loadFixture(fixture);
    const now = BigInt(await time.latest());
    const send = async (auth: Auth, signer: { signTypedData: Wallet["signTypedData"] } = alice) =>
      usdc
        .connect(relayer)
        ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
          ...args(auth),
          await signer.signTypedData(DOMAIN, TRANSFER_TYPES, auth),
        );
    await expect(send(await authorization(alice.address, bob.address, 1n, { validAfter: now + 600n }))).to.be.revertedWith(
      "FiatTokenV2: authorization is not yet valid",
    );
    await expect(send(await authorization(alice.address, bob.address, 1n, { validBefore: now }))).to.be.revertedWith(
      "FiatTokenV2: authorization is expired",
    );
    await expect(send(await authorization(alice.address, bob.address, 1_000_001n))).to.be.revertedWith(
      "ERC20: transfer amount exceeds balance",
    );
    await expect(send(await authorization(alice.address, bob.address, 1n), Wallet.createRandom())).to.be.revertedWith(
      "FiatTokenV2: invalid signature",
    );
    // A signature for another chain's domain is not valid here.
    const auth = await authorization(alice.address, bob.address, 1n);
    const foreign = await alice.signTypedData({ ...DOMAIN, chainId: 84532 }, TRANSFER_TYPES, auth);
    await expect(
      usdc.connect(relayer)["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](...args(auth), foreign),
    ).to.be.revertedWith("FiatTokenV2: invalid signature");
  });

  it("executes receiveWithAuthorization only when the payee calls it, in both forms", async function () {
    const { usdc, relayer, bob, alice } = await loadFixture(fixture);
    const a1 = await authorization(alice.address, bob.address, 10n);
    const s1 = Signature.from(await alice.signTypedData(DOMAIN, RECEIVE_TYPES, a1));
    const vrs = "receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)";
    await expect(usdc.connect(relayer)[vrs](...args(a1), s1.v, s1.r, s1.s)).to.be.revertedWith("FiatTokenV2: caller must be the payee");
    await expect(usdc.connect(bob)[vrs](...args(a1), s1.v, s1.r, s1.s))
      .to.emit(usdc, "AuthorizationUsed")
      .withArgs(alice.address, a1.nonce);

    const a2 = await authorization(alice.address, bob.address, 20n);
    const s2 = await alice.signTypedData(DOMAIN, RECEIVE_TYPES, a2);
    await usdc.connect(bob)["receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](...args(a2), s2);
    expect(await usdc.balanceOf(bob.address)).to.equal(30n);
    // A TransferWithAuthorization signature is not a ReceiveWithAuthorization one.
    const a3 = await authorization(alice.address, bob.address, 1n);
    const s3 = await alice.signTypedData(DOMAIN, TRANSFER_TYPES, a3);
    await expect(
      usdc.connect(bob)["receiveWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](...args(a3), s3),
    ).to.be.revertedWith("FiatTokenV2: invalid signature");
  });

  it("cancels an unused authorisation in both forms, after which it can be neither used nor cancelled", async function () {
    const { usdc, relayer, bob, alice } = await loadFixture(fixture);
    const auth = await authorization(alice.address, bob.address, 5n);
    const cancel = { authorizer: alice.address, nonce: auth.nonce };
    const c = Signature.from(await alice.signTypedData(DOMAIN, CANCEL_TYPES, cancel));
    await expect(
      usdc.connect(relayer)["cancelAuthorization(address,bytes32,uint8,bytes32,bytes32)"](alice.address, auth.nonce, c.v, c.r, c.s),
    )
      .to.emit(usdc, "AuthorizationCanceled")
      .withArgs(alice.address, auth.nonce);
    expect(await usdc.authorizationState(alice.address, auth.nonce)).to.equal(true);
    await expect(
      usdc
        .connect(relayer)
        ["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](
          ...args(auth),
          await alice.signTypedData(DOMAIN, TRANSFER_TYPES, auth),
        ),
    ).to.be.revertedWith("FiatTokenV2: authorization is used or canceled");
    await expect(
      usdc.connect(relayer)["cancelAuthorization(address,bytes32,bytes)"](alice.address, auth.nonce, c.serialized),
    ).to.be.revertedWith("FiatTokenV2: authorization is used or canceled");

    const other = { authorizer: alice.address, nonce: ethers.hexlify(ethers.randomBytes(32)) };
    await expect(
      usdc
        .connect(relayer)
        ["cancelAuthorization(address,bytes32,bytes)"](
          alice.address,
          other.nonce,
          await Wallet.createRandom().signTypedData(DOMAIN, CANCEL_TYPES, other),
        ),
    ).to.be.revertedWith("FiatTokenV2: invalid signature");
    await usdc
      .connect(relayer)
      ["cancelAuthorization(address,bytes32,bytes)"](alice.address, other.nonce, await alice.signTypedData(DOMAIN, CANCEL_TYPES, other));
    expect(await usdc.authorizationState(alice.address, other.nonce)).to.equal(true);
  });

  it("accepts ERC-1271 signatures from a contract wallet", async function () {
    const { usdc, relayer, bob } = await loadFixture(fixture);
    const key = Wallet.createRandom();
    const wallet = await ethers.deployContract("ERC1271Wallet", [key.address]);
    const from = await wallet.getAddress();
    await usdc.mint(from, 100n);
    const auth = await authorization(from, bob.address, 40n);
    const digest = TypedDataEncoder.hash(DOMAIN, TRANSFER_TYPES, auth);
    const send = (sig: string) =>
      usdc.connect(relayer)["transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)"](...args(auth), sig);
    await expect(send(Wallet.createRandom().signingKey.sign(digest).serialized)).to.be.revertedWith("FiatTokenV2: invalid signature");
    await expect(send(key.signingKey.sign(digest).serialized))
      .to.emit(usdc, "AuthorizationUsed")
      .withArgs(from, auth.nonce);
    expect(await usdc.balanceOf(bob.address)).to.equal(40n);
  });

  it("accepts EIP-2612 permits", async function () {
    const { usdc, relayer, alice } = await loadFixture(fixture);
    const deadline = BigInt(await time.latest()) + 3600n;
    const permit = { owner: alice.address, spender: relayer.address, value: 77n, nonce: 0n, deadline };
    const sig = Signature.from(await alice.signTypedData(DOMAIN, PERMIT_TYPES, permit));
    await usdc["permit(address,address,uint256,uint256,uint8,bytes32,bytes32)"](
      alice.address,
      relayer.address,
      77n,
      deadline,
      sig.v,
      sig.r,
      sig.s,
    );
    expect(await usdc.allowance(alice.address, relayer.address)).to.equal(77n);
    expect(await usdc.nonces(alice.address)).to.equal(1n);
    await expect(
      usdc["permit(address,address,uint256,uint256,uint8,bytes32,bytes32)"](
        alice.address,
        relayer.address,
        77n,
        deadline,
        sig.v,
        sig.r,
        sig.s,
      ),
    ).to.be.revertedWith("FiatTokenV2: invalid signature");
  });
});

describe("Multicall3 at its canonical address", function () {
  it("aggregates calls, reporting failures where allowed and reverting where not", async function () {
    const { usdc, multicall, alice } = await loadFixture(fixture);
    const balanceCall = { target: BASE_USDC, callData: usdc.interface.encodeFunctionData("balanceOf", [alice.address]) };
    const failing = { target: BASE_USDC, callData: usdc.interface.encodeFunctionData("transfer", [alice.address, 1n]) };
    const results = await multicall.tryAggregate.staticCall(false, [balanceCall, failing]);
    expect(results[0].success).to.equal(true);
    expect(usdc.interface.decodeFunctionResult("balanceOf", results[0].returnData)[0]).to.equal(1_000_000n);
    expect(results[1].success).to.equal(false);
    await expect(multicall.tryAggregate.staticCall(true, [balanceCall, failing])).to.be.revertedWith("Multicall3: call failed");

    const r3 = await multicall.aggregate3.staticCall([
      { ...balanceCall, allowFailure: false },
      { ...failing, allowFailure: true },
    ]);
    expect(r3.map((r) => r.success)).to.deep.equal([true, false]);
    await expect(
      multicall.aggregate3Value.staticCall([{ ...balanceCall, allowFailure: true, value: 1n }], { value: 2n }),
    ).to.be.revertedWith("Multicall3: value mismatch");
    const [blockNumber, data] = await multicall.aggregate.staticCall([balanceCall]);
    expect(blockNumber).to.be.greaterThan(0n);
    expect(data).to.have.length(1);
  });

  it("reports chain and block values", async function () {
    const { multicall, alice } = await loadFixture(fixture);
    const block = await ethers.provider.getBlock("latest");
    expect(await multicall.getChainId()).to.equal(8453n);
    expect(await multicall.getBlockNumber()).to.equal(BigInt(block!.number));
    expect(await multicall.getCurrentBlockGasLimit()).to.be.greaterThan(0n);
    expect(await multicall.getCurrentBlockTimestamp()).to.be.greaterThanOrEqual(BigInt(block!.timestamp));
    // eth_call runs in the context of the latest block: its parent is the "last" block.
    expect(await multicall.getLastBlockHash()).to.equal(block!.parentHash);
    expect(await multicall.getBlockHash(block!.number - 1)).to.equal(block!.parentHash);
    expect(await multicall.getEthBalance(alice.address)).to.equal(0n);
    expect(await multicall.getBasefee()).to.equal(0n);
    expect(await multicall.getCurrentBlockCoinbase()).to.match(/^0x[0-9a-fA-F]{40}$/);
  });
});
