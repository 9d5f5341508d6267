// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {Multicall} from "@openzeppelin/contracts/utils/Multicall.sol";
import {ReentrancyGuard} from "@openzeppelin/contracts/utils/ReentrancyGuard.sol";
import {IDepositCollector} from "../../interfaces/x402/IDepositCollector.sol";
import {IX402BatchSettlement} from "../../interfaces/x402/IX402BatchSettlement.sol";

/// @title x402 batch-settlement channels: sandbox stand-in for the deployed original on Base; never deploy to a real network.
/// @notice SpendGate's own implementation of the channel contract of the x402 `batch-settlement` EVM scheme, placed
/// with hardhat_setCode at the canonical 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003 on the embedded chain only
/// (src/chain/x402Schemes.ts). A channel holds a payer's deposit for one receiver and token. The payer signs
/// cumulative vouchers off-chain; the receiver side claims them (accounting only), `settle` pays out what was claimed,
/// and what was not claimed goes back to the payer by a cooperative refund or, unilaterally, a timed withdrawal.
/// Invariant per channel: totalClaimed <= balance, and every claim is at most a voucher's signed ceiling.
/// @dev Runtime code only (no constructor, no immutables): the EIP-712 domain separator is computed per call, and the
/// reentrancy lock reads its never-set slot (zero) as "not entered".
contract X402BatchSettlement is IX402BatchSettlement, ReentrancyGuard, Multicall {
    using SafeERC20 for IERC20;

    struct ChannelState {
        uint128 balance; // deposited minus refunded and withdrawn; claimed funds stay counted until settled out
        uint128 totalClaimed; // cumulative, only grows
    }

    struct WithdrawalState {
        uint128 amount;
        uint40 initiatedAt; // 0: none pending
    }

    struct ReceiverState {
        uint128 totalClaimed;
        uint128 totalSettled;
    }

    uint40 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint40 public constant MAX_WITHDRAW_DELAY = 30 days;

    bytes32 private constant _DOMAIN_TYPEHASH =
        keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("x402 Batch Settlement");
    bytes32 private constant _VERSION_HASH = keccak256("1");

    bytes32 public constant CHANNEL_CONFIG_TYPEHASH =
        keccak256(
            "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
        );
    bytes32 public constant VOUCHER_TYPEHASH = keccak256("Voucher(bytes32 channelId,uint128 maxClaimableAmount)");
    bytes32 public constant REFUND_TYPEHASH = keccak256("Refund(bytes32 channelId,uint256 nonce,uint128 amount)");
    bytes32 public constant CLAIM_ENTRY_TYPEHASH =
        keccak256("ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");
    bytes32 public constant CLAIM_BATCH_TYPEHASH =
        keccak256("ClaimBatch(ClaimEntry[] claims)ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)");

    /// @notice Balance and cumulative claims of each channel.
    mapping(bytes32 channelId => ChannelState) public channels;
    /// @notice Next nonce a signed refund of the channel must carry; every executed refund advances it.
    mapping(bytes32 channelId => uint256) public refundNonce;
    /// @notice The payer's pending timed withdrawal of each channel.
    mapping(bytes32 channelId => WithdrawalState) public pendingWithdrawals;
    /// @notice Claimed and paid-out totals per receiver and token.
    mapping(address receiver => mapping(address token => ReceiverState)) public receivers;

    error InvalidChannel();
    error WithdrawDelayOutOfRange();
    error ZeroDeposit();
    error InvalidCollector();
    error DepositOverflow();
    error DepositCollectionFailed();
    error EmptyBatch();
    error InvalidSignature();
    error NotReceiverAuthorizer();
    error NotAuthorizedToClaim();
    error NotAuthorizedToRefund();
    error ClaimExceedsCeiling();
    error ClaimExceedsBalance();
    error InvalidRefundNonce();
    error ZeroRefund();
    error NotPayerSide();
    error NothingToWithdraw();
    error WithdrawalAlreadyPending();
    error WithdrawalNotPending();
    error WithdrawAmountExceedsAvailable();
    error WithdrawDelayNotElapsed();

    // ------------------------------------------------------------------------------------------------ deposits

    /// @inheritdoc IX402BatchSettlement
    /// @dev Anyone may submit (the facilitator does); the collector only moves tokens under the payer's signature,
    /// which binds this channel id. The channel is credited only if this contract's balance grew by exactly `amount`.
    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData)
        external
        nonReentrant
    {
        if (
            config.payer == address(0) ||
            config.receiver == address(0) ||
            config.receiverAuthorizer == address(0) ||
            config.token == address(0)
        ) revert InvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert WithdrawDelayOutOfRange();
        }
        if (amount == 0) revert ZeroDeposit();
        if (collector == address(0)) revert InvalidCollector();

        bytes32 channelId = getChannelId(config);
        ChannelState storage ch = channels[channelId];
        if (amount > type(uint128).max - ch.balance) revert DepositOverflow();
        bool opens = ch.balance == 0 && ch.totalClaimed == 0;

        IERC20 token = IERC20(config.token);
        uint256 held = token.balanceOf(address(this));
        IDepositCollector(collector).collect(config.payer, config.token, amount, channelId, collectorData);
        if (token.balanceOf(address(this)) != held + amount) revert DepositCollectionFailed();

        ch.balance += amount;
        if (opens) emit ChannelCreated(channelId, config);
        emit Deposited(channelId, msg.sender, amount, ch.balance);
    }

    // ------------------------------------------------------------------------------------------------ claims

    /// @inheritdoc IX402BatchSettlement
    /// @dev The caller must be the receiver or the receiver authorizer of every row's channel.
    function claim(VoucherClaim[] calldata voucherClaims) external nonReentrant {
        if (voucherClaims.length == 0) revert EmptyBatch();
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            ChannelConfig calldata c = voucherClaims[i].voucher.channel;
            if (msg.sender != c.receiver && msg.sender != c.receiverAuthorizer) revert NotAuthorizedToClaim();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @inheritdoc IX402BatchSettlement
    /// @dev Anyone may relay; every row must share the receiver authorizer that signed the ClaimBatch digest.
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature)
        external
        nonReentrant
    {
        if (voucherClaims.length == 0) revert EmptyBatch();
        address authorizer = voucherClaims[0].voucher.channel.receiverAuthorizer;
        if (!SignatureChecker.isValidSignatureNow(authorizer, getClaimBatchDigest(voucherClaims), authorizerSignature)) {
            revert InvalidSignature();
        }
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            if (voucherClaims[i].voucher.channel.receiverAuthorizer != authorizer) revert NotReceiverAuthorizer();
            _applyClaim(voucherClaims[i]);
        }
    }

    /// @dev A row at or below what was already claimed changes nothing (an old voucher replayed is a no-op).
    function _applyClaim(VoucherClaim calldata row) private {
        bytes32 channelId = getChannelId(row.voucher.channel);
        ChannelState storage ch = channels[channelId];
        uint128 claimed = ch.totalClaimed;
        if (row.totalClaimed <= claimed) return;
        if (row.totalClaimed > row.voucher.maxClaimableAmount) revert ClaimExceedsCeiling();
        if (row.totalClaimed > ch.balance) revert ClaimExceedsBalance();
        _checkVoucherSignature(row, getVoucherDigest(channelId, row.voucher.maxClaimableAmount));

        uint128 delta = row.totalClaimed - claimed;
        ch.totalClaimed = row.totalClaimed;
        receivers[row.voucher.channel.receiver][row.voucher.channel.token].totalClaimed += delta;
        emit Claimed(channelId, msg.sender, delta, row.totalClaimed);
    }

    /// @dev payerAuthorizer set: an ECDSA signature of that key only. Zero: the payer's, ECDSA or ERC-1271.
    function _checkVoucherSignature(VoucherClaim calldata row, bytes32 digest) private view {
        address authorizer = row.voucher.channel.payerAuthorizer;
        bool ok;
        if (authorizer != address(0)) {
            (address recovered, ECDSA.RecoverError err, ) = ECDSA.tryRecoverCalldata(digest, row.signature);
            ok = err == ECDSA.RecoverError.NoError && recovered == authorizer;
        } else {
            ok = SignatureChecker.isValidSignatureNow(row.voucher.channel.payer, digest, row.signature);
        }
        if (!ok) revert InvalidSignature();
    }

    /// @inheritdoc IX402BatchSettlement
    /// @dev Permissionless: pays the receiver everything claimed for it in `token` and not yet paid.
    function settle(address receiver, address token) external nonReentrant {
        ReceiverState storage r = receivers[receiver][token];
        uint128 due = r.totalClaimed - r.totalSettled;
        if (due == 0) return;
        r.totalSettled = r.totalClaimed;
        emit Settled(receiver, token, msg.sender, due);
        IERC20(token).safeTransfer(receiver, due);
    }

    // ------------------------------------------------------------------------------------------------ refunds

    /// @inheritdoc IX402BatchSettlement
    /// @dev Only the receiver or the receiver authorizer.
    function refund(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        if (msg.sender != config.receiver && msg.sender != config.receiverAuthorizer) revert NotAuthorizedToRefund();
        _refund(config, getChannelId(config), amount);
    }

    /// @inheritdoc IX402BatchSettlement
    /// @dev Anyone may relay a Refund(channelId, nonce, amount) signed by the receiver authorizer at the current nonce.
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external nonReentrant {
        bytes32 channelId = getChannelId(config);
        if (nonce != refundNonce[channelId]) revert InvalidRefundNonce();
        if (
            !SignatureChecker.isValidSignatureNow(
                config.receiverAuthorizer,
                getRefundDigest(channelId, nonce, amount),
                receiverAuthorizerSignature
            )
        ) revert InvalidSignature();
        _refund(config, channelId, amount);
    }

    /// @dev The nonce advances on every executed refund, even one capped to nothing (then no event, no transfer).
    /// A pending timed withdrawal shrinks by what was refunded, and ends when the refund covers it.
    function _refund(ChannelConfig calldata config, bytes32 channelId, uint128 amount) private {
        if (amount == 0) revert ZeroRefund();
        ++refundNonce[channelId];
        ChannelState storage ch = channels[channelId];
        uint128 free = ch.balance - ch.totalClaimed;
        uint128 paid = amount < free ? amount : free;
        if (paid == 0) return;
        ch.balance -= paid;

        WithdrawalState storage w = pendingWithdrawals[channelId];
        if (w.initiatedAt != 0) {
            if (paid >= w.amount) delete pendingWithdrawals[channelId];
            else w.amount -= paid;
        }
        emit Refunded(channelId, msg.sender, paid);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
        IERC20(config.token).safeTransfer(config.payer, paid);
    }

    // ------------------------------------------------------------------------------------------------ timed withdrawal

    /// @inheritdoc IX402BatchSettlement
    /// @dev The payer or its authorizer; at most the unclaimed balance; one at a time.
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external nonReentrant {
        _requirePayerSide(config);
        if (amount == 0) revert NothingToWithdraw();
        bytes32 channelId = getChannelId(config);
        WithdrawalState storage w = pendingWithdrawals[channelId];
        if (w.initiatedAt != 0) revert WithdrawalAlreadyPending();
        ChannelState storage ch = channels[channelId];
        if (amount > ch.balance - ch.totalClaimed) revert WithdrawAmountExceedsAvailable();
        w.amount = amount;
        w.initiatedAt = uint40(block.timestamp);
        emit WithdrawInitiated(channelId, amount, uint40(block.timestamp) + config.withdrawDelay);
    }

    /// @inheritdoc IX402BatchSettlement
    /// @dev After the channel's delay; pays what is still unclaimed, up to the requested amount.
    function finalizeWithdraw(ChannelConfig calldata config) external nonReentrant {
        _requirePayerSide(config);
        bytes32 channelId = getChannelId(config);
        WithdrawalState memory w = pendingWithdrawals[channelId];
        if (w.initiatedAt == 0) revert WithdrawalNotPending();
        if (block.timestamp < uint256(w.initiatedAt) + config.withdrawDelay) revert WithdrawDelayNotElapsed();
        delete pendingWithdrawals[channelId];

        ChannelState storage ch = channels[channelId];
        uint128 free = ch.balance - ch.totalClaimed;
        uint128 paid = w.amount < free ? w.amount : free;
        ch.balance -= paid;
        emit WithdrawFinalized(channelId, msg.sender, paid);
        if (ch.balance == 0 && ch.totalClaimed == 0) emit ChannelClosed(channelId, config);
        if (paid > 0) IERC20(config.token).safeTransfer(config.payer, paid);
    }

    function _requirePayerSide(ChannelConfig calldata config) private view {
        if (msg.sender != config.payer && (config.payerAuthorizer == address(0) || msg.sender != config.payerAuthorizer)) {
            revert NotPayerSide();
        }
    }

    // ------------------------------------------------------------------------------------------------ EIP-712

    /// @notice The EIP-712 domain separator ("x402 Batch Settlement", "1", this chain, this address).
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, _VERSION_HASH, block.chainid, address(this)));
    }

    /// @inheritdoc IX402BatchSettlement
    function getChannelId(ChannelConfig calldata config) public view returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(DOMAIN_SEPARATOR(), keccak256(abi.encode(CHANNEL_CONFIG_TYPEHASH, config)));
    }

    /// @inheritdoc IX402BatchSettlement
    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) public view returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(DOMAIN_SEPARATOR(), keccak256(abi.encode(VOUCHER_TYPEHASH, channelId, maxClaimableAmount)));
    }

    /// @inheritdoc IX402BatchSettlement
    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) public view returns (bytes32) {
        return MessageHashUtils.toTypedDataHash(DOMAIN_SEPARATOR(), keccak256(abi.encode(REFUND_TYPEHASH, channelId, nonce, amount)));
    }

    /// @inheritdoc IX402BatchSettlement
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) public view returns (bytes32) {
        bytes32[] memory entries = new bytes32[](voucherClaims.length);
        for (uint256 i = 0; i < voucherClaims.length; ++i) {
            VoucherClaim calldata row = voucherClaims[i];
            entries[i] = keccak256(
                abi.encode(CLAIM_ENTRY_TYPEHASH, getChannelId(row.voucher.channel), row.voucher.maxClaimableAmount, row.totalClaimed)
            );
        }
        return MessageHashUtils.toTypedDataHash(DOMAIN_SEPARATOR(), keccak256(abi.encode(CLAIM_BATCH_TYPEHASH, keccak256(abi.encodePacked(entries)))));
    }
}
