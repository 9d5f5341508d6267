// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Create2} from "@openzeppelin/contracts/utils/Create2.sol";
import {ISpendPolicy, ISpendPolicyFactory} from "./ISpendPolicy.sol";
import {SpendPolicy, ISpendPolicyDeployer} from "./SpendPolicy.sol";

/// @title Deploys one SpendPolicy per agent with CREATE2 (salt: the agent address).
/// @notice The init code is constant (the policy reads its agent, owner and operator back from the factory while it
/// is constructed), so an agent's policy address depends only on this factory and the agent: owners sign the first
/// SetPolicy for that address before it exists. Only the default operator deploys, so nobody can squat an agent's
/// address with a policy of their own.
contract SpendPolicyFactory is ISpendPolicyFactory, ISpendPolicyDeployer, Ownable {
    // ---------------------------------------------------------------- storage
    bytes32 private immutable _policyInitCodeHash;
    address private _defaultOperator;

    // Set only for the duration of one deployPolicy call.
    address private transient _deployingAgent;
    address private transient _deployingOwner;
    address private transient _deployingOperator;

    // ---------------------------------------------------------------- modifiers
    modifier onlyDefaultOperator() {
        _checkDeployer();
        _;
    }

    // ---------------------------------------------------------------- constructor
    constructor(address initialOwner, address defaultOperator_) Ownable(initialOwner) {
        _policyInitCodeHash = keccak256(type(SpendPolicy).creationCode);
        _setDefaultOperator(defaultOperator_);
    }

    // ---------------------------------------------------------------- external
    /// @notice Default operator only. Deploys the agent's policy; the owner's SetPolicy signature (domain: the
    /// predicted address) authorises the first policy. The default operator becomes the policy's operator.
    function deployPolicy(
        address agent,
        address policyOwner,
        ISpendPolicy.Policy calldata firstPolicy,
        uint256 timestamp,
        bytes calldata signature
    ) external onlyDefaultOperator returns (address policy_) {
        if (agent == address(0) || policyOwner == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        address predicted = predictPolicyAddress(agent);
        if (predicted.code.length != 0) revert ISpendPolicy.SpendPolicyAlreadyDeployed(agent, predicted);

        _deployingAgent = agent;
        _deployingOwner = policyOwner;
        _deployingOperator = msg.sender;
        policy_ = address(new SpendPolicy{salt: _salt(agent)}());
        _deployingAgent = address(0);
        _deployingOwner = address(0);
        _deployingOperator = address(0);

        SpendPolicy(policy_).initialize(firstPolicy, timestamp, signature);
        emit PolicyDeployed(agent, policyOwner, policy_);
    }

    /// @notice Factory owner only. Sets the account that deploys policies and becomes the operator of new ones
    /// (existing policies rotate their operator with the owner's SetOperator signature).
    function setDefaultOperator(address operator_) external onlyOwner {
        _setDefaultOperator(operator_);
    }

    // ---------------------------------------------------------------- view
    /// @notice The address the agent's policy has, or will have once deployed.
    function predictPolicyAddress(address agent) public view returns (address) {
        return Create2.computeAddress(_salt(agent), _policyInitCodeHash);
    }

    /// @notice The agent's deployed policy, or the zero address when there is none yet.
    function policyOf(address agent) external view returns (address) {
        address predicted = predictPolicyAddress(agent);
        return predicted.code.length != 0 ? predicted : address(0);
    }

    /// @notice The account that deploys policies and becomes the operator of new ones.
    function defaultOperator() external view returns (address) {
        return _defaultOperator;
    }

    /// @notice The keccak256 of the policy's (constant) init code, for off-chain CREATE2 predictions.
    function policyInitCodeHash() external view returns (bytes32) {
        return _policyInitCodeHash;
    }

    /// @notice The agent, owner and operator of the policy being deployed (zero outside deployPolicy).
    function parameters() external view returns (address agent, address owner_, address operator_) {
        return (_deployingAgent, _deployingOwner, _deployingOperator);
    }

    // ---------------------------------------------------------------- internal
    function _checkDeployer() internal view {
        if (msg.sender != _defaultOperator) revert ISpendPolicy.SpendPolicyUnauthorizedDeployer(msg.sender);
    }

    function _setDefaultOperator(address operator_) private {
        if (operator_ == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        _defaultOperator = operator_;
        emit DefaultOperatorSet(operator_);
    }

    function _salt(address agent) private pure returns (bytes32) {
        return bytes32(uint256(uint160(agent)));
    }
}
