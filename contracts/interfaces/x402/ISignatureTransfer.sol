// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title ISignatureTransfer: the part of Uniswap's Permit2 that x402 uses (signature transfers with a witness).
/// @notice The published interface (Permit2 at 0x000000000022D473030F116dDEE9F6B43aC78BA3 on every chain), written
/// out here so SpendGate's contracts and its sandbox stand-in (contracts/test/x402/Permit2.sol) share one shape.
/// EIP-712 domain: EIP712Domain(string name,uint256 chainId,address verifyingContract) with name "Permit2" (no version).
interface ISignatureTransfer {
    /// @notice A token and the most the signer lets the spender move.
    struct TokenPermissions {
        address token;
        uint256 amount;
    }

    /// @notice What the owner signs (the spender is msg.sender of the transfer, bound by the signature).
    struct PermitTransferFrom {
        TokenPermissions permitted;
        uint256 nonce;
        uint256 deadline;
    }

    /// @notice Where the tokens go and how many, chosen by the spender at transfer time (at most `permitted.amount`).
    struct SignatureTransferDetails {
        address to;
        uint256 requestedAmount;
    }

    /// @notice `deadline` has passed.
    error SignatureExpired(uint256 signatureDeadline);
    /// @notice The requested amount is above the signed `permitted.amount`.
    error InvalidAmount(uint256 maxAmount);
    /// @notice The unordered nonce was already used or invalidated.
    error InvalidNonce();
    /// @notice The signature is malformed (not 64 or 65 bytes, or unrecoverable) for an owner with no code.
    error InvalidSignature();
    /// @notice The ECDSA signature recovers to someone other than the owner.
    error InvalidSigner();
    /// @notice The owner is a contract and its ERC-1271 answer was not the magic value.
    error InvalidContractSignature();

    /// @notice Emitted when an owner invalidates nonces of its own.
    event UnorderedNonceInvalidation(address indexed owner, uint256 word, uint256 mask);

    /// @notice The EIP-712 domain separator (computed from the current chain id and this address).
    function DOMAIN_SEPARATOR() external view returns (bytes32);

    /// @notice Bitmap of used nonces: bit `nonce & 0xff` of word `nonce >> 8`.
    function nonceBitmap(address owner, uint256 wordPos) external view returns (uint256);

    /// @notice Marks the nonces in `mask` of word `wordPos` used for the caller.
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external;

    /// @notice Moves tokens from `owner` with its signature of a PermitTransferFrom naming msg.sender as spender.
    function permitTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes calldata signature
    ) external;

    /// @notice As permitTransferFrom, with extra data (`witness`, of type `witnessTypeString`) bound by the signature.
    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external;
}
