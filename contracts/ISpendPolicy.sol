// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title SpendGate agent wallet and spend policy: types, errors and events shared by the contracts and the service.
/// @notice One contract per agent, at the agent's address: it holds the agent's funds and is the only thing that can
/// let them out. USDC leaves it in exactly these ways: (1) an EIP-3009 `transferWithAuthorization` whose digest this
/// policy authorised with `authorizePayment` (the wallet answers ERC-1271 for that digest alone, signed by the agent's
/// signing key); (2) an x402 batch-settlement channel deposit, the EIP-3009 `receiveWithAuthorization` to the deposit
/// collector that `authorizeDeposit` authorised, after which the channel pays its receiver against the wallet's
/// Vouchers (answered only for that channel, in the epoch of its latest deposit) and no more than the deposits;
/// (3) an x402 upto ceiling, the Permit2 witness transfer `authorizeCeiling` authorised (and approved Permit2 for);
/// (4) an owner-signed EIP-712 `Withdraw`. (2) and (3) are ISpendPolicySchemes, served by SpendPolicySchemes through
/// the wallet's fallback; they meet exactly the checks of (1), and what comes back is credited by `creditChannel` and
/// `creditCeiling` as far as chain state proves it. Amounts are USDC base units (6 decimals). Merchants are
/// normalised host names. The owner signs the allowlist in clear (SetPolicy's Merchant[]: entry, daily cap, payee);
/// the contract derives from those entries, and only from them, the root of an OpenZeppelin StandardMerkleTree over
/// [entry, dailyCap, payee] leaves (["string","uint256","address"]) that payments prove against. Each entry is an exact host,
/// "*.domain" (any subdomain of domain, not domain itself) or "*" (any merchant), and a payee other than 0 the only
/// address a payment admitted by that leaf may pay. An empty list allows nothing.
interface ISpendPolicy {
    // ---------------------------------------------------------------- types
    /// @notice What checkPayment decides.
    enum Decision {
        Allow,
        RequiresApproval,
        Block
    }

    /// @notice Why a payment was refused (PaymentBlocked.reason, checkPayment's reason).
    /// None: allowed. MerchantNotAllowed (1): the merchant is not in the owner-signed allowlist.
    /// PerTxLimitExceeded (2): the amount is above the per-payment limit. DailyBudgetExceeded (3): today's spend plus
    /// the amount would pass the daily budget (UTC day). PolicyPaused (4): the owner paused the agent.
    /// ApprovalRequired (5): the amount is above the approval threshold and no valid owner approval came with it.
    /// VelocityExceeded (6): the agent already made maxPaymentsPerHour payments this UTC hour.
    /// PolicyExpired (7): the policy's validUntil has passed; every payment is blocked until the owner signs another.
    /// HourlyBudgetExceeded (8): this UTC hour's spend plus the amount would pass the hourly budget.
    /// WeeklyBudgetExceeded (9): this 7-day window's spend (weeks of the Unix epoch, from Thursday 00:00 UTC) plus the
    /// amount would pass the weekly budget. MonthlyBudgetExceeded (10): the same over 30-day windows of the epoch.
    /// LifetimeBudgetExceeded (11): everything authorised while a lifetime budget was set, plus the amount, would
    /// pass it. MerchantBudgetExceeded (12): today's spend under the allowlist entry that admitted the merchant plus
    /// the amount would pass that entry's daily cap. SwapSlippageExceeded (13): the swap that was to buy the payment's
    /// USDC shortfall was refused by the router within the owner-signed TWAP bound (price moved past
    /// maxSwapSlippageBps or below minSwapRate, or the wallet's WETH and ETH could not pay it); the authorisation was
    /// released with it. PayeeNotAllowed (14): the allowlist leaf that admits the merchant names a payee, and the
    /// payment's payTo is another address (the seller changed where it is paid, or the operator tried to pay itself).
    enum BlockReason {
        None,
        MerchantNotAllowed,
        PerTxLimitExceeded,
        DailyBudgetExceeded,
        PolicyPaused,
        ApprovalRequired,
        VelocityExceeded,
        PolicyExpired,
        HourlyBudgetExceeded,
        WeeklyBudgetExceeded,
        MonthlyBudgetExceeded,
        LifetimeBudgetExceeded,
        MerchantBudgetExceeded,
        SwapSlippageExceeded,
        PayeeNotAllowed
    }

