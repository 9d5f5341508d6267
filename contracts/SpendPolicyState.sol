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

    /// @dev Kinds of owner signature ordered by timestamp (lastTimestamp(kind)).
    uint8 internal constant KIND_SET_POLICY = 0;
    uint8 internal constant KIND_SET_PAUSED = 1;
    uint8 internal constant KIND_SET_OPERATOR = 2;
    uint8 internal constant KIND_SET_OWNER = 3;

    bytes32 internal constant APPROVAL_DECISION_TYPEHASH =
        keccak256(
            "ApprovalDecision(string action,string approvalId,address agent,string merchant,address payTo,uint256 amount,uint256 timestamp)"
        );
    bytes32 internal constant ACTION_APPROVE_HASH = keccak256("approve");
    bytes32 internal constant TRANSFER_WITH_AUTHORIZATION_TYPEHASH =
        keccak256(
            "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
        );

    // Slot 0: the operator in bits 0-159, the authorisation epoch in bits 160-175, the UTC day of the spend (mod 2^16)
    // in bits 176-191, the amount spent that day in bits 192-255. Every payment reads it (the operator check) and
    // every settlement (the epoch), so neither pays for another slot. Payment record: the low 200 bits of the
    // authorised transfer's EIP-3009 digest (a collision the operator could choose costs about 2^100 hashes), which
    // optional counts it was added to (RECORD_IN_*) in bits 200-207, the UTC hour it was authorised in (t / 3600; its
    // day, week and 30 days follow) in bits 208-231, the epoch it was authorised in in bits 232-247, the state in bits
    // 248-255. A release takes it out of exactly those counts. A void record is STATE_VOID in bits 248-255 alone.
    uint256 internal constant OPERATOR_MASK = type(uint160).max;
    uint256 internal constant EPOCH_SHIFT = 160;
    uint256 internal constant SPEND_DAY_SHIFT = 176;
    uint256 internal constant SPEND_AMOUNT_SHIFT = 192;
    /// @dev Operator and epoch: what a change of the day's spend keeps.
    uint256 internal constant OPERATOR_EPOCH_MASK = type(uint176).max;
    uint256 internal constant DIGEST_MASK = type(uint200).max;
    uint256 internal constant RECORD_FLAGS_SHIFT = 200;
    uint256 internal constant RECORD_IN_COUNT = 1;
    uint256 internal constant RECORD_IN_HOUR = 2;
    uint256 internal constant RECORD_IN_WEEK = 4;
    uint256 internal constant RECORD_IN_MONTH = 8;
    uint256 internal constant RECORD_IN_LIFETIME = 16;
    /// @dev The counts kept in _windowSpend.
    uint256 internal constant RECORD_IN_WINDOWS = RECORD_IN_COUNT | RECORD_IN_HOUR | RECORD_IN_WEEK | RECORD_IN_MONTH;
    /// @dev The payment's swap happened (SpendPolicySwap): there is never a second one.
    uint256 internal constant RECORD_SWAPPED = 32;
    uint256 internal constant RECORD_HOUR_SHIFT = 208;
    uint256 internal constant RECORD_EPOCH_SHIFT = 232;
    uint256 internal constant RECORD_STATE_SHIFT = 248;
    uint256 internal constant STATE_AUTHORIZED = 1;
    /// @dev A paymentId voided before any authorisation of it landed (voidUnrecordedPayment): the state alone.
    uint256 internal constant STATE_VOID = 2;
    /// @dev A channel deposit whose unused authorisation a credit killed (the wallet no longer signs it); still
    /// creditable once, like an authorised one.
    uint256 internal constant STATE_CLOSED = 3;

    // Window spend (_windowSpend): the UTC hour it was last brought up to date in bits 0-23, that hour's payment count
    // in 24-39, the hour's spend in 40-103, the week's in 104-167, the 30 days' in 168-231. One hour tag serves every
    // window because all are whole hours aligned to the epoch: a window's count is current when the tag's window is
    // the present one. Per-entry spend (_entrySpend): the UTC day in bits 0-31, its spend above.
    uint256 internal constant HOURS_PER_DAY = 24;
    uint256 internal constant HOURS_PER_WEEK = 168;
    uint256 internal constant HOURS_PER_MONTH = 720;
    uint256 internal constant W_COUNT_SHIFT = 24;
    uint256 internal constant W_HOUR_SHIFT = 40;
    uint256 internal constant W_WEEK_SHIFT = 104;
    uint256 internal constant W_MONTH_SHIFT = 168;
    uint256 internal constant U64 = type(uint64).max;
    // The optional budgets (_windowLimits), read by a payment only when Limits.hasWindows: hourly in bits 0-63, weekly
    // in 64-127, 30 days in 128-191, lifetime in 192-255. A packed word rather than a struct: no memory copy per payment.
    uint256 internal constant L_HOUR_SHIFT = 0;
    uint256 internal constant L_WEEK_SHIFT = 64;
    uint256 internal constant L_MONTH_SHIFT = 128;
    uint256 internal constant L_LIFETIME_SHIFT = 192;
    /// @dev The hourly, weekly and 30-day budgets: the limits counted in _windowSpend (with maxPaymentsPerHour).
    uint256 internal constant L_WINDOWS_MASK = type(uint192).max;

    // ---------------------------------------------------------------- storage (each clone's own)
    /// @dev Read together by every payment. `hasWindows`: the hourly, weekly, monthly or lifetime budget is set
    /// (so `_windowLimits` is read only then).
    struct Limits {
        uint64 perTxLimit;
        uint64 dailyBudget;
        uint64 approvalThreshold;
        bool paused;
        bool hasWindows;
        uint16 maxPaymentsPerHour;
        uint32 validUntil;
    }

    /// @dev Never read by a payment.
    struct PolicyExtras {
        uint32 version;
        uint16 maxSwapSlippageBps;
        uint32 swapTwapSeconds;
        uint64 minSwapRate;
    }

    // Slot 0: the operator check, the epoch and the day's spend share one SLOAD (layout above); the spend resets lazily
    // when a new day is first touched.
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
    // Slots 5-8: the optional windows. Each count holds the payments authorised (and not released) in its current
    // window while the policy set its limit: no gas for a limit nobody set, and no count without a limit can overflow.
    uint256 internal _windowLimits;
    uint256 internal _windowSpend;
    uint256 internal _lifetimeSpent;
    PolicyExtras internal _extras;

    mapping(bytes32 paymentId => uint256 record) internal _payments;
    mapping(bytes32 approvalIdHash => bool) internal _approvalsUsed;
    /// @dev EIP-712 digests of owner signatures that are not ordered by timestamp (pause, withdraw).
    mapping(bytes32 digest => bool) internal _signaturesUsed;
    /// @dev Today's spend under each capped allowlist entry (keccak256 of the entry string).
    mapping(bytes32 entryHash => uint256 word) internal _entrySpend;

    /// @dev A channel deposit or upto ceiling (SpendPolicySchemes): what a credit needs beyond its payment record.
    /// `ref` is the channel id (BatchSettlement) or the Permit2 digest (Upto).
    struct SchemeRecord {
        bytes32 ref;
        uint64 amount;
        Scheme scheme;
    }

    /// @dev A channel the wallet deposited into: all deposits authorised, all that came back and was settled (credited
    /// to a deposit, or written off by a later deposit: SpendPolicySchemes._settleReturned), the epoch of the latest
    /// deposit (vouchers are answered only while it is current), and that deposit's paymentId and ERC-3009 nonce.
    struct Channel {
        uint64 deposited;
        uint64 credited;
        uint16 epoch;
        bytes32 latestDeposit;
        bytes32 latestNonce;
    }

    mapping(bytes32 paymentId => SchemeRecord) internal _schemeRecords;
    mapping(bytes32 channelId => Channel) internal _channels;
    /// @dev The one open upto ceiling (zero: none); its Permit2 allowance is the wallet's only one.
    bytes32 internal _openCeiling;

    /// @dev What PaymentRules._evaluate read, for _record to write back: the UTC hour, slot 0 and today's spend, the
    /// rolled window word and what the payment adds to it, the lifetime spend, the capped entry (zero: no cap) and its
    /// spend today, and RECORD_IN_* flags.
    struct Charge {
        uint256 hour;
        uint256 spendWord;
        uint256 daySpent;
        uint256 windowWord;
        uint256 windowAdd;
        uint256 lifetime;
        bytes32 entryHash;
        uint256 entrySpent;
        uint256 flags;
    }

    // ---------------------------------------------------------------- views of the stored policy and counts
    /// @notice The current policy.
    function policy() external view returns (Policy memory) {
        Limits memory l = _limits;
        uint256 w = _windowLimits;
        PolicyExtras memory e = _extras;
        return
            Policy(
                l.perTxLimit,
                l.dailyBudget,
                _allowlistRoot,
                l.approvalThreshold,
                _field(w, L_HOUR_SHIFT),
                _field(w, L_WEEK_SHIFT),
                _field(w, L_MONTH_SHIFT),
                _field(w, L_LIFETIME_SHIFT),
                l.maxPaymentsPerHour,
                l.validUntil,
                e.maxSwapSlippageBps,
                e.swapTwapSeconds,
                e.minSwapRate
            );
    }

    /// @inheritdoc ISpendPolicy
    function epoch() external view returns (uint256) {
        return _epochOf(_operatorAndSpend);
    }

    /// @notice How many policies the owner has signed (1 for the first).
    function policyVersion() external view returns (uint256) {
        return _extras.version;
    }

    /// @inheritdoc ISpendPolicy
    function spending() external view returns (Spending memory s) {
        uint256 hour = block.timestamp / 1 hours;
        s.day = _spentOn(_operatorAndSpend, hour / HOURS_PER_DAY);
        Limits memory l = _limits;
        uint256 w = _windowLimits;
        uint256 word = _rollWindows(_windowSpend, hour);
        if (l.maxPaymentsPerHour != 0) s.paymentsThisHour = (word >> W_COUNT_SHIFT) & type(uint16).max;
        if (_field(w, L_HOUR_SHIFT) != 0) s.hour = _field(word, W_HOUR_SHIFT);
        if (_field(w, L_WEEK_SHIFT) != 0) s.week = _field(word, W_WEEK_SHIFT);
        if (_field(w, L_MONTH_SHIFT) != 0) s.month = _field(word, W_MONTH_SHIFT);
        if (_field(w, L_LIFETIME_SHIFT) != 0) s.lifetime = _lifetimeSpent;
    }

    /// @inheritdoc ISpendPolicy
    function entrySpentToday(string calldata entry) external view returns (uint256) {
        uint256 word = _entrySpend[keccak256(bytes(entry))];
        return word & type(uint32).max == block.timestamp / 1 days ? word >> 32 : 0;
    }

    /// @inheritdoc ISpendPolicy
    function spentToday() external view returns (uint256) {
        return _spentOn(_operatorAndSpend, block.timestamp / 1 days);
    }

    /// @inheritdoc ISpendPolicy
    function paymentState(bytes32 paymentId) external view returns (uint8) {
        return uint8(_payments[paymentId] >> RECORD_STATE_SHIFT);
    }

    /// @notice Whether an owner approval with this approvalId has been used.
    function approvalUsed(string calldata approvalId) external view returns (bool) {
        return _approvalsUsed[keccak256(bytes(approvalId))];
    }

    /// @notice What is left of today's budget (0 when the budget was lowered below today's spend).
    function remainingDailyBudget() external view returns (uint256) {
        uint256 budget = _limits.dailyBudget;
        uint256 spent = _spentOn(_operatorAndSpend, block.timestamp / 1 days);
        return budget > spent ? budget - spent : 0;
    }

    // ---------------------------------------------------------------- internal
    /// @dev Kills authorisation `record` of `paymentId` for good (deleting it: the wallet refuses its digest from now
    /// on) and gives its amount back to each window it was counted in, if that window is still the current one (a
    /// payment authorised yesterday leaves today's spend alone). An entry's daily cap keeps it: the record has no room
    /// for the entry, and keeping it can only block more, never less.
    function _release(bytes32 paymentId, uint256 record, uint256 amount) internal {
        delete _payments[paymentId];
        uint256 today = block.timestamp / 1 days;
        uint256 word = _operatorAndSpend;
        uint256 spent = _spentOn(word, today);
        if (((record >> RECORD_HOUR_SHIFT) & type(uint24).max) / HOURS_PER_DAY == today) {
            unchecked {
                spent = spent > amount ? spent - amount : 0;
            }
            _operatorAndSpend = _withSpend(word, today, spent);
        }
        if ((record >> RECORD_FLAGS_SHIFT) & (RECORD_IN_WINDOWS | RECORD_IN_LIFETIME) != 0) _releaseWindows(record, amount);
        emit PaymentReleased(paymentId, address(this), amount, spent);
    }

    /// @dev Takes a released payment out of the optional window counts it was recorded in (RECORD_IN_* flags).
    function _releaseWindows(uint256 record, uint256 amount) internal {
        uint256 flags = record >> RECORD_FLAGS_SHIFT;
        if (flags & RECORD_IN_WINDOWS != 0) {
            uint256 hour = block.timestamp / 1 hours;
            uint256 paidHour = (record >> RECORD_HOUR_SHIFT) & type(uint24).max;
            _windowSpend = _unwind(_rollWindows(_windowSpend, hour), flags, paidHour, hour, amount);
        }
        if (flags & RECORD_IN_LIFETIME != 0) {
            uint256 lifetime = _lifetimeSpent;
            _lifetimeSpent = lifetime > amount ? lifetime - amount : 0;
        }
    }

    /// @dev Takes a released payment authorised in `paidHour` out of the (rolled) window counts still current.
    function _unwind(
        uint256 word,
        uint256 flags,
        uint256 paidHour,
        uint256 hour,
        uint256 amount
    ) internal pure returns (uint256) {
        if (paidHour == hour) {
            if (flags & RECORD_IN_COUNT != 0 && (word >> W_COUNT_SHIFT) & type(uint16).max != 0) {
                word -= 1 << W_COUNT_SHIFT;
            }
            if (flags & RECORD_IN_HOUR != 0) word = _setField(word, W_HOUR_SHIFT, _minus(_field(word, W_HOUR_SHIFT), amount));
        }
        if (flags & RECORD_IN_WEEK != 0 && paidHour / HOURS_PER_WEEK == hour / HOURS_PER_WEEK) {
            word = _setField(word, W_WEEK_SHIFT, _minus(_field(word, W_WEEK_SHIFT), amount));
        }
        if (flags & RECORD_IN_MONTH != 0 && paidHour / HOURS_PER_MONTH == hour / HOURS_PER_MONTH) {
            word = _setField(word, W_MONTH_SHIFT, _minus(_field(word, W_MONTH_SHIFT), amount));
        }
        return word;
    }

    function _minus(uint256 value, uint256 amount) internal pure returns (uint256) {
        return value > amount ? value - amount : 0;
    }

    /// @dev The day is kept mod 2^16: a spend would be read as today's again only after 179 years without a payment.
    function _spentOn(uint256 word, uint256 today) internal pure returns (uint256) {
        return (word >> SPEND_DAY_SHIFT) & type(uint16).max == today & type(uint16).max ? word >> SPEND_AMOUNT_SHIFT : 0;
    }

    function _withSpend(uint256 word, uint256 today, uint256 spent) internal pure returns (uint256) {
        return
            (spent << SPEND_AMOUNT_SHIFT) |
            ((today & type(uint16).max) << SPEND_DAY_SHIFT) |
            (word & OPERATOR_EPOCH_MASK);
    }

    function _epochOf(uint256 word) internal pure returns (uint256) {
        return (word >> EPOCH_SHIFT) & type(uint16).max;
    }

    /// @dev Starts a new authorisation epoch (16 bits, wrapping; see epoch()): the wallet answers for no payment
    /// authorised before.
    function _bumpEpoch() internal {
        uint256 word = _operatorAndSpend;
        uint256 next = (_epochOf(word) + 1) & type(uint16).max;
        _operatorAndSpend = (word & ~(uint256(type(uint16).max) << EPOCH_SHIFT)) | (next << EPOCH_SHIFT);
    }

    /// @dev The window spend word brought up to `hour`: counts of windows that have ended are zero.
    function _rollWindows(uint256 word, uint256 hour) internal pure returns (uint256) {
        uint256 tag = word & type(uint24).max;
        if (tag == hour) return word;
        uint256 rolled = hour;
        if (tag / HOURS_PER_WEEK == hour / HOURS_PER_WEEK) rolled |= word & (U64 << W_WEEK_SHIFT);
        if (tag / HOURS_PER_MONTH == hour / HOURS_PER_MONTH) rolled |= word & (U64 << W_MONTH_SHIFT);
        return rolled;
    }

    /// @dev `(word >> shift) & U64`, a 64-bit field of a packed word.
    function _field(uint256 word, uint256 shift) internal pure returns (uint256) {
        return (word >> shift) & U64;
    }

    /// @dev The word with the 64-bit field at `shift` set to `value` (which fits: callers check or saturate).
    function _setField(uint256 word, uint256 shift, uint256 value) internal pure returns (uint256) {
        return (word & ~(U64 << shift)) | (value << shift);
    }

    /// @dev Owner changes ordered by timestamp: newer than the last of its kind (so no older one can be replayed
    /// over a newer one), near the block time, and signed by the owner. Records the timestamp.
    function _useOrderedSignature(uint8 kind, uint256 timestamp, bytes32 structHash, bytes calldata signature) internal {
        uint256 last = kind == KIND_SET_POLICY ? _lastPolicyTimestamp : kind == KIND_SET_OPERATOR
            ? _lastOperatorTimestamp
            : _lastOwnerTimestamp;
        if (timestamp <= last) revert SpendPolicyStaleTimestamp(timestamp, last);
        _checkWindow(timestamp, SIGNATURE_WINDOW);
        _checkOwnerSignature(_ownerDigest(structHash), signature);
        // Within the window, so far below 2^48.
        if (kind == KIND_SET_POLICY) _lastPolicyTimestamp = uint48(timestamp);
        else if (kind == KIND_SET_OPERATOR) _lastOperatorTimestamp = uint48(timestamp);
        else _lastOwnerTimestamp = uint48(timestamp);
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
