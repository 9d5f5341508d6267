// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";
import {ISpendPolicyFactory} from "./ISpendPolicyFactory.sol";
import {SpendPolicy} from "./SpendPolicy.sol";
import {OperatorCheck} from "./OperatorCheck.sol";

/// @title Deploys one agent (wallet and spend policy in one contract) per signing key, as a minimal proxy.
/// @notice Every agent is an ERC-1167 clone of one implementation (deployed by this factory's constructor, verified
/// once), with the agent's signing key as immutable argument. Its CREATE2 salt is the signing key (an open agent) or
/// keccak256(signing key, owner) (an owner-bound agent, created with its owner known): its address depends only on this
/// factory, that key and, when bound, the owner, so genesis can hand it out before anything is deployed. Only the
/// default operator (or, when it is an OperatorSet, one of its members) deploys, so nobody can squat an agent's
/// address with an owner of their own; and an owner-bound address cannot be deployed with any other owner, even by
/// the operator.
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
    /// @param schemes SpendPolicySchemes deployed for `usdc` (x402 channels and upto ceilings; see SpendPolicy)
    constructor(
        address initialOwner,
        address defaultOperator_,
        address usdc,
        address swapRouter,
        address weth,
        address uniswapFactory,
        address schemes
    ) Ownable(initialOwner) {
        _implementation = address(
            new SpendPolicy(usdc, ISpendPolicy.SwapConfig(swapRouter, weth, uniswapFactory), schemes)
        );
        _setDefaultOperator(defaultOperator_);
    }

    // ---------------------------------------------------------------- external
    /// @inheritdoc ISpendPolicyFactory
    function deployAgent(
        address signer,
        address agentOwner,
        bool ownerBound,
        ISpendPolicy.Policy calldata firstPolicy,
        uint256 timestamp,
        bytes calldata signature
    ) external onlyDefaultOperator returns (address agent) {
        if (signer == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        bytes32 salt = _salt(signer, ownerBound ? agentOwner : address(0));
        address predicted = Clones.predictDeterministicAddressWithImmutableArgs(_implementation, abi.encodePacked(signer), salt);
        if (predicted.code.length != 0) revert ISpendPolicy.SpendPolicyAlreadyDeployed(predicted);
        agent = Clones.cloneDeterministicWithImmutableArgs(_implementation, abi.encodePacked(signer), salt);
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
    function predictAgent(address signer, address boundOwner) public view returns (address) {
        return
            Clones.predictDeterministicAddressWithImmutableArgs(
                _implementation,
                abi.encodePacked(signer),
                _salt(signer, boundOwner)
            );
    }

    /// @inheritdoc ISpendPolicyFactory
    function agentOf(address signer, address boundOwner) external view returns (address) {
        address predicted = predictAgent(signer, boundOwner);
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

    /// @dev An open agent's salt is its signing key (as before owner-bound agents existed, so those addresses stay);
    /// an owner-bound one's commits to the owner too. The two cannot collide: keccak256 of 64 bytes is not a padded
    /// 20-byte value but with negligible probability.
    function _salt(address signer, address boundOwner) private pure returns (bytes32) {
        if (boundOwner == address(0)) return bytes32(uint256(uint160(signer)));
        return keccak256(abi.encode(signer, boundOwner));
    }
}