    /// @notice The policy as stored (policy()): SignedPolicy with the allowlist's root in place of its entries. Each
    /// amount fits in 64 bits,
    /// maxPaymentsPerHour in 16, validUntil and swapTwapSeconds in 32, maxSwapSlippageBps is at most 10,000
    /// (SpendPolicyInvalidPolicy). Windows are fixed and aligned to the Unix epoch (UTC): hour = t / 3600,
    /// day = t / 86400, week = t / 604800, 30 days = t / 2592000. 0 means "no such limit" for the optional fields.
    /// @param perTxLimit the largest single payment
    /// @param dailyBudget the most that may be authorised per UTC day
    /// @param allowlistRoot the StandardMerkleTree root of the allowed merchants (zero: none), derived by the contract
    /// from the signed Merchant[] as [entry, dailyCap, payee] leaves (["string","uint256","address"])
    /// @param approvalThreshold payments above it need the owner's ApprovalDecision
    /// @param hourlyBudget the most per UTC hour (0: none)
    /// @param weeklyBudget the most per 7-day window (0: none)
    /// @param monthlyBudget the most per 30-day window (0: none)
    /// @param lifetimeBudget the most in total, over the payments authorised while one is set (0: none)
    /// @param maxPaymentsPerHour the most payments per UTC hour (0: none)
    /// @param validUntil Unix time after which every payment is blocked (0: never)
    /// @param maxSwapSlippageBps the most a swap before settlement may pay above the pool's TWAP price plus its fee,
    /// in basis points (0: swaps off)
    /// @param swapTwapSeconds the TWAP period of a swap's price bound (0: swaps off)
    /// @param minSwapRate the lowest price a swap accepts, in USDC base units per 1 WETH (10^18 wei), whatever the
    /// pool's TWAP says (0: no floor); fits in 64 bits
    struct Policy {
        uint256 perTxLimit;
        uint256 dailyBudget;
        bytes32 allowlistRoot;
        uint256 approvalThreshold;
        uint256 hourlyBudget;
        uint256 weeklyBudget;
        uint256 monthlyBudget;
        uint256 lifetimeBudget;
        uint256 maxPaymentsPerHour;
        uint256 validUntil;
        uint256 maxSwapSlippageBps;
        uint256 swapTwapSeconds;
        uint256 minSwapRate;
    }

    /// @notice One allowlist entry as the owner signs it (EIP-712 `Merchant`, inside SetPolicy): a normalised host,
    /// "*.domain" or "*"; its daily cap (USDC base units, 0: none; fits in 64 bits); its payee (0: any); and whether
    /// the service must see the seller's signed offer before paying under it (x402 offer-receipt). The contract
    /// enforces the first three; `requireSignedOffer` is a rule only the service keeps (a contract cannot verify a
    /// seller's JWS), signed so that the owner's wallet shows it and an auditor reads it in PolicyUpdated.
    struct Merchant {
        string entry;
        uint256 dailyCap;
        address payee;
        bool requireSignedOffer;
    }

    /// @notice The policy as the owner signs it (EIP-712 SetPolicy, version 4, fields in its order, without agent and
    /// timestamp): Policy's fields with the allowlist in clear (`merchants`, at most MAX_MERCHANTS, in strictly
    /// ascending byte order of entry) where Policy holds its root. The contract stores the root it derives from
    /// `merchants` (Policy.allowlistRoot), so nobody can sign one list and have another enforced. A list where an entry
    /// with payee 0 admits a pinned entry (`*.example.com` over a pinned `api.example.com`) is refused: it would undo
    /// the pin (SpendPolicyMerchantOverlap).
    struct SignedPolicy {
        uint256 perTxLimit;
        uint256 dailyBudget;
        Merchant[] merchants;
        uint256 approvalThreshold;
        uint256 hourlyBudget;
        uint256 weeklyBudget;
        uint256 monthlyBudget;
        uint256 lifetimeBudget;
        uint256 maxPaymentsPerHour;
        uint256 validUntil;
        uint256 maxSwapSlippageBps;
        uint256 swapTwapSeconds;
        uint256 minSwapRate;
    }

