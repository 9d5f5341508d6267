// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title The storage of a SpendGate agent (wallet and policy) and the helpers both halves of it share.
/// @dev SpendPolicy (payments, ERC-1271, views) inherits OwnerControls (the owner's signed changes), which inherits
/// this: one storage layout, declared once, in this order.
abstract contract SpendPolicyState is ISpendPolicy, EIP712 {
    // ---------------------------------------------------------------- constants
    /// @notice How far (either side of block.timestamp) an owner's signed timestamp may be.
    uint256 public constant SIGNATURE_WINDOW = 15 minutes;
    /// @notice How far (either side of block.timestamp) an owner's ApprovalDecision may be: the service relays it
    /// after fetching the merchant's quote again.
    uint256 public constant APPROVAL_WINDOW = 1 hours;
    /// @notice The longest an authorised transfer may stay valid (validBefore - block.timestamp).
    uint256 public constant MAX_VALIDITY = 1 hours;

    bytes4 internal constant ERC1271_INVALID = 0xffffffff;

    bytes32 internal constant APPROVAL_DECISION_TYPEHASH =
        keccak256(
            "ApprovalDecision(string action,string approvalId,address agent,string merchant,uint256 amount,uint256 timestamp)"
        );
    bytes32 internal constant ACTION_APPROVE_HASH = keccak256("approve");
    bytes32 internal constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        keccak256(
            "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
        );

    // Slot 0: the operator in bits 0-159, the UTC day of the spend in bits 160-191, the amount spent that day in bits
    // 192-255. Payment record: the low 216 bits of the authorised transfer's EIP-3009 digest, the UTC day it was
    // authorised on in bits 216-247, the state in bits 248-255.
    uint256 internal constant OPERATOR_MASK = type(uint160).max;
    uint256 internal constant SPEND_DAY_SHIFT = 160;
    uint256 internal constant SPEND_AMOUNT_SHIFT = 192;
    uint256 internal constant DIGEST_MASK = type(uint216).max;
    uint256 internal constant RECORD_DAY_SHIFT = 216;
    uint256 internal constant RECORD_STATE_SHIFT = 248;
    uint256 internal constant STATE_AUTHORIZED = 1;

    // ---------------------------------------------------------------- storage (each clone's own)
    /// @dev Read together by every payment.
    struct Limits {
        uint64 perTxLimit;
        uint64 dailyBudget;
        uint64 approvalThreshold;
        bool paused;
        uint32 version;
    }

    // Slot 0: the operator check and the day's spend share one SLOAD (layout above); the spend resets lazily when a
    // new day is first touched.
    uint256 internal _operatorAndSpend;
    // Slot 1.
    Limits internal _limits;
    // Slot 2.
    bytes32 internal _allowlistRoot;
    // Slot 3: the owner and the last SetPolicy and SetPaused timestamps.
    address internal _owner;
    uint48 internal _lastPolicyTimestamp;
    uint48 internal _lastPausedTimestamp;
    // Slot 4: the last SetOperator and SetOwner timestamps (zero until used).
    uint48 internal _lastOperatorTimestamp;
    uint48 internal _lastOwnerTimestamp;

    mapping(bytes32 paymentId => uint256 record) internal _payments;
    mapping(bytes32 approvalIdHash => bool) internal _approvalsUsed;
    /// @dev EIP-712 digests of owner signatures that are not ordered by timestamp (pause, withdraw).
    mapping(bytes32 digest => bool) internal _signaturesUsed;

    // ---------------------------------------------------------------- internal
    function _spentOn(uint256 word, uint256 today) internal pure returns (uint256) {
        return (word >> SPEND_DAY_SHIFT) & type(uint32).max == today ? word >> SPEND_AMOUNT_SHIFT : 0;
    }

    function _withSpend(uint256 word, uint256 today, uint256 spent) internal pure returns (uint256) {
        return (spent << SPEND_AMOUNT_SHIFT) | (today << SPEND_DAY_SHIFT) | (word & OPERATOR_MASK);
    }

    function _ownerDigest(bytes32 structHash) internal view returns (bytes32) {
        return _hashTypedDataV4(structHash);
    }

    function _checkOwnerSignature(bytes32 digest, bytes calldata signature) internal view {
        if (!SignatureChecker.isValidSignatureNowCalldata(_owner, digest, signature)) {
            revert SpendPolicyInvalidSignature();
        }
    }

    function _checkWindow(uint256 timestamp, uint256 window) internal view {
        if (!_withinWindow(timestamp, window)) revert SpendPolicyTimestampOutOfWindow(timestamp, block.timestamp);
    }

    function _withinWindow(uint256 timestamp, uint256 window) internal view returns (bool) {
        return
            timestamp > block.timestamp ? timestamp - block.timestamp <= window : block.timestamp - timestamp <= window;
    }
}
