// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title The x402 schemes beyond exact on a SpendGate agent wallet: batch-settlement channels and upto ceilings.
/// @notice Called on the agent's address (SpendPolicy forwards them to SpendPolicySchemes by delegatecall); types,
/// errors and events are in ISpendPolicy (SchemePayment, SchemeCredited). Each authorisation meets exactly the checks of
/// authorizePayment (pause, expiry, allowlist, payee, per-tx limit, velocity, every budget window, the entry's cap,
/// approval above the threshold) and is logged as PaymentAuthorized or PaymentBlocked followed by SchemePayment.
/// What comes back is credited once, to the windows the deposit or ceiling was counted in (PaymentReleased, then
/// SchemeCredited), and only as far as chain state proves it came back.
interface ISpendPolicySchemes {
    /// @notice Operator only. Authorises one deposit of `deposit.amount` into channel `config` (payer this wallet,
    /// payerAuthorizer 0, token USDC, receiver checked as a payment's payTo) through the ERC-3009 deposit collector:
    /// the wallet then answers ERC-1271 for exactly that ReceiveWithAuthorization, and for the channel's Vouchers
    /// (any cumulative amount: the channel contract bounds claims by its balance) while the epoch is the current one.
    /// Blocked: PaymentBlocked + SchemePayment(authorized false), no revert. Reverts for a reused paymentId, an
    /// impossible deposit or channel (SpendPolicyInvalidChannel; a withdrawDelay outside MIN_WITHDRAW_DELAY..
    /// MAX_WITHDRAW_DELAY: SpendPolicyWithdrawDelayOutOfRange), or while the channel's previous deposit authorisation
    /// is unused. Before it is recorded, what came back from the channel since its previous deposit and is not credited
    /// yet is settled: credited (as creditChannel would) to that previous deposit, at most its amount, and the rest
    /// written off (it refills no window), so later credits draw only on money that comes back after this deposit.
    function authorizeDeposit(
        bytes32 paymentId,
        string calldata merchant,
        ISpendPolicy.Leaf calldata leaf,
        bytes32[] calldata proof,
        ISpendPolicy.ChannelConfig calldata config,
        ISpendPolicy.ChannelDeposit calldata deposit,
        ISpendPolicy.OwnerApproval calldata ownerApproval
    ) external returns (bool authorized, ISpendPolicy.BlockReason reason);

    /// @notice Operator only. Authorises one upto ceiling: the wallet approves Permit2 for exactly `ceiling.amount`
    /// USDC and answers ERC-1271 for exactly that PermitWitnessTransferFrom (spender the upto proxy). One open ceiling
    /// at a time (reverts SpendPolicyCeilingOpen). Blocked: as authorizeDeposit.
    function authorizeCeiling(
        bytes32 paymentId,
        string calldata merchant,
        ISpendPolicy.Leaf calldata leaf,
        bytes32[] calldata proof,
        ISpendPolicy.Ceiling calldata ceiling,
        ISpendPolicy.OwnerApproval calldata ownerApproval
    ) external returns (bool authorized, ISpendPolicy.BlockReason reason);

    /// @notice Operator only. Credits deposit `paymentId` with what of its channel came back and is not credited yet:
    /// (all deposits authorised for the channel) - (the channel's balance) - (credited or written off before), at most
    /// the deposit's amount. Since every deposit settles what came back before it, this is money that came back after
    /// the channel's latest deposit, so after `paymentId` was counted: it lowers only the windows `paymentId` was
    /// counted in that are still current (the invariant: in every window, USDC out of the wallet less that window's
    /// own credits stays within its budget). The channel's unused latest deposit authorisation, if any, dies first (it can never land, so it counts
    /// as come back). Once per deposit; returns the amount credited.
    function creditChannel(bytes32 paymentId) external returns (uint256 credited);

    /// @notice Operator only. Closes the open ceiling `paymentId` (the wallet no longer signs its permit) and credits
    /// the Permit2 allowance left (ceiling minus what was settled), which it then sets to 0. Returns the credit.
    function creditCeiling(bytes32 paymentId) external returns (uint256 credited);

    /// @notice Operator or owner. Starts the wallet's timed withdrawal (the channel contract's `initiateWithdraw`, as
    /// the channel's payer) of everything unclaimed in channel `config`, one the wallet authorised a deposit into
    /// (else SpendPolicyUnknownChannel): for a seller that never refunds. The seller may still claim vouchers during
    /// the channel's `withdrawDelay`. Emits ChannelWithdrawal(finalized false); returns the amount asked for. Reverts
    /// as the channel does: nothing unclaimed, or a withdrawal already pending. Works while paused (money only comes
    /// back to the wallet).
    function withdrawChannel(ISpendPolicy.ChannelConfig calldata config) external returns (uint256 amount);

    /// @notice Operator or owner. Finishes the channel's pending withdrawal once its `withdrawDelay` has passed (the
    /// channel contract's `finalizeWithdraw`): the channel pays what is still unclaimed of the amount asked for to the
    /// wallet. Emits ChannelWithdrawal(finalized true) and returns what was paid back; creditChannel then credits it
    /// to the budget windows like a refund.
    function finishChannelWithdraw(ISpendPolicy.ChannelConfig calldata config) external returns (uint256 paid);

    /// @notice ERC-1271 for a channel Voucher (SpendPolicy.isValidSignature sends 129-byte signatures here):
    /// `signature` is channelId (32), maxClaimableAmount (32), then the signing key's r, s, v of `digest`. Valid when
    /// `digest` is that Voucher's under the channel contract's domain and the channel had a deposit authorised in the
    /// current epoch.
    function isValidVoucherSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4);

    /// @notice A channel as the wallet counts it: deposits authorised (USDC base units), what came back and was settled
    /// (credited to a deposit, or written off when a later deposit found it), the epoch of its latest deposit
    /// (vouchers are answered only while it is current) and that deposit's paymentId.
    function channelState(
        bytes32 channelId
    ) external view returns (uint256 deposited, uint256 credited, uint256 epoch, bytes32 latestDeposit);

    /// @notice The open upto ceiling (zero: none).
    function openCeiling() external view returns (bytes32 paymentId);

    /// @notice The channel id of `config` (its EIP-712 hash under the channel contract's domain).
    function channelIdOf(ISpendPolicy.ChannelConfig calldata config) external view returns (bytes32);

    /// @notice The USDC ReceiveWithAuthorization digest of a deposit of this wallet into `channelId`.
    function depositDigest(bytes32 channelId, ISpendPolicy.ChannelDeposit calldata deposit) external view returns (bytes32);

    /// @notice The Permit2 PermitWitnessTransferFrom digest of ceiling `ceiling` of this wallet.
    function ceilingDigest(ISpendPolicy.Ceiling calldata ceiling) external view returns (bytes32);
}