    /// @notice The allowlist leaf that admits a merchant: its entry ("host", "*.domain" or "*"), its daily cap (0: none)
    /// and its payee (0: any), exactly as the owner signed it in a Merchant. Proved against the root as
    /// [entry, dailyCap, payee].
    struct Leaf {
        string entry;
        uint256 dailyCap;
        address payee;
    }

    /// @notice What has been counted in each window now (fixed UTC windows; a window with no limit in the policy
    /// is not counted and reads 0, except the day, which is always counted).
    struct Spending {
        uint256 hour;
        uint256 paymentsThisHour;
        uint256 day;
        uint256 week;
        uint256 month;
        uint256 lifetime;
    }

    /// @notice The one EIP-3009 transfer a payment authorises (from is always this wallet, nonce the paymentId).
    struct Transfer {
        address payTo;
        uint256 amount;
        uint256 validAfter;
        uint256 validBefore;
    }

    /// @notice Uniswap v3 for swaps before settlement, fixed in the implementation (all zero: no swaps).
    struct SwapConfig {
        address router;
        address weth;
        address uniswapFactory;
    }

    /// @notice The owner's EIP-712 ApprovalDecision with action "approve". An empty signature means "no approval".
    /// `amount` is the amount the owner signed; a payment may be for that amount or less, never more, and only to the
    /// payTo the owner signed (the payment's transfer.payTo is what the signature is checked against).
    struct OwnerApproval {
        string approvalId;
        uint256 amount;
        uint256 timestamp;
        bytes signature;
    }

    /// @notice How a payment pays (SchemePayment.scheme): Exact, one EIP-3009 transfer (authorizePayment);
    /// BatchSettlement, an x402 batch-settlement channel deposit (SpendPolicySchemes.authorizeDeposit), after which
    /// the wallet answers ERC-1271 for the channel's cumulative Vouchers; Upto, an x402 upto ceiling, one Permit2
    /// PermitWitnessTransferFrom to the upto proxy (SpendPolicySchemes.authorizeCeiling).
    enum Scheme {
        Exact,
        BatchSettlement,
        Upto
    }

    /// @notice An x402 batch-settlement channel (its EIP-712 hash under the channel contract's domain is the channel
    /// id). The wallet deposits only into channels it pays from (payer this wallet, payerAuthorizer 0 so vouchers need
    /// its ERC-1271, token USDC) to a receiver the policy admits (the leaf's payee, when set).
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// @notice One deposit into a channel through the ERC-3009 deposit collector: USDC ReceiveWithAuthorization from
    /// this wallet to the collector of `amount`, nonce keccak256(abi.encode(channelId, nonceSalt)).
    struct ChannelDeposit {
        uint256 amount;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonceSalt;
    }

    /// @notice An upto ceiling: Permit2 PermitWitnessTransferFrom of at most `amount` USDC from this wallet, spender
    /// the x402 upto proxy, witness (payTo, facilitator, validAfter); the seller settles what was used.
    struct Ceiling {
        address payTo;
        address facilitator;
        uint256 amount;
        uint256 nonce;
        uint256 deadline;
        uint256 validAfter;
    }

