// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title SpendGate spend policy: types, errors and events shared by the policy, its factory and the service.
/// @notice One SpendPolicy per agent wallet. Amounts are USDC base units (6 decimals). Merchants are normalised
/// host names; the allowlist is the root of an OpenZeppelin StandardMerkleTree over ["string"] leaves, each leaf an
/// exact host, "*.domain" (any subdomain of domain, not domain itself) or "*" (any merchant). A zero root allows
/// nothing.
interface ISpendPolicy {
    // ---------------------------------------------------------------- types
    enum Decision {
        Allow,
        RequiresApproval,
        Block
    }

    /// @dev Reason codes of PaymentBlocked and checkPayment. 0 means no reason (allowed or needs approval).
    /// 1 merchant_not_allowed, 2 per_tx_limit_exceeded, 3 daily_budget_exceeded, 4 policy_paused, 5 approval_required.
    struct Policy {
        uint256 perTxLimit;
        uint256 dailyBudget;
        bytes32 allowlistRoot;
        uint256 approvalThreshold;
    }

    /// @dev The owner's EIP-712 ApprovalDecision with action "approve". An empty signature means "no approval".
    /// `amount` is the amount the owner signed; a payment may be for that amount or less, never more.
    struct OwnerApproval {
        string approvalId;
        uint256 amount;
        uint256 timestamp;
        bytes signature;
    }

    // ---------------------------------------------------------------- errors
    error SpendPolicyUnauthorizedOperator(address caller);
    error SpendPolicyInvalidSignature();
    error SpendPolicyStaleTimestamp(uint256 timestamp, uint256 lastTimestamp);
    error SpendPolicyTimestampOutOfWindow(uint256 timestamp, uint256 blockTimestamp);
    error SpendPolicyPaymentExists(bytes32 paymentId);
    error SpendPolicyUnknownPayment(bytes32 paymentId);
    error SpendPolicyInvalidPolicy();
    error SpendPolicyZeroAddress();
    error SpendPolicyAlreadyDeployed(address agent, address policy);
    error SpendPolicyUnauthorizedDeployer(address caller);

    // ---------------------------------------------------------------- events (the auditors' interface: fixed)
    event PaymentAuthorized(
        bytes32 indexed paymentId,
        address indexed agent,
        string merchant,
        uint256 amount,
        uint256 spentToday
    );
    event PaymentBlocked(bytes32 indexed paymentId, address indexed agent, string merchant, uint256 amount, uint8 reason);
    event PaymentReleased(bytes32 indexed paymentId, address indexed agent, uint256 amount);
    event PolicyUpdated(
        address indexed agent,
        uint256 perTxLimit,
        uint256 dailyBudget,
        bytes32 allowlistRoot,
        uint256 approvalThreshold,
        uint256 timestamp
    );
    event PausedSet(address indexed agent, bool paused);
    event OperatorSet(address indexed agent, address operator);

    // ---------------------------------------------------------------- external
    /// @notice Operator only. Authorises a payment: adds it to the day's spend and emits PaymentAuthorized, or emits
    /// PaymentBlocked and returns without reverting when a rule fails. Reverts only for a reused paymentId or a
    /// caller that is not the operator.
    function authorizePayment(
        bytes32 paymentId,
        string calldata merchant,
        string calldata allowlistLeaf,
        bytes32[] calldata proof,
        uint256 amount,
        OwnerApproval calldata ownerApproval
    ) external returns (bool authorized, uint8 reason);

    /// @notice Operator only. Gives an authorised payment's amount back to the day's budget (settlement failed).
    function releasePayment(bytes32 paymentId) external;

    /// @notice Anyone may relay: the owner's EIP-712 SetPolicy signature authorises the change.
    function updatePolicy(Policy calldata policy, uint256 timestamp, bytes calldata signature) external;

    /// @notice Anyone may relay: the owner's EIP-712 SetPaused signature authorises the change.
    function setPaused(bool paused, uint256 timestamp, bytes calldata signature) external;

    /// @notice Anyone may relay: the owner's EIP-712 SetOperator signature authorises the change.
    function setOperator(address operator, uint256 timestamp, bytes calldata signature) external;

    // ---------------------------------------------------------------- view
    /// @notice What authorizePayment would decide now, with no state change (no approval considered).
    function checkPayment(
        string calldata merchant,
        string calldata allowlistLeaf,
        bytes32[] calldata proof,
        uint256 amount
    ) external view returns (Decision decision, uint8 reason);

    function agent() external view returns (address);
    function owner() external view returns (address);
    function operator() external view returns (address);
    function paused() external view returns (bool);
    function policy() external view returns (Policy memory);
    /// @notice The amount spent in the current UTC day (block.timestamp / 1 days).
    function spentToday() external view returns (uint256);
    function remainingDailyBudget() external view returns (uint256);
    /// @notice Last accepted signature timestamp per kind: 0 SetPolicy, 1 SetPaused, 2 SetOperator.
    function lastTimestamp(uint8 kind) external view returns (uint256);
    /// @notice 0 unknown, 1 authorised, 2 released.
    function paymentState(bytes32 paymentId) external view returns (uint8);
    function approvalUsed(string calldata approvalId) external view returns (bool);
    /// @notice The EIP-712 digest the owner signs for each kind (helps wallets and the service agree byte for byte).
    function domainSeparator() external view returns (bytes32);
}

/// @title Deploys one SpendPolicy per agent with CREATE2 (salt from the agent address).
interface ISpendPolicyFactory {
    event PolicyDeployed(address indexed agent, address indexed owner, address policy);
    event DefaultOperatorSet(address operator);

    /// @notice The address the agent's policy has, or will have once deployed.
    function predictPolicyAddress(address agent) external view returns (address);

    /// @notice Default operator only. Deploys the agent's policy; the owner's SetPolicy signature (domain: the
    /// predicted address) authorises the first policy.
    function deployPolicy(
        address agent,
        address owner,
        ISpendPolicy.Policy calldata policy,
        uint256 timestamp,
        bytes calldata signature
    ) external returns (address policy_);

    function policyOf(address agent) external view returns (address);
    function defaultOperator() external view returns (address);
}
