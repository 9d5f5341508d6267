// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {PaymentRules} from "./PaymentRules.sol";

/// @title What a SpendGate wallet module is: code the wallet (SpendPolicy) runs by delegatecall, on its own storage,
/// because the wallet's own code has no room left under the 24,576-byte limit.
/// @notice A module holds nothing itself and refuses to run anywhere but inside a wallet (onlyDelegated). It shares
/// the wallet's storage layout and helpers (SpendPolicyState implements ISpendPolicy), so it answers the wallet's own
/// functions with SpendPolicyDelegateOnly: the wallet's code answers those, and never forwards them here, except those
/// a module overrides (SpendPolicyUpdates.updatePolicy).
abstract contract SpendPolicyModule is PaymentRules {
    /// @dev This module's own address: running here (not by delegatecall in a wallet) is refused.
    address private immutable _self;

    modifier onlyDelegated() {
        _checkDelegated();
        _;
    }

    /// @dev The domain is the wallet's: EIP712 rebuilds its separator for address(this), which is the wallet's here.
    constructor() EIP712("SpendGate", "1") {
        _self = address(this);
    }

    // ---------------------------------------------------------------- the wallet's own functions
    function authorizePayment(bytes32, string calldata, Leaf calldata, bytes32[] calldata, Transfer calldata, OwnerApproval calldata) external pure returns (bool, BlockReason) { revert SpendPolicyDelegateOnly(); }
    function releasePayment(bytes32, Transfer calldata) external pure { revert SpendPolicyDelegateOnly(); }
    function voidUnrecordedPayment(bytes32) external pure { revert SpendPolicyDelegateOnly(); }
    function swapForPayment(bytes32, string calldata, Transfer calldata) external pure returns (bool) { revert SpendPolicyDelegateOnly(); }
    function checkPayment(string calldata, Leaf calldata, bytes32[] calldata, address, uint256) external pure returns (Decision, BlockReason) { revert SpendPolicyDelegateOnly(); }
    function agent() external pure returns (address) { revert SpendPolicyDelegateOnly(); }
    function signingKey() external pure returns (address) { revert SpendPolicyDelegateOnly(); }
    function owner() external pure returns (address) { revert SpendPolicyDelegateOnly(); }
    function operator() external pure returns (address) { revert SpendPolicyDelegateOnly(); }
    function paused() external pure returns (bool) { revert SpendPolicyDelegateOnly(); }
    function updatePolicy(SignedPolicy calldata, uint256, bytes calldata) external virtual { revert SpendPolicyDelegateOnly(); }
    function setPaused(bool, uint256, uint256, bytes calldata) external pure { revert SpendPolicyDelegateOnly(); }
    function setOperator(address, uint256, bytes calldata) external pure { revert SpendPolicyDelegateOnly(); }
    function setOwner(address, uint256, bytes calldata) external pure { revert SpendPolicyDelegateOnly(); }
    function withdraw(address, address, uint256, uint256, bytes calldata) external pure { revert SpendPolicyDelegateOnly(); }
    function lastTimestamp(uint8) external pure returns (uint256) { revert SpendPolicyDelegateOnly(); }
    function isValidOwnerSignature(bytes32, bytes calldata) external pure returns (bool) { revert SpendPolicyDelegateOnly(); }
    function domainSeparator() external pure returns (bytes32) { revert SpendPolicyDelegateOnly(); }
    function swapConfig() external pure returns (address, address, address) { revert SpendPolicyDelegateOnly(); }

    // ---------------------------------------------------------------- internal
    function _checkDelegated() internal view {
        if (_isModuleItself()) revert SpendPolicyDelegateOnly();
    }

    /// @dev Running as the module itself, not by delegatecall in a wallet.
    function _isModuleItself() internal view returns (bool) {
        return address(this) == _self;
    }
}