    // ---------------------------------------------------------------- errors
    error SpendPolicyUnauthorizedOperator(address caller);
    error SpendPolicyInvalidSignature();
    error SpendPolicyStaleTimestamp(uint256 timestamp, uint256 lastTimestamp);
    error SpendPolicyTimestampOutOfWindow(uint256 timestamp, uint256 blockTimestamp);
    error SpendPolicySignatureUsed(bytes32 digest);
    error SpendPolicyPaymentExists(bytes32 paymentId);
    error SpendPolicyUnknownPayment(bytes32 paymentId);
    error SpendPolicyPaymentSettled(bytes32 paymentId);
    error SpendPolicyInvalidTransfer();
    error SpendPolicyInvalidPolicy();
    error SpendPolicyZeroAddress();
    /// @notice The wallet itself as new owner, operator or withdrawal recipient: it could never sign, relay or receive.
    error SpendPolicySelfAddress();
    /// @notice A resume signed for another epoch than the current one (a later pause or owner change came between).
    error SpendPolicyStaleEpoch(uint256 signedEpoch, uint256 epoch);
    error SpendPolicyAlreadyDeployed(address agent);
    error SpendPolicyUnauthorizedDeployer(address caller);
    error SpendPolicyWithdrawFailed(address token, address to, uint256 amount);
    /// @notice Swaps are off: no Uniswap on this deployment, the policy's maxSwapSlippageBps or swapTwapSeconds is 0,
    /// or the agent is paused.
    error SpendPolicySwapsDisabled();
    /// @notice The wallet already holds the payment's USDC (nothing to buy), or this payment's swap already happened.
    error SpendPolicyNoShortfall(bytes32 paymentId);
    /// @notice The router reported success but the USDC did not arrive, or it took more than the bound.
    error SpendPolicySwapFailed(bytes32 paymentId);
    /// @notice A channel the wallet does not pay from alone: payer not this wallet, a payerAuthorizer (it would sign
    /// vouchers instead of the wallet), another token, or a receiver that is 0 or this wallet.
    error SpendPolicyInvalidChannel();
    /// @notice The channel's latest deposit authorisation is still unused: one pending deposit per channel at a time
    /// (so a credit can tell what came back).
    error SpendPolicyDepositPending(bytes32 channelId, bytes32 pendingPaymentId);
    /// @notice The wallet's timed withdrawal from this channel is in progress: no deposit goes in until it is finished,
    /// so what it brings back is credited to the deposits it was asked for, never to a later one (whose day it would refill).
    error SpendPolicyChannelWithdrawing(bytes32 channelId);
    /// @notice Another upto ceiling is still open (one at a time: its Permit2 allowance is what proves the unsettled
    /// part).
    error SpendPolicyCeilingOpen(bytes32 openPaymentId);
    /// @notice Not an authorised deposit or ceiling of this wallet, or already credited.
    error SpendPolicyUnknownSchemePayment(bytes32 paymentId);
    /// @notice Nothing of the channel's deposits came back that has not been credited already.
    error SpendPolicyNothingToCredit(bytes32 paymentId);
    /// @notice The wallet never authorised a deposit into this channel (withdrawChannel, finishChannelWithdraw).
    error SpendPolicyUnknownChannel(bytes32 channelId);
    /// @notice Neither the operator (or a member of its OperatorSet) nor the owner.
    error SpendPolicyNotOperatorOrOwner(address caller);
    /// @notice A signed policy with more allowlist entries than MAX_MERCHANTS.
    error SpendPolicyTooManyMerchants(uint256 count, uint256 max);
    /// @notice Allowlist entry `index` is empty, or not strictly after the one before it in byte order (entries are
    /// signed sorted, so each appears once).
    error SpendPolicyMerchantsNotSorted(uint256 index);
    /// @notice Signed entry `index` is no normalised host name: "*", or a host ("*." before it for its subdomains) of
    /// lower-case ASCII letters, digits, hyphens and dots, not ending in a dot. A wallet shows each entry as text: an
    /// entry it could show as another's (an invisible or upper-case twin) could otherwise carry a payee of its own.
    error SpendPolicyMerchantNotHostName(uint256 index);
    /// @notice Allowlist entry `anyPayeeIndex` (payee 0: any payee) admits entry `pinnedIndex`, which names a payee:
    /// the wildcard would let a payment under it pay anyone, undoing the pin.
    error SpendPolicyMerchantOverlap(uint256 anyPayeeIndex, uint256 pinnedIndex);
    /// @notice A channel whose withdrawDelay is outside MIN_WITHDRAW_DELAY..MAX_WITHDRAW_DELAY: a deposit there could
    /// be locked away from the wallet's own withdrawal for longer than the policy allows.
    error SpendPolicyWithdrawDelayOutOfRange(uint256 withdrawDelay);
    /// @notice Only the wallet runs this, by delegatecall (SpendPolicySchemes and SpendPolicyUpdates hold no state).
    error SpendPolicyDelegateOnly();

