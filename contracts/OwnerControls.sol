// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";
import {PaymentRules} from "./PaymentRules.sol";

/// @title The owner's signed changes to a SpendGate agent: pause, operator, owner, withdrawals (the policy itself is
/// SpendPolicyUpdates', run by delegatecall: its allowlist in clear does not fit in the wallet's code).
/// @notice Anyone may relay each of them; each needs the owner's EIP-712 signature (EOA, ERC-1271 or EIP-7702),
/// dated within SIGNATURE_WINDOW of the block time, and none is accepted twice.
abstract contract OwnerControls is PaymentRules {
    using SafeERC20 for IERC20;

    // ---------------------------------------------------------------- constants
    bytes32 private constant SET_PAUSED_TYPEHASH = keccak256("SetPaused(address agent,bool paused,uint256 epoch,uint256 timestamp)");
    bytes32 private constant SET_OPERATOR_TYPEHASH =
        keccak256("SetOperator(address agent,address operator,uint256 timestamp)");
    bytes32 private constant SET_OWNER_TYPEHASH = keccak256("SetOwner(address agent,address newOwner,uint256 timestamp)");
    bytes32 private constant WITHDRAW_TYPEHASH =
        keccak256("Withdraw(address agent,address token,address to,uint256 amount,uint256 timestamp)");

    // ---------------------------------------------------------------- external
    /// @inheritdoc ISpendPolicy
    /// @dev A pause is single-use by its digest and needs no ordering (nor a current epoch), so no resume (however far
    /// ahead it is dated) can lock a pause out; it starts a new epoch, so nothing authorised before it can settle. A
    /// resume must name the current epoch and be newer than every accepted pause and resume and than the block time of
    /// the last pause, so a resume signed before a pause cannot undo it, whatever its timestamp.
    function setPaused(bool paused_, uint256 epoch_, uint256 timestamp, bytes calldata signature) external {
        bytes32 digest = _ownerDigest(
            keccak256(abi.encode(SET_PAUSED_TYPEHASH, address(this), paused_, epoch_, timestamp))
        );
        uint256 last = _lastPausedTimestamp;
        _checkWindow(timestamp, SIGNATURE_WINDOW);
        if (paused_) {
            if (_signaturesUsed[digest]) revert SpendPolicySignatureUsed(digest);
            _checkOwnerSignature(digest, signature);
            _signaturesUsed[digest] = true;
            uint256 floor = timestamp > block.timestamp ? timestamp : block.timestamp;
            if (floor > last) _lastPausedTimestamp = uint48(floor);
            _bumpEpoch();
        } else {
            uint256 current = _epochOf(_operatorAndSpend);
            if (epoch_ != current) revert SpendPolicyStaleEpoch(epoch_, current);
            if (timestamp <= last) revert SpendPolicyStaleTimestamp(timestamp, last);
            _checkOwnerSignature(digest, signature);
            _lastPausedTimestamp = uint48(timestamp);
        }
        _limits.paused = paused_;
        emit PausedSet(address(this), paused_, epoch_, timestamp, signature);
    }

    /// @inheritdoc ISpendPolicy
    function setOperator(address operator_, uint256 timestamp, bytes calldata signature) external {
        if (operator_ == address(0)) revert SpendPolicyZeroAddress();
        if (operator_ == address(this)) revert SpendPolicySelfAddress();
        _useOrderedSignature(
            KIND_SET_OPERATOR,
            timestamp,
            keccak256(abi.encode(SET_OPERATOR_TYPEHASH, address(this), operator_, timestamp)),
            signature
        );
        _operatorAndSpend = (_operatorAndSpend & ~OPERATOR_MASK) | uint160(operator_);
        _bumpEpoch();
        emit OperatorSet(address(this), operator_, timestamp, signature);
    }

    /// @inheritdoc ISpendPolicy
    function setOwner(address newOwner, uint256 timestamp, bytes calldata signature) external {
        if (newOwner == address(0)) revert SpendPolicyZeroAddress();
        if (newOwner == address(this)) revert SpendPolicySelfAddress();
        _useOrderedSignature(
            KIND_SET_OWNER,
            timestamp,
            keccak256(abi.encode(SET_OWNER_TYPEHASH, address(this), newOwner, timestamp)),
            signature
        );
        _owner = newOwner;
        _bumpEpoch();
        emit OwnerSet(address(this), newOwner, timestamp, signature);
    }

    /// @inheritdoc ISpendPolicy
    function withdraw(address token, address to, uint256 amount, uint256 timestamp, bytes calldata signature) external {
        if (to == address(0)) revert SpendPolicyZeroAddress();
        if (to == address(this)) revert SpendPolicySelfAddress();
        bytes32 digest = _ownerDigest(
            keccak256(abi.encode(WITHDRAW_TYPEHASH, address(this), token, to, amount, timestamp))
        );
        if (_signaturesUsed[digest]) revert SpendPolicySignatureUsed(digest);
        _checkWindow(timestamp, SIGNATURE_WINDOW);
        _checkOwnerSignature(digest, signature);
        _signaturesUsed[digest] = true;
        if (token == address(0)) {
            (bool ok, ) = to.call{value: amount}("");
            if (!ok) revert SpendPolicyWithdrawFailed(token, to, amount);
        } else {
            IERC20(token).safeTransfer(to, amount);
        }
        emit Withdrawn(address(this), token, to, amount, timestamp, signature);
    }

    /// @inheritdoc ISpendPolicy
    function lastTimestamp(uint8 kind) external view returns (uint256) {
        if (kind == KIND_SET_POLICY) return _lastPolicyTimestamp;
        if (kind == KIND_SET_PAUSED) return _lastPausedTimestamp;
        if (kind == KIND_SET_OPERATOR) return _lastOperatorTimestamp;
        if (kind == KIND_SET_OWNER) return _lastOwnerTimestamp;
        return 0;
    }

    /// @inheritdoc ISpendPolicy
    function isValidOwnerSignature(bytes32 structHash, bytes calldata signature) external view returns (bool) {
        return SignatureChecker.isValidSignatureNowCalldata(_owner, _ownerDigest(structHash), signature);
    }

    /// @inheritdoc ISpendPolicy
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }
}
