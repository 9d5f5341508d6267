// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title IX402BatchSettlement: the x402 `batch-settlement` channel contract as the x402 EVM packages call it.
/// @notice Canonical address 0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003. EIP-712 domain "x402 Batch Settlement",
/// version "1", chain id and that address. `channelId` is the EIP-712 hash of a ChannelConfig under that domain.
/// Vouchers are cumulative: `Voucher(bytes32 channelId,uint128 maxClaimableAmount)`, signed by `payerAuthorizer`
/// (ECDSA) or, when it is zero, by `payer` (ECDSA or ERC-1271).
interface IX402BatchSettlement {
    /// @notice Immutable channel parameters; their EIP-712 hash is the channel id.
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// @notice A payer-signed cumulative ceiling for one channel.
    struct Voucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// @notice A voucher, its signature, and the cumulative amount the receiver side claims with it.
    struct VoucherClaim {
        Voucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    event ChannelCreated(bytes32 indexed channelId, ChannelConfig config);
    event ChannelClosed(bytes32 indexed channelId, ChannelConfig config);
    event Deposited(bytes32 indexed channelId, address indexed sender, uint128 amount, uint128 newBalance);
    event Claimed(bytes32 indexed channelId, address indexed sender, uint128 claimAmount, uint128 newTotalClaimed);
    event Settled(address indexed receiver, address indexed token, address indexed sender, uint128 amount);
    event Refunded(bytes32 indexed channelId, address indexed sender, uint128 amount);
    event WithdrawInitiated(bytes32 indexed channelId, uint128 amount, uint40 finalizeAfter);
    event WithdrawFinalized(bytes32 indexed channelId, address indexed sender, uint128 amount);

    function deposit(ChannelConfig calldata config, uint128 amount, address collector, bytes calldata collectorData) external;
    function claim(VoucherClaim[] calldata voucherClaims) external;
    function claimWithSignature(VoucherClaim[] calldata voucherClaims, bytes calldata authorizerSignature) external;
    function settle(address receiver, address token) external;
    function initiateWithdraw(ChannelConfig calldata config, uint128 amount) external;
    function finalizeWithdraw(ChannelConfig calldata config) external;
    function refund(ChannelConfig calldata config, uint128 amount) external;
    function refundWithSignature(
        ChannelConfig calldata config,
        uint128 amount,
        uint256 nonce,
        bytes calldata receiverAuthorizerSignature
    ) external;

    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);
    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt);
    function receivers(address receiver, address token) external view returns (uint128 totalClaimed, uint128 totalSettled);
    function refundNonce(bytes32 channelId) external view returns (uint256);
    function getChannelId(ChannelConfig calldata config) external view returns (bytes32);
    function getVoucherDigest(bytes32 channelId, uint128 maxClaimableAmount) external view returns (bytes32);
    function getRefundDigest(bytes32 channelId, uint256 nonce, uint128 amount) external view returns (bytes32);
    function getClaimBatchDigest(VoucherClaim[] calldata voucherClaims) external view returns (bytes32);
}