    // ---------------------------------------------------------------- events (the auditors' interface: fixed)
    /// @notice A payment was authorised: exactly one EIP-3009 transfer of `amount` USDC from `agent` to `payTo`,
    /// nonce `paymentId`, valid from `validAfter` until `validBefore`, may now settle while the authorisation epoch is
    /// still `epoch`. The amount counts against today's budget. The allowlist leaf that admitted it ([entry,
    /// dailyCap, payee]) is in the event, so caps and payee rules can be replayed from events alone, and the
    /// transfer can be rebuilt (and released) from it.
    /// @param paymentId the payment's id, also the EIP-3009 nonce
    /// @param agent the agent wallet (this contract)
    /// @param merchantHash keccak256 of the merchant string
    /// @param merchant the merchant host name the service paid
    /// @param payTo the address the transfer pays
    /// @param amount USDC base units
    /// @param validAfter Unix time before which the transfer cannot settle
    /// @param validBefore Unix time after which the transfer can no longer settle
    /// @param spentToday the day's spend including this payment
    /// @param epoch the authorisation epoch (see epoch()); the wallet answers only while it is still current
    /// @param leafEntry the allowlist entry that admitted the merchant
    /// @param leafDailyCap that entry's daily cap (0: none)
    /// @param leafPayee that entry's payee (0: any)
    event PaymentAuthorized(
        bytes32 indexed paymentId,
        address indexed agent,
        bytes32 indexed merchantHash,
        string merchant,
        address payTo,
        uint256 amount,
        uint256 validAfter,
        uint256 validBefore,
        uint256 spentToday,
        uint256 epoch,
        string leafEntry,
        uint256 leafDailyCap,
        address leafPayee
    );
    /// @notice A payment was refused by the policy; no value moved.
    /// @param paymentId the refused payment's id (not reserved: it is never settled)
    /// @param agent the agent wallet
    /// @param merchantHash keccak256 of the merchant string
    /// @param merchant the merchant host name
    /// @param amount USDC base units asked for
    /// @param reason 1 merchant_not_allowed, 2 per_tx_limit_exceeded, 3 daily_budget_exceeded, 4 policy_paused,
    /// 5 approval_required, 6 velocity_exceeded, 7 policy_expired, 8 hourly_budget_exceeded,
    /// 9 weekly_budget_exceeded, 10 monthly_budget_exceeded, 11 lifetime_budget_exceeded, 12 merchant_budget_exceeded,
    /// 13 swap_slippage_exceeded (emitted by swapForPayment for an authorised payment, whose merchant is then the one
    /// the operator names: auditors match it with PaymentAuthorized of the same paymentId; PaymentReleased follows),
    /// 14 payee_not_allowed
    /// @param leafEntry the allowlist entry of the leaf the operator presented and the policy judged ("" when none was
    /// presented, and for reason 13, where the judged leaf is in the PaymentAuthorized of the same paymentId)
    /// @param leafDailyCap that leaf's daily cap (0: none, or no leaf)
    /// @param leafPayee that leaf's payee (0: any, or no leaf)
    event PaymentBlocked(
        bytes32 indexed paymentId,
        address indexed agent,
        bytes32 indexed merchantHash,
        string merchant,
        uint256 amount,
        BlockReason reason,
        string leafEntry,
        uint256 leafDailyCap,
        address leafPayee
    );
    /// @notice An authorised payment that never settled was released: its transfer can never settle now, and its
    /// amount went back to every window it was counted in that is still current (hour, day, week, 30 days,
    /// lifetime); an entry's daily cap is not given back. Also emitted, just before SchemeCredited, for the part of a
    /// channel deposit or upto ceiling that came back (`amount` is that part, not the whole).
    /// @param spentToday today's spend after the release
    event PaymentReleased(bytes32 indexed paymentId, address indexed agent, uint256 amount, uint256 spentToday);
    /// @notice Payment `paymentId` was voided before any authorisation of it landed: it can never be authorised (nor
    /// settled) now. The service voids a payment whose authorisation an interrupted run may or may not have sent, so
    /// that its outcome is certain at once: failed, nothing paid, nothing counted against the budget.
    event PaymentVoided(bytes32 indexed paymentId, address indexed agent);
    /// @notice The owner's approval `approvalId` (for up to `approvedAmount`, signed at `timestamp`) authorised payment
    /// `paymentId`; it can never be used again. `signature` is the owner's ApprovalDecision (action "approve", the
    /// merchant and payTo of the PaymentAuthorized of the same paymentId): an auditor recovers the signer from it.
    event ApprovalUsed(
        bytes32 indexed paymentId,
        address indexed agent,
        string approvalId,
        uint256 approvedAmount,
        uint256 timestamp,
        bytes signature
    );
    /// @notice The wallet bought `amountOut` USDC (exactly the shortfall of payment `paymentId`) for `amountIn` WETH
    /// through the configured SwapRouter02, within the owner-signed TWAP bound. `tokenIn` is WETH, or 0x0 when some of
    /// it was the wallet's ETH, wrapped for this swap.
    event SwapExecuted(bytes32 indexed paymentId, address indexed agent, address tokenIn, uint256 amountIn, uint256 amountOut);
    /// @notice The authorisation or refusal just logged for `paymentId` (PaymentAuthorized or PaymentBlocked, same
    /// transaction, just before) is for `scheme`: for BatchSettlement `ref` is the channel id and the amount the
    /// deposit (payTo the channel's receiver, validAfter/validBefore the ReceiveWithAuthorization's); for Upto `ref` is
    /// the Permit2 digest the wallet now signs and the amount the ceiling (payTo the witness's `to`, validBefore the
    /// permit's deadline). Auditors count these amounts like any payment until SchemeCredited gives some back.
    event SchemePayment(bytes32 indexed paymentId, Scheme indexed scheme, bytes32 indexed ref, bool authorized);
    /// @notice `amount` of deposit or ceiling `paymentId` came back to the wallet (a refunded or never-made channel
    /// deposit, the unsettled part of a ceiling) and was credited to the windows it was counted in, those still current
    /// (PaymentReleased of the same paymentId, just before, carries the day's spend after it); money that comes back
    /// after its window closed refills no window. Once per paymentId: its record is gone. A channel's credits only
    /// draw on money that came back after the channel's latest deposit: each new deposit first settles what came back
    /// before it (credited to the deposit before it, this event in the new deposit's transaction; any rest refills
    /// nothing), so money from an earlier window can never refill a later one.
    /// @param returned for a channel, all of the channel's deposits that are back in the wallet (deposited minus the
    /// channel's balance); for a ceiling, the Permit2 allowance left
    event SchemeCredited(
        bytes32 indexed paymentId,
        Scheme indexed scheme,
        bytes32 indexed ref,
        uint256 amount,
        uint256 returned
    );
    /// @notice The wallet, as the channel's payer, started (`finalized` false: `amount` is the unclaimed balance it
    /// asked for, WithdrawInitiated of the channel contract in the same transaction) or finished (`finalized` true:
    /// `amount` is what the channel paid back to the wallet) its timed withdrawal from channel `channelId`, called by
    /// `caller` (the operator or the owner). No budget changes here: creditChannel credits what came back, as for a
    /// refund (SchemeCredited).
    event ChannelWithdrawal(bytes32 indexed channelId, address indexed caller, uint256 amount, bool finalized);
    /// Owner actions: each event carries the owner's EIP-712 signature, so an auditor recovers the signer from the log
    /// itself. Every PolicyUpdated (the first included), every PausedSet with paused true, and every OperatorSet and
    /// OwnerSet with a timestamp other than 0 (not the deployment's) starts a new authorisation epoch (epoch()).

