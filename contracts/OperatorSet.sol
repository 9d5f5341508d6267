// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";

/// @title The relayers of one SpendGate deployment: one key per service instance, managed by the deployer.
/// @notice An agent's operator may be this contract instead of a single key: its policy then accepts a payment
/// authorisation or release from any member. A member can do exactly what a single operator key could (authorise
/// within the owner-signed policy, release unsettled payments, deploy agents through the factory); the owner removes
/// a stolen key with one transaction, and every change is an event an auditor can follow.
contract OperatorSet is Ownable {
    // ---------------------------------------------------------------- errors
    error OperatorSetZeroAddress();
    error OperatorSetAlreadyMember(address account);
    error OperatorSetNotMember(address account);

    // ---------------------------------------------------------------- events
    event OperatorAdded(address indexed account);
    event OperatorRemoved(address indexed account);

    // ---------------------------------------------------------------- storage
    mapping(address account => bool) private _members;
    uint256 private _count;

    // ---------------------------------------------------------------- constructor
    /// @param initialOwner the deployer (adds and removes members)
    /// @param initialMembers the first instances' operator keys
    constructor(address initialOwner, address[] memory initialMembers) Ownable(initialOwner) {
        for (uint256 i = 0; i < initialMembers.length; i++) _add(initialMembers[i]);
    }

    // ---------------------------------------------------------------- external
    /// @notice Owner only. Lets `account` (a new instance's operator key) relay for every agent of this set.
    function addOperator(address account) external onlyOwner {
        _add(account);
    }

    /// @notice Owner only. Takes `account` out at once (a retired instance, or a stolen key): from the next block on,
    /// every policy refuses it.
    function removeOperator(address account) external onlyOwner {
        if (!_members[account]) revert OperatorSetNotMember(account);
        _members[account] = false;
        _count -= 1;
        emit OperatorRemoved(account);
    }

    // ---------------------------------------------------------------- view
    /// @notice Whether `account` may relay for the agents whose operator is this set.
    function isOperator(address account) external view returns (bool) {
        return _members[account];
    }

    /// @notice How many members the set has.
    function operatorCount() external view returns (uint256) {
        return _count;
    }

    // ---------------------------------------------------------------- internal
    function _add(address account) private {
        if (account == address(0)) revert OperatorSetZeroAddress();
        if (_members[account]) revert OperatorSetAlreadyMember(account);
        _members[account] = true;
        _count += 1;
        emit OperatorAdded(account);
    }
}
