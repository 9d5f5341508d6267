// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISpendPolicy, ISpendPolicyFactory} from "./ISpendPolicy.sol";
import {SpendPolicy} from "./SpendPolicy.sol";
import {OperatorCheck} from "./OperatorCheck.sol";

/// @title Deploys one agent (wallet and spend policy in one contract) per signing key, as a minimal proxy.
/// @notice Every agent is an ERC-1167 clone of one implementation (deployed by this factory's constructor, verified
/// once), with the agent's signing key as immutable argument and CREATE2 salt: its address depends only on this
/// factory and that key, so genesis can hand it out (and funds can arrive) before anything is deployed. Only the
/// default operator (or, when it is an OperatorSet, one of its members) deploys, so nobody can squat an agent's
/// address with an owner of their own.
contract SpendPolicyFactory is ISpendPolicyFactory, Ownable {
    // ---------------------------------------------------------------- storage
    address private immutable _implementation;
    address private _defaultOperator;

    // ---------------------------------------------------------------- modifiers
    modifier onlyDefaultOperator() {
        _checkDeployer();
        _;
    }

    // ---------------------------------------------------------------- constructor
    /// @param initialOwner the factory's owner (sets the default operator)
    /// @param defaultOperator_ the service's relayer (one key, or an OperatorSet): deploys agents, becomes their operator
    /// @param usdc the EIP-3009 token the agents pay with (Base USDC)
    /// @param swapRouter SwapRouter02 of swaps before settlement (Base's; zero with the next two: no swaps)
    /// @param weth WETH9 (Base's predeploy)
    /// @param uniswapFactory the Uniswap v3 factory whose USDC/WETH 0.05% pool bounds the price
    constructor(
        address initialOwner,
        address defaultOperator_,
        address usdc,
        address swapRouter,
        address weth,
        address uniswapFactory
    ) Ownable(initialOwner) {
        _implementation = address(new SpendPolicy(usdc, ISpendPolicy.SwapConfig(swapRouter, weth, uniswapFactory)));
        _setDefaultOperator(defaultOperator_);
    }

    // ---------------------------------------------------------------- external
    /// @inheritdoc ISpendPolicyFactory
    function deployAgent(
        address signer,
        address agentOwner,
        ISpendPolicy.Policy calldata firstPolicy,
        uint256 timestamp,
        bytes calldata signature
    ) external onlyDefaultOperator returns (address agent) {
        if (signer == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        address predicted = predictAgent(signer);
        if (predicted.code.length != 0) revert ISpendPolicy.SpendPolicyAlreadyDeployed(predicted);
        agent = Clones.cloneDeterministicWithImmutableArgs(_implementation, abi.encodePacked(signer), _salt(signer));
        // The default operator (one key, or the OperatorSet of every instance) becomes the agent's, not the member that
        // relayed: any instance serves the agent.
        SpendPolicy(payable(agent)).initialize(agentOwner, _defaultOperator, firstPolicy, timestamp, signature);
        emit AgentDeployed(agent, agentOwner, agent);
    }

    /// @notice Factory owner only. Sets the account that deploys agents and becomes the operator of new ones
    /// (existing agents rotate their operator with the owner's SetOperator signature).
    function setDefaultOperator(address operator_) external onlyOwner {
        _setDefaultOperator(operator_);
    }

    // ---------------------------------------------------------------- view
    /// @inheritdoc ISpendPolicyFactory
    function predictAgent(address signer) public view returns (address) {
        return Clones.predictDeterministicAddressWithImmutableArgs(_implementation, abi.encodePacked(signer), _salt(signer));
    }

    /// @inheritdoc ISpendPolicyFactory
    function agentOf(address signer) external view returns (address) {
        address predicted = predictAgent(signer);
        return predicted.code.length != 0 ? predicted : address(0);
    }

    /// @notice The account that deploys agents and becomes the operator of new ones.
    function defaultOperator() external view returns (address) {
        return _defaultOperator;
    }

    /// @notice The one SpendPolicy implementation every agent delegates to.
    function implementation() external view returns (address) {
        return _implementation;
    }

    /// @inheritdoc ISpendPolicyFactory
    function isValidSignatureNow(address signer, bytes32 hash, bytes calldata signature) external view returns (bool) {
        return SignatureChecker.isValidSignatureNowCalldata(signer, hash, signature);
    }

    // ---------------------------------------------------------------- internal
    function _checkDeployer() internal view {
        if (!OperatorCheck.isOperator(_defaultOperator, msg.sender)) {
            revert ISpendPolicy.SpendPolicyUnauthorizedDeployer(msg.sender);
        }
    }

    function _setDefaultOperator(address operator_) private {
        if (operator_ == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        _defaultOperator = operator_;
        emit DefaultOperatorSet(operator_);
    }

    function _salt(address signer) private pure returns (bytes32) {
        return bytes32(uint256(uint160(signer)));
    }
}
