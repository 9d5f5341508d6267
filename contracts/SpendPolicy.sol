// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title What a SpendPolicy reads from its deployer while it is constructed.
/// @notice The Uniswap v3 "parameters" pattern: the policy's init code takes no arguments, so its CREATE2 address
/// depends only on the factory and the agent, and owners can sign for it before it exists.
interface ISpendPolicyDeployer {
    /// @notice The agent, owner and operator of the policy being deployed (only meaningful during deployPolicy).
    function parameters() external view returns (address agent, address owner, address operator);
}

/// @title SpendGate spend policy of one agent wallet.
/// @notice Gates every payment of the agent: the service's operator asks `authorizePayment` before any value moves,
/// and the owner's EIP-712 signatures (EOA or ERC-1271) are the only way to change the policy.
/// @dev Deployed by SpendPolicyFactory with CREATE2. A payment of amount 0 is judged by the same rules as any
/// other (it passes every limit), so it is authorised when the merchant is allowed and the policy is not paused.
contract SpendPolicy is ISpendPolicy, EIP712 {
    // ---------------------------------------------------------------- constants
    /// @notice How far (either side of block.timestamp) an owner's SetPolicy, SetPaused or SetOperator may be.
    uint256 public constant SIGNATURE_WINDOW = 15 minutes;
    /// @notice How far (either side of block.timestamp) an owner's ApprovalDecision may be: the service relays it
    /// after fetching the merchant's quote again.
    uint256 public constant APPROVAL_WINDOW = 1 hours;

    uint8 private constant KIND_SET_POLICY = 0;
    uint8 private constant KIND_SET_PAUSED = 1;
    uint8 private constant KIND_SET_OPERATOR = 2;

    uint8 private constant REASON_MERCHANT_NOT_ALLOWED = 1;
    uint8 private constant REASON_PER_TX_LIMIT_EXCEEDED = 2;
    uint8 private constant REASON_DAILY_BUDGET_EXCEEDED = 3;
    uint8 private constant REASON_POLICY_PAUSED = 4;
    uint8 private constant REASON_APPROVAL_REQUIRED = 5;

    uint8 private constant STATE_AUTHORIZED = 1;
    uint8 private constant STATE_RELEASED = 2;

    bytes32 private constant SET_POLICY_TYPEHASH =
        keccak256(
            "SetPolicy(address agent,uint256 perTxLimit,uint256 dailyBudget,bytes32 allowlistRoot,uint256 approvalThreshold,uint256 timestamp)"
        );
    bytes32 private constant SET_PAUSED_TYPEHASH = keccak256("SetPaused(address agent,bool paused,uint256 timestamp)");
    bytes32 private constant SET_OPERATOR_TYPEHASH =
        keccak256("SetOperator(address agent,address operator,uint256 timestamp)");
    bytes32 private constant APPROVAL_DECISION_TYPEHASH =
        keccak256(
            "ApprovalDecision(string action,string approvalId,address agent,string merchant,uint256 amount,uint256 timestamp)"
        );
    bytes32 private constant ACTION_APPROVE_HASH = keccak256("approve");

    // Bit layout of the packed words below (legacy codegen writes a storage struct member by member; one word is one
    // SSTORE). Daily spend: amount in bits 0-95, day in bits 96-255. Payment record: amount in bits 0-95, day in bits
    // 96-159, state in bits 160-167.
    uint256 private constant AMOUNT_MASK = type(uint96).max;
    uint256 private constant DAY_SHIFT = 96;
    uint256 private constant STATE_SHIFT = 160;

    // ---------------------------------------------------------------- storage
    /// @dev Read together by every payment.
    struct Limits {
        uint96 dailyBudget;
        uint96 approvalThreshold;
        bool paused;
    }

    address private immutable _factory;
    address private immutable _agent;
    address private immutable _owner;

    // Slot 0: the operator check and the per-transaction limit share one SLOAD.
    address private _operator;
    uint96 private _perTxLimit;
    // Slot 1.
    Limits private _limits;
    // Slot 2.
    bytes32 private _allowlistRoot;
    // Slot 3: the day's spend (day, amount), reset lazily on the first payment of a new day. Never zero once
    // initialised, so a day's first payment pays for a reset, not for a new slot.
    uint256 private _dailySpend;
    // Slot 4: last accepted owner signature timestamp per kind.
    uint64[3] private _lastTimestamps;

    mapping(bytes32 paymentId => uint256 record) private _payments;
    mapping(bytes32 approvalIdHash => bool) private _approvalsUsed;

    // ---------------------------------------------------------------- modifiers
    modifier onlyOperator() {
        _checkOperator();
        _;
    }

    modifier onlyFactory() {
        _checkFactory();
        _;
    }

    // ---------------------------------------------------------------- constructor
    constructor() EIP712("SpendGate", "1") {
        (address agent_, address owner_, address operator_) = ISpendPolicyDeployer(msg.sender).parameters();
        _factory = msg.sender;
        _agent = agent_;
        _owner = owner_;
        _operator = operator_;
        emit OperatorSet(agent_, operator_);
    }

    // ---------------------------------------------------------------- external
    /// @notice Factory only, once: sets the first policy, authorised by the owner's SetPolicy signature whose
    /// domain is this (then predicted) address. Its timestamp becomes lastTimestamp(0).
    function initialize(Policy calldata firstPolicy, uint256 timestamp, bytes calldata signature) external onlyFactory {
        if (_lastTimestamps[KIND_SET_POLICY] != 0) revert SpendPolicyAlreadyDeployed(_agent, address(this));
        _dailySpend = (block.timestamp / 1 days) << DAY_SHIFT;
        _setPolicy(firstPolicy, timestamp, signature);
    }

    /// @notice Operator only. Authorises a payment: adds it to the day's spend and emits PaymentAuthorized, or emits
    /// PaymentBlocked and returns (false, reason) without reverting or storing anything when a rule fails.
    /// @dev `ownerApproval` is only read (and its approvalId only consumed) when the amount is above the threshold.
    /// A blocked paymentId is not recorded, so it may be submitted again later.
    function authorizePayment(
        bytes32 paymentId,
        string calldata merchant,
        string calldata allowlistLeaf,
        bytes32[] calldata proof,
        uint256 amount,
        OwnerApproval calldata ownerApproval
    ) external onlyOperator returns (bool authorized, uint8 reason) {
        if (_payments[paymentId] != 0) revert SpendPolicyPaymentExists(paymentId);
        uint256 today = block.timestamp / 1 days;
        uint256 spent;
        (reason, spent) = _evaluate(merchant, allowlistLeaf, proof, amount, today);
        if (reason == REASON_APPROVAL_REQUIRED && _useApproval(merchant, amount, ownerApproval)) reason = 0;
        if (reason != 0) {
            emit PaymentBlocked(paymentId, _agent, merchant, amount, reason);
            return (false, reason);
        }
        // _evaluate passed: spent + amount <= dailyBudget <= type(uint96).max, so both fit their 96 bits.
        unchecked {
            spent += amount;
        }
        _dailySpend = (today << DAY_SHIFT) | spent;
        _payments[paymentId] = (uint256(STATE_AUTHORIZED) << STATE_SHIFT) | (today << DAY_SHIFT) | amount;
        emit PaymentAuthorized(paymentId, _agent, merchant, amount, spent);
        return (true, 0);
    }

    /// @notice Operator only. Gives an authorised payment's amount back to today's budget (settlement failed). A
    /// payment of an earlier day is marked released without touching today's spend.
    function releasePayment(bytes32 paymentId) external onlyOperator {
        uint256 record = _payments[paymentId];
        if (record >> STATE_SHIFT != STATE_AUTHORIZED) revert SpendPolicyUnknownPayment(paymentId);
        _payments[paymentId] = (uint256(STATE_RELEASED) << STATE_SHIFT) | uint160(record);
        uint256 amount = record & AMOUNT_MASK;
        uint256 today = block.timestamp / 1 days;
        if (uint160(record) >> DAY_SHIFT == today) {
            uint256 spend = _dailySpend;
            if (spend >> DAY_SHIFT == today) {
                uint256 spent = spend & AMOUNT_MASK;
                unchecked {
                    spent = spent > amount ? spent - amount : 0;
                }
                _dailySpend = (today << DAY_SHIFT) | spent;
            }
        }
        emit PaymentReleased(paymentId, _agent, amount);
    }

    /// @notice Anyone may relay: the owner's EIP-712 SetPolicy signature authorises the change. Every value must fit
    /// in 96 bits (SpendPolicyInvalidPolicy otherwise).
    function updatePolicy(Policy calldata newPolicy, uint256 timestamp, bytes calldata signature) external {
        _setPolicy(newPolicy, timestamp, signature);
    }

    /// @notice Anyone may relay: the owner's EIP-712 SetPaused signature authorises the change.
    function setPaused(bool paused_, uint256 timestamp, bytes calldata signature) external {
        _useOwnerSignature(
            KIND_SET_PAUSED,
            timestamp,
            keccak256(abi.encode(SET_PAUSED_TYPEHASH, _agent, paused_, timestamp)),
            signature
        );
        _limits.paused = paused_;
        emit PausedSet(_agent, paused_);
    }

    /// @notice Anyone may relay: the owner's EIP-712 SetOperator signature authorises the change.
    function setOperator(address operator_, uint256 timestamp, bytes calldata signature) external {
        if (operator_ == address(0)) revert SpendPolicyZeroAddress();
        _useOwnerSignature(
            KIND_SET_OPERATOR,
            timestamp,
            keccak256(abi.encode(SET_OPERATOR_TYPEHASH, _agent, operator_, timestamp)),
            signature
        );
        _operator = operator_;
        emit OperatorSet(_agent, operator_);
    }

    // ---------------------------------------------------------------- view
    /// @notice What authorizePayment would decide now, with no state change (no approval considered).
    function checkPayment(
        string calldata merchant,
        string calldata allowlistLeaf,
        bytes32[] calldata proof,
        uint256 amount
    ) external view returns (Decision decision, uint8 reason) {
        (reason, ) = _evaluate(merchant, allowlistLeaf, proof, amount, block.timestamp / 1 days);
        if (reason == 0) return (Decision.Allow, 0);
        if (reason == REASON_APPROVAL_REQUIRED) return (Decision.RequiresApproval, reason);
        return (Decision.Block, reason);
    }

    /// @notice The agent wallet this policy gates.
    function agent() external view returns (address) {
        return _agent;
    }

    /// @notice The owner whose signatures (EOA or ERC-1271) change the policy and approve payments.
    function owner() external view returns (address) {
        return _owner;
    }

    /// @notice The account allowed to authorise and release payments (the service's relayer).
    function operator() external view returns (address) {
        return _operator;
    }

    /// @notice The factory that deployed this policy.
    function factory() external view returns (address) {
        return _factory;
    }

    /// @notice Whether every payment is blocked (reason 4).
    function paused() external view returns (bool) {
        return _limits.paused;
    }

    /// @notice The current policy.
    function policy() external view returns (Policy memory) {
        Limits memory limits = _limits;
        return Policy(_perTxLimit, limits.dailyBudget, _allowlistRoot, limits.approvalThreshold);
    }

    /// @notice The amount spent in the current UTC day (block.timestamp / 1 days).
    function spentToday() external view returns (uint256) {
        return _spentOn(block.timestamp / 1 days);
    }

    /// @notice What is left of today's budget (0 when the budget was lowered below today's spend).
    function remainingDailyBudget() external view returns (uint256) {
        uint256 budget = _limits.dailyBudget;
        uint256 spent = _spentOn(block.timestamp / 1 days);
        return budget > spent ? budget - spent : 0;
    }

    /// @notice Last accepted signature timestamp per kind: 0 SetPolicy, 1 SetPaused, 2 SetOperator (0 for others).
    function lastTimestamp(uint8 kind) external view returns (uint256) {
        return kind <= KIND_SET_OPERATOR ? _lastTimestamps[kind] : 0;
    }

    /// @notice 0 unknown, 1 authorised, 2 released.
    function paymentState(bytes32 paymentId) external view returns (uint8) {
        return uint8(_payments[paymentId] >> STATE_SHIFT);
    }

    /// @notice Whether an owner approval with this approvalId has been used.
    function approvalUsed(string calldata approvalId) external view returns (bool) {
        return _approvalsUsed[keccak256(bytes(approvalId))];
    }

    /// @notice The EIP-712 domain separator of this policy ({name "SpendGate", version "1", chainId, this}).
    function domainSeparator() external view returns (bytes32) {
        return _domainSeparatorV4();
    }

    // ---------------------------------------------------------------- internal
    function _checkOperator() internal view {
        if (msg.sender != _operator) revert SpendPolicyUnauthorizedOperator(msg.sender);
    }

    function _checkFactory() internal view {
        if (msg.sender != _factory) revert SpendPolicyUnauthorizedDeployer(msg.sender);
    }

    /// @dev The rules in order. Returns the reason (0 allowed, 5 needs approval) and, once the daily rule has been
    /// reached, the amount spent today before this payment (storage is read only as far as needed).
    function _evaluate(
        string calldata merchant,
        string calldata leaf,
        bytes32[] calldata proof,
        uint256 amount,
        uint256 today
    ) private view returns (uint8 reason, uint256 spent) {
        Limits memory limits = _limits;
        if (limits.paused) return (REASON_POLICY_PAUSED, 0);
        if (!_merchantAllowed(merchant, leaf, proof)) return (REASON_MERCHANT_NOT_ALLOWED, 0);
        if (amount > _perTxLimit) return (REASON_PER_TX_LIMIT_EXCEEDED, 0);
        spent = _spentOn(today);
        // amount <= perTxLimit and spent <= dailyBudget at the time: both below 2^96, no overflow.
        unchecked {
            if (spent + amount > limits.dailyBudget) return (REASON_DAILY_BUDGET_EXCEEDED, spent);
        }
        if (amount > limits.approvalThreshold) return (REASON_APPROVAL_REQUIRED, spent);
        return (0, spent);
    }

    function _spentOn(uint256 today) private view returns (uint256) {
        uint256 spend = _dailySpend;
        return spend >> DAY_SHIFT == today ? spend & AMOUNT_MASK : 0;
    }

    /// @dev The leaf is in the allowlist (a zero root allows nothing) and admits the merchant.
    function _merchantAllowed(
        string calldata merchant,
        string calldata leaf,
        bytes32[] calldata proof
    ) private view returns (bool) {
        bytes32 root = _allowlistRoot;
        if (root == 0 || !_leafMatches(bytes(leaf), bytes(merchant))) return false;
        // OpenZeppelin StandardMerkleTree leaf of ["string"]: double keccak of the ABI encoding.
        bytes32 leafHash = keccak256(bytes.concat(keccak256(abi.encode(leaf))));
        return MerkleProof.verifyCalldata(proof, root, leafHash);
    }

    /// @dev Same rule as leafMatches() in src/policy/allowlist.ts: "*" admits any merchant, "*.domain" any merchant
    /// ending in ".domain" and longer than it (so not "domain" itself), anything else only itself. An empty
    /// merchant is never admitted.
    function _leafMatches(bytes calldata leaf, bytes calldata merchant) private pure returns (bool) {
        uint256 merchantLength = merchant.length;
        if (merchantLength == 0) return false;
        uint256 leafLength = leaf.length;
        if (leafLength != 0 && leaf[0] == "*") {
            if (leafLength == 1) return true;
            if (leaf[1] == ".") {
                // suffix = leaf[1:], ".domain"; merchant must be strictly longer.
                uint256 suffixLength = leafLength - 1;
                if (merchantLength <= suffixLength) return false;
                return keccak256(merchant[merchantLength - suffixLength:]) == keccak256(leaf[1:]);
            }
        }
        return merchantLength == leafLength && keccak256(merchant) == keccak256(leaf);
    }

    /// @dev Checks and consumes the owner's approval of a payment above the threshold. Any failure returns false
    /// (the payment is then blocked with approval_required), never reverts.
    function _useApproval(
        string calldata merchant,
        uint256 amount,
        OwnerApproval calldata approval
    ) private returns (bool) {
        if (approval.signature.length == 0) return false;
        if (amount > approval.amount) return false;
        if (!_withinWindow(approval.timestamp, APPROVAL_WINDOW)) return false;
        bytes32 idHash = keccak256(bytes(approval.approvalId));
        if (_approvalsUsed[idHash]) return false;
        bytes32 structHash = keccak256(
            abi.encode(
                APPROVAL_DECISION_TYPEHASH,
                ACTION_APPROVE_HASH,
                idHash,
                _agent,
                keccak256(bytes(merchant)),
                approval.amount,
                approval.timestamp
            )
        );
        if (!SignatureChecker.isValidSignatureNowCalldata(_owner, _hashTypedDataV4(structHash), approval.signature)) {
            return false;
        }
        _approvalsUsed[idHash] = true;
        return true;
    }

    function _setPolicy(Policy calldata newPolicy, uint256 timestamp, bytes calldata signature) private {
        _useOwnerSignature(
            KIND_SET_POLICY,
            timestamp,
            keccak256(
                abi.encode(
                    SET_POLICY_TYPEHASH,
                    _agent,
                    newPolicy.perTxLimit,
                    newPolicy.dailyBudget,
                    newPolicy.allowlistRoot,
                    newPolicy.approvalThreshold,
                    timestamp
                )
            ),
            signature
        );
        if (
            newPolicy.perTxLimit > type(uint96).max ||
            newPolicy.dailyBudget > type(uint96).max ||
            newPolicy.approvalThreshold > type(uint96).max
        ) revert SpendPolicyInvalidPolicy();
        _perTxLimit = uint96(newPolicy.perTxLimit);
        _limits = Limits(uint96(newPolicy.dailyBudget), uint96(newPolicy.approvalThreshold), _limits.paused);
        _allowlistRoot = newPolicy.allowlistRoot;
        emit PolicyUpdated(
            _agent,
            newPolicy.perTxLimit,
            newPolicy.dailyBudget,
            newPolicy.allowlistRoot,
            newPolicy.approvalThreshold,
            timestamp
        );
    }

    /// @dev Replay protection of the owner's changes: newer than the last of its kind, near the block time, and
    /// signed by the owner. Records the timestamp.
    function _useOwnerSignature(
        uint8 kind,
        uint256 timestamp,
        bytes32 structHash,
        bytes calldata signature
    ) private {
        uint256 last = _lastTimestamps[kind];
        if (timestamp <= last) revert SpendPolicyStaleTimestamp(timestamp, last);
        if (!_withinWindow(timestamp, SIGNATURE_WINDOW)) {
            revert SpendPolicyTimestampOutOfWindow(timestamp, block.timestamp);
        }
        if (!SignatureChecker.isValidSignatureNowCalldata(_owner, _hashTypedDataV4(structHash), signature)) {
            revert SpendPolicyInvalidSignature();
        }
        // Within the window, so far below 2^64.
        _lastTimestamps[kind] = uint64(timestamp);
    }

    function _withinWindow(uint256 timestamp, uint256 window) private view returns (bool) {
        return
            timestamp > block.timestamp ? timestamp - block.timestamp <= window : block.timestamp - timestamp <= window;
    }
}
