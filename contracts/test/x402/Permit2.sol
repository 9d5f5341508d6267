// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISignatureTransfer} from "../../interfaces/x402/ISignatureTransfer.sol";

/// @title Permit2 (signature transfers): sandbox stand-in for the deployed original on Base; never deploy to a real network.
/// @notice SpendGate's own implementation of the published ISignatureTransfer interface, placed with hardhat_setCode at
/// the canonical 0x000000000022D473030F116dDEE9F6B43aC78BA3 on the embedded chain only (src/chain/x402Schemes.ts).
/// @dev Runtime code only: no constructor, no immutables; the domain separator is computed per call. The signer is
/// checked as Permit2 does: an owner with no code by ECDSA (65 or 64-byte compact), an owner with code by ERC-1271.
/// Allowance transfers (IAllowanceTransfer) are not here: no x402 flow calls them.
contract Permit2 is ISignatureTransfer {
    using SafeERC20 for IERC20;

    bytes32 private constant _DOMAIN_TYPEHASH = keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)");
    bytes32 private constant _NAME_HASH = keccak256("Permit2");
    bytes32 public constant TOKEN_PERMISSIONS_TYPEHASH = keccak256("TokenPermissions(address token,uint256 amount)");
    bytes32 public constant PERMIT_TRANSFER_FROM_TYPEHASH =
        keccak256(
            "PermitTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline)TokenPermissions(address token,uint256 amount)"
        );
    /// @dev The witness type string completes this prefix: "<Type> witness)<referenced types, sorted>".
    string private constant _WITNESS_PREFIX =
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,";

    /// @notice Used nonces: bit `nonce & 0xff` of word `nonce >> 8`.
    mapping(address owner => mapping(uint256 wordPos => uint256 bits)) public nonceBitmap;

    /// @inheritdoc ISignatureTransfer
    function DOMAIN_SEPARATOR() public view returns (bytes32) {
        return keccak256(abi.encode(_DOMAIN_TYPEHASH, _NAME_HASH, block.chainid, address(this)));
    }

    /// @inheritdoc ISignatureTransfer
    function invalidateUnorderedNonces(uint256 wordPos, uint256 mask) external {
        nonceBitmap[msg.sender][wordPos] |= mask;
        emit UnorderedNonceInvalidation(msg.sender, wordPos, mask);
    }

    /// @inheritdoc ISignatureTransfer
    function permitTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes calldata signature
    ) external {
        bytes32 structHash = keccak256(
            abi.encode(PERMIT_TRANSFER_FROM_TYPEHASH, _permissionsHash(permit.permitted), msg.sender, permit.nonce, permit.deadline)
        );
        _transfer(permit, transferDetails, owner, structHash, signature);
    }

    /// @inheritdoc ISignatureTransfer
    function permitWitnessTransferFrom(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 witness,
        string calldata witnessTypeString,
        bytes calldata signature
    ) external {
        bytes32 typeHash = keccak256(abi.encodePacked(_WITNESS_PREFIX, witnessTypeString));
        bytes32 structHash = keccak256(
            abi.encode(typeHash, _permissionsHash(permit.permitted), msg.sender, permit.nonce, permit.deadline, witness)
        );
        _transfer(permit, transferDetails, owner, structHash, signature);
    }

    /// @dev Deadline, amount, signer and nonce, then the move (the token's own allowance to this contract applies).
    function _transfer(
        PermitTransferFrom calldata permit,
        SignatureTransferDetails calldata transferDetails,
        address owner,
        bytes32 structHash,
        bytes calldata signature
    ) private {
        if (block.timestamp > permit.deadline) revert SignatureExpired(permit.deadline);
        if (transferDetails.requestedAmount > permit.permitted.amount) revert InvalidAmount(permit.permitted.amount);
        _useNonce(owner, permit.nonce);
        _checkSigner(owner, MessageHashUtils.toTypedDataHash(DOMAIN_SEPARATOR(), structHash), signature);
        IERC20(permit.permitted.token).safeTransferFrom(owner, transferDetails.to, transferDetails.requestedAmount);
    }

    function _permissionsHash(TokenPermissions calldata permitted) private pure returns (bytes32) {
        return keccak256(abi.encode(TOKEN_PERMISSIONS_TYPEHASH, permitted.token, permitted.amount));
    }

    /// @dev Flips the nonce's bit; it must have been clear.
    function _useNonce(address owner, uint256 nonce) private {
        uint256 bit = uint256(1) << (nonce & 0xff);
        uint256 before = nonceBitmap[owner][nonce >> 8];
        if (before & bit != 0) revert InvalidNonce();
        nonceBitmap[owner][nonce >> 8] = before | bit;
    }

    function _checkSigner(address owner, bytes32 digest, bytes calldata signature) private view {
        if (owner.code.length > 0) {
            if (!SignatureChecker.isValidERC1271SignatureNow(owner, digest, signature)) revert InvalidContractSignature();
            return;
        }
        address recovered;
        ECDSA.RecoverError err;
        if (signature.length == 64) {
            (recovered, err, ) = ECDSA.tryRecover(digest, bytes32(signature[0:32]), bytes32(signature[32:64]));
        } else if (signature.length == 65) {
            (recovered, err, ) = ECDSA.tryRecoverCalldata(digest, signature);
        } else {
            revert InvalidSignature();
        }
        if (err != ECDSA.RecoverError.NoError) revert InvalidSignature();
        if (recovered != owner) revert InvalidSigner();
    }
}