    /// @notice The owner signed (at `timestamp`) policy number `version` (1 for the first): `policy` is exactly what
    /// she signed (SetPolicy's fields, the allowlist in clear), `allowlistRoot` what the contract derived from its
    /// merchants and now enforces. An auditor rebuilds the SetPolicy digest from this event alone.
    event PolicyUpdated(
        address indexed agent,
        uint256 indexed version,
        SignedPolicy policy,
        bytes32 allowlistRoot,
        uint256 timestamp,
        bytes signature
    );
    /// @notice The owner paused (every payment blocked, reason 4; every earlier authorisation dead) or resumed the
    /// agent, signed at `timestamp` with SetPaused's `epoch` (for a resume, the epoch it resumed).
    event PausedSet(address indexed agent, bool paused, uint256 epoch, uint256 timestamp, bytes signature);
    /// @notice The account that may authorise and release payments (the service's relayer); timestamp 0 and no
    /// signature when set at deployment, otherwise the owner's signed SetOperator.
    event OperatorSet(address indexed agent, address operator, uint256 timestamp, bytes signature);
    /// @notice Ownership passed to `owner` (signed by the previous owner at `timestamp`; 0 and no signature at
    /// deployment).
    event OwnerSet(address indexed agent, address indexed owner, uint256 timestamp, bytes signature);
    /// @notice The owner withdrew `amount` of `token` (0x0: ETH) to `to`, signed at `timestamp`.
    event Withdrawn(
        address indexed agent,
        address indexed token,
        address to,
        uint256 amount,
        uint256 timestamp,
        bytes signature
    );

