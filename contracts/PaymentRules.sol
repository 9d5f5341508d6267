// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {OperatorCheck} from "./OperatorCheck.sol";
import {PolicyRules} from "./PolicyRules.sol";
import {SpendPolicyState} from "./SpendPolicyState.sol";

/// @title The policy's decision on one payment, shared by every scheme: who may ask (the operator), the rules in
/// order (_evaluate), the owner's approval above the threshold, and the counts an allowed payment adds (_charge).
/// @dev SpendPolicy (exact payments) and SpendPolicySchemes (channel deposits and upto ceilings, run by delegatecall
/// on the wallet's storage) both decide through these, so every scheme meets the same checks.
abstract contract PaymentRules is SpendPolicyState {
    // ---------------------------------------------------------------- internal
    /// @dev The agent's signing key: the clone's immutable argument.
    function _signer() internal view returns (address) {
        return address(bytes20(Clones.fetchCloneArgs(address(this))));
    }

    function _checkOperator() internal view {
        // The operator slot holds one key, or an OperatorSet whose members (one key per service instance) may relay.
        // The one-key case is decided here, without the library's call frame (release stays under 40k gas).
        address operator_ = address(uint160(_operatorAndSpend));
        if (msg.sender != operator_ && !OperatorCheck.isOperator(operator_, msg.sender)) {
            revert SpendPolicyUnauthorizedOperator(msg.sender);
        }
    }

    /// @dev PaymentBlocked with the leaf the operator presented (what the rules judged).
    function _blocked(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        uint256 amount,
        BlockReason reason
    ) internal returns (bool, BlockReason) {
        emit PaymentBlocked(
            paymentId,
            address(this),
            keccak256(bytes(merchant)),
            merchant,
            amount,
            reason,
            leaf.entry,
            leaf.dailyCap,
            leaf.payee
        );
        return (false, reason);
    }

    /// @dev Counts an allowed payment of `amount` in every window `_evaluate` read (slot 0's day, the optional
    /// windows, lifetime, the entry's cap) and returns the day's spend after it.
    function _charge(Charge memory c, uint256 amount) internal returns (uint256 spent) {
        uint256 today = c.hour / HOURS_PER_DAY;
        // _evaluate passed: daySpent + amount <= dailyBudget < 2^64, and the same for every capped count, so no sum
        // overflows and no window field spills into the next.
        unchecked {
            spent = c.daySpent + amount;
            uint256 flags = c.flags;
            if (flags & RECORD_IN_WINDOWS != 0) _windowSpend = c.windowWord + c.windowAdd;
            if (flags & RECORD_IN_LIFETIME != 0) _lifetimeSpent = c.lifetime + amount;
            if (c.entryHash != 0) _entrySpend[c.entryHash] = ((c.entrySpent + amount) << 32) | today;
        }
        _operatorAndSpend = _withSpend(c.spendWord, today, spent);
    }

    /// @dev The payment record of an allowed payment (layout in SpendPolicyState): authorised in epoch `epoch_`, in
    /// the hour and windows of `c`, for the transfer whose digest is `digest`.
    function _recordOf(Charge memory c, uint256 epoch_, bytes32 digest) internal pure returns (uint256) {
        return
            (STATE_AUTHORIZED << RECORD_STATE_SHIFT) |
            (epoch_ << RECORD_EPOCH_SHIFT) |
            ((c.hour & type(uint24).max) << RECORD_HOUR_SHIFT) |
            (c.flags << RECORD_FLAGS_SHIFT) |
            (uint256(digest) & DIGEST_MASK);
    }

    /// @dev The rules in order; returns the reason and the counts read so far (storage is read only as far as
    /// needed, and the optional windows only when the policy uses them).
    function _evaluate(
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        address payTo,
        uint256 amount
    ) internal view returns (BlockReason, Charge memory c) {
        Limits memory limits = _limits;
        if (limits.paused) return (BlockReason.PolicyPaused, c);
        if (limits.validUntil != 0 && block.timestamp > limits.validUntil) return (BlockReason.PolicyExpired, c);
        if (!PolicyRules.merchantAllowed(_allowlistRoot, merchant, leaf, proof)) return (BlockReason.MerchantNotAllowed, c);
        {
            address payee = leaf.payee;
            if (payee != address(0) && payee != payTo) return (BlockReason.PayeeNotAllowed, c);
        }
        if (amount > limits.perTxLimit) return (BlockReason.PerTxLimitExceeded, c);
        c.hour = block.timestamp / 1 hours;
        uint256 w;
        if (limits.hasWindows) w = _windowLimits;
        // Every count below is < 2^64 and amount <= perTxLimit < 2^64: no sum overflows.
        unchecked {
            if (limits.maxPaymentsPerHour != 0 || w & L_WINDOWS_MASK != 0) {
                uint256 word = _rollWindows(_windowSpend, c.hour);
                c.windowWord = word;
                // Only the windows with a limit count (so none can overflow); the others read 0 in spending().
                if (limits.maxPaymentsPerHour != 0) {
                    if ((word >> W_COUNT_SHIFT) & type(uint16).max >= limits.maxPaymentsPerHour) {
                        return (BlockReason.VelocityExceeded, c);
                    }
                    c.windowAdd = 1 << W_COUNT_SHIFT;
                    c.flags = RECORD_IN_COUNT;
                }
                uint256 budget = _field(w, L_HOUR_SHIFT);
                if (budget != 0) {
                    if (_field(word, W_HOUR_SHIFT) + amount > budget) return (BlockReason.HourlyBudgetExceeded, c);
                    c.windowAdd |= amount << W_HOUR_SHIFT;
                    c.flags |= RECORD_IN_HOUR;
                }
            }
            c.spendWord = _operatorAndSpend;
            c.daySpent = _spentOn(c.spendWord, c.hour / HOURS_PER_DAY);
            if (c.daySpent + amount > limits.dailyBudget) return (BlockReason.DailyBudgetExceeded, c);
            if (_field(w, L_WEEK_SHIFT) != 0) {
                if (_field(c.windowWord, W_WEEK_SHIFT) + amount > _field(w, L_WEEK_SHIFT)) {
                    return (BlockReason.WeeklyBudgetExceeded, c);
                }
                c.windowAdd |= amount << W_WEEK_SHIFT;
                c.flags |= RECORD_IN_WEEK;
            }
            if (_field(w, L_MONTH_SHIFT) != 0) {
                if (_field(c.windowWord, W_MONTH_SHIFT) + amount > _field(w, L_MONTH_SHIFT)) {
                    return (BlockReason.MonthlyBudgetExceeded, c);
                }
                c.windowAdd |= amount << W_MONTH_SHIFT;
                c.flags |= RECORD_IN_MONTH;
            }
            if (w >> L_LIFETIME_SHIFT != 0) {
                c.flags |= RECORD_IN_LIFETIME;
                c.lifetime = _lifetimeSpent;
                if (c.lifetime + amount > w >> L_LIFETIME_SHIFT) return (BlockReason.LifetimeBudgetExceeded, c);
            }
            uint256 leafDailyCap = leaf.dailyCap;
            if (leafDailyCap != 0) {
                c.entryHash = keccak256(bytes(leaf.entry));
                uint256 entryWord = _entrySpend[c.entryHash];
                if (entryWord & type(uint32).max == c.hour / HOURS_PER_DAY) c.entrySpent = entryWord >> 32;
                if (c.entrySpent + amount > leafDailyCap) return (BlockReason.MerchantBudgetExceeded, c);
            }
        }
        if (amount > limits.approvalThreshold) return (BlockReason.ApprovalRequired, c);
        return (BlockReason.None, c);
    }

    /// @dev Checks and consumes the owner's approval of a payment above the threshold. Any failure returns false
    /// (the payment is then blocked with approval_required), never reverts.
    function _useApproval(
        bytes32 paymentId,
        string calldata merchant,
        address payTo,
        uint256 amount,
        OwnerApproval calldata approval
    ) internal returns (bool) {
        if (approval.signature.length == 0 || amount > approval.amount) return false;
        if (!_withinWindow(approval.timestamp, APPROVAL_WINDOW)) return false;
        bytes32 idHash = keccak256(bytes(approval.approvalId));
        if (_approvalsUsed[idHash]) return false;
        bytes32 structHash = keccak256(
            abi.encode(
                APPROVAL_DECISION_TYPEHASH,
                ACTION_APPROVE_HASH,
                idHash,
                address(this),
                keccak256(bytes(merchant)),
                payTo,
                approval.amount,
                approval.timestamp
            )
        );
        if (!SignatureChecker.isValidSignatureNowCalldata(_owner, _ownerDigest(structHash), approval.signature)) {
            return false;
        }
        _approvalsUsed[idHash] = true;
        emit ApprovalUsed(
            paymentId,
            address(this),
            approval.approvalId,
            approval.amount,
            approval.timestamp,
            approval.signature
        );
        return true;
    }
}
