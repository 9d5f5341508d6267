// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title Deploys each agent's wallet and policy as a minimal proxy (ERC-1167 with immutable args) with CREATE2.
interface ISpendPolicyFactory {
    event AgentDeployed(address indexed agent, address indexed owner, address policy);
    event DefaultOperatorSet(address operator);
    /// @notice The factory was configured for its network (once): its SpendPolicy implementation and that
    /// implementation's token and modules.
    event Configured(address implementation, address usdc, address schemes, address updates);

    /// @notice configure (or createModules) was called already: the implementation (or the schemes module) is fixed.
    error SpendPolicyFactoryConfigured(address implementation);
    /// @notice A creation code given to configure or createModules is not the one this factory's address commits to,
    /// or its constructor reverted.
    error SpendPolicyFactoryWrongImplementation();
    /// @notice configure before createModules.
    error SpendPolicyFactoryNoModules();

    /// @notice The agent (wallet and policy) address of signing key `signer`, deployed or not. With `boundOwner` 0 it
    /// is an open agent's (any owner may be deployed there: the service checks its own record of the link); otherwise
    /// the address commits to that owner (CREATE2 salt over signing key and owner), and only that owner can ever be
    /// deployed there, whoever relays.
    function predictAgent(address signer, address boundOwner) external view returns (address);

    /// @notice Default operator only. Deploys the agent of `signer` with owner `agentOwner`, at the owner-bound address
    /// when `ownerBound` (predictAgent(signer, agentOwner)), else at the open one (predictAgent(signer, 0)); the owner's
    /// SetPolicy signature (domain: that address) authorises the first policy. The default operator becomes the
    /// agent's operator.
    function deployAgent(
        address signer,
        address agentOwner,
        bool ownerBound,
        ISpendPolicy.SignedPolicy calldata policy,
        uint256 timestamp,
        bytes calldata signature
    ) external returns (address agent);

    /// @notice The deployed agent of `signer` (owner-bound to `boundOwner`, or open when it is 0), or the zero address.
    function agentOf(address signer, address boundOwner) external view returns (address);
    function defaultOperator() external view returns (address);
    function implementation() external view returns (address);
    /// @notice OpenZeppelin SignatureChecker as a view (EOA, ERC-1271, EIP-7702): the service checks owner signatures
    /// with it, so it never accepts one the contracts would refuse.
    function isValidSignatureNow(address signer, bytes32 hash, bytes calldata signature) external view returns (bool);
}