    // ---------------------------------------------------------------- external
    /// @notice Operator only. Authorises one payment: records exactly the EIP-3009 transfer `transfer` with nonce
    /// `paymentId` under the current epoch (merchant admitted by allowlist leaf `leaf`, whose payee, when not 0, must
    /// be transfer.payTo), adds it to every window's spend and emits PaymentAuthorized; or emits PaymentBlocked and
    /// returns without reverting when a rule fails. Reverts only for a reused or voided paymentId, an impossible
    /// transfer or a caller that is not the operator.
    function authorizePayment(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        Transfer calldata transfer,
        OwnerApproval calldata ownerApproval
    ) external returns (bool authorized, BlockReason reason);

    /// @notice Operator only. Releases an authorised payment whose nonce USDC has not used: the transfer can never
    /// settle from then on, and its amount returns to the budget. Reverts for a settled or unknown payment.
    function releasePayment(bytes32 paymentId, Transfer calldata transfer) external;

    /// @notice Operator only. Voids `paymentId`, which has no record (never authorised, or released): from then on
    /// every authorizePayment of it reverts (SpendPolicyPaymentExists), so no transfer with that nonce can ever be
    /// authorised or settled. Emits PaymentVoided. Reverts with SpendPolicyPaymentExists when it has a record
    /// (authorised, settled or void): paymentState then tells which.
    function voidUnrecordedPayment(bytes32 paymentId) external;

    /// @notice Operator only. Buys exactly the USDC shortfall of authorised, unreleased, unsettled payment `paymentId`
    /// (its transfer's amount minus the wallet's USDC) with the wallet's WETH (then its ETH, wrapped as needed)
    /// through the configured SwapRouter02's exactOutputSingle in the USDC/WETH 0.05% pool, spending at most the
    /// TWAP bound of the owner-signed maxSwapSlippageBps and swapTwapSeconds (SwapBound). Emits SwapExecuted and
    /// returns true; when the router refuses, emits PaymentBlocked (13, swap_slippage_exceeded), releases the payment
    /// (PaymentReleased) and returns false, with nothing spent. Once per payment.
    function swapForPayment(bytes32 paymentId, string calldata merchant, Transfer calldata transfer) external returns (bool swapped);

    /// @notice Anyone may relay: the owner's EIP-712 SetPolicy signature (version 4: the allowlist in clear) authorises
    /// the change. The contract stores the allowlist root it derives from `policy.merchants`. Served by
    /// SpendPolicyUpdates through the wallet's fallback.
    function updatePolicy(SignedPolicy calldata policy, uint256 timestamp, bytes calldata signature) external;

    /// @notice Anyone may relay: the owner's EIP-712 SetPaused signature. A pause signed within the window always
    /// takes effect (whatever epoch it names) and starts a new epoch; a resume must be newer than every pause and
    /// resume before it and name the current epoch, so a resume signed before a later pause can never undo it.
    function setPaused(bool paused, uint256 epoch, uint256 timestamp, bytes calldata signature) external;

    /// @notice Anyone may relay: the owner's EIP-712 SetOperator signature authorises the change.
    function setOperator(address operator, uint256 timestamp, bytes calldata signature) external;

    /// @notice Anyone may relay: the current owner's EIP-712 SetOwner signature hands ownership over.
    function setOwner(address newOwner, uint256 timestamp, bytes calldata signature) external;

    /// @notice Anyone may relay: the owner's EIP-712 Withdraw signature moves `amount` of `token` (0x0: ETH) to `to`.
    /// Works while paused. Each signature works once.
    function withdraw(address token, address to, uint256 amount, uint256 timestamp, bytes calldata signature) external;

    // ---------------------------------------------------------------- view
    /// @notice What authorizePayment would decide now for `amount` to `payTo`, with no state change (no approval
    /// considered).
    function checkPayment(
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        address payTo,
        uint256 amount
    ) external view returns (Decision decision, BlockReason reason);

    function agent() external view returns (address);
    function signingKey() external view returns (address);
    function owner() external view returns (address);
    function operator() external view returns (address);
    function paused() external view returns (bool);
    /// @notice The authorisation epoch (16 bits, wrapping): pause, setOperator, setOwner and updatePolicy each start a
    /// new one, and the wallet answers ERC-1271 only for payments authorised in the current one. Wrapping is harmless:
    /// an authorisation lives at most MAX_VALIDITY (1 hour), and an hour holds far fewer than 65,536 owner actions
    /// (each ordered kind needs a new second within the 15-minute signature window; pauses a digest each).
    function epoch() external view returns (uint256);
    function policy() external view returns (Policy memory);
    function policyVersion() external view returns (uint256);
    /// @notice The amount spent in the current UTC day (block.timestamp / 1 days).
    function spentToday() external view returns (uint256);
    function remainingDailyBudget() external view returns (uint256);
    /// @notice What is counted now in each window (see Spending); the service shows budget minus this.
    function spending() external view returns (Spending memory);
    /// @notice Today's spend under allowlist entry `entry` (the leaf's string), counted only when it has a cap.
    function entrySpentToday(string calldata entry) external view returns (uint256);
    /// @notice Last accepted signature timestamp per kind: 0 SetPolicy, 1 SetPaused, 2 SetOperator, 3 SetOwner.
    function lastTimestamp(uint8 kind) external view returns (uint256);
    /// @notice 1 while a payment (or a channel deposit, or an upto ceiling) is authorised and not released (settled or
    /// not); 2 once voided (voidUnrecordedPayment); 3 for a channel deposit whose unused authorisation a credit killed
    /// (not yet credited itself); 0 for an unknown, released or credited one (a release deletes the record: the authorisation
    /// is dead, and its paymentId could only be authorised again, in the open).
    function paymentState(bytes32 paymentId) external view returns (uint8);
    function approvalUsed(string calldata approvalId) external view returns (bool);
    /// @notice The SwapRouter02, WETH and Uniswap v3 factory of swaps (all zero: this deployment has no swaps).
    function swapConfig() external view returns (address router, address weth, address uniswapFactory);
    /// @notice Whether `signature` is the owner's over the EIP-712 struct `structHash` in this policy's domain, by the
    /// same check every owner action uses (EOA, ERC-1271 or EIP-7702 account).
    function isValidOwnerSignature(bytes32 structHash, bytes calldata signature) external view returns (bool);
    /// @notice The EIP-712 domain separator of this policy ({name "SpendGate", version "1", chainId, this}).
    function domainSeparator() external view returns (bytes32);
}
