// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SpendPolicySwap} from "./SpendPolicySwap.sol";
import {ISpendPolicySchemes} from "./ISpendPolicySchemes.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title What the wallet needs of USDC (FiatToken v2.2): the EIP-3009 domain and nonce state.
interface IERC3009 {
    function DOMAIN_SEPARATOR() external view returns (bytes32);
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
}

/// @title SpendGate agent wallet and spend policy (one per agent, a minimal proxy of one implementation).
/// @notice Holds the agent's funds. It answers ERC-1271 "valid" only for the one digest of something this policy
/// authorised in the current epoch and has not released or credited (an exact payment's USDC
/// TransferWithAuthorization, a channel deposit's ReceiveWithAuthorization, an upto ceiling's Permit2 witness
/// transfer), and for Vouchers of a channel whose latest deposit it authorised in the current epoch, each signed by the
/// agent's signing key (a pause, a policy, operator or owner change starts a new epoch); everything else that moves
/// value needs the owner's EIP-712 Withdraw. The operator (the service's relayer) can authorise payments, deposits
/// and ceilings within the owner-signed policy, release unsettled payments, credit what came back and void unused
/// payment ids; it cannot change the policy, pause state, owner or operator.
/// @dev Deployed by SpendPolicyFactory as an ERC-1167 clone with the agent's signing key as immutable argument, so
/// the address depends only on the factory and that key. Wallet signature formats: 97 bytes, paymentId (32) then the
/// signing key's ECDSA signature (r, s, v) of the digest; 129 bytes (Vouchers), channelId (32), maxClaimableAmount
/// (32), then r, s, v. Channel deposits and upto ceilings (ISpendPolicySchemes) run in SpendPolicySchemes by
/// delegatecall from the fallback, and the owner's SetPolicy (the allowlist in clear) in SpendPolicyUpdates, by
/// delegatecall from initialize and updatePolicy: this contract has no room left under the 24,576-byte limit.
contract SpendPolicy is SpendPolicySwap, IERC1271 {
    // ---------------------------------------------------------------- immutables (shared by every clone)
    address private immutable _factory;
    address private immutable _usdc;
    bytes32 private immutable _usdcDomainSeparator;
    /// @dev Channel deposits, vouchers and upto ceilings (SpendPolicySchemes), run by delegatecall on this storage.
    address private immutable _schemes;
    /// @dev The owner's signed policy, the allowlist in clear (SpendPolicyUpdates), run by delegatecall on this storage.
    address private immutable _updates;

    // ---------------------------------------------------------------- modifiers
    modifier onlyOperator() {
        _checkOperator();
        _;
    }

    // ---------------------------------------------------------------- constructor
    /// @param usdc_ the token whose EIP-3009 transfers this wallet authorises (Base USDC)
    /// @param swap_ SwapRouter02, WETH and the Uniswap v3 factory of swaps before settlement (all zero: no swaps)
    /// @param schemes_ the SpendPolicySchemes deployed for `usdc_` (channel deposits, vouchers, upto ceilings); its code
    /// runs on each clone's storage, so it is fixed here, in the implementation
    /// @param updates_ the SpendPolicyUpdates (the owner's SetPolicy, allowlist in clear), fixed here likewise
    /// @dev Only the implementation is constructed; its deployer (the factory) is the only account that initialises
    /// clones. The implementation itself is never initialised and holds nothing.
    constructor(
        address usdc_,
        SwapConfig memory swap_,
        address schemes_,
        address updates_
    ) EIP712("SpendGate", "1") SpendPolicySwap(swap_) {
        if (schemes_ == address(0) || updates_ == address(0)) revert SpendPolicyZeroAddress();
        _factory = msg.sender;
        _usdc = usdc_;
        _usdcDomainSeparator = IERC3009(usdc_).DOMAIN_SEPARATOR();
        _schemes = schemes_;
        _updates = updates_;
    }

    /// @notice ETH may be sent to the wallet; only the owner's Withdraw takes it out.
    receive() external payable {}

    /// @notice The x402 schemes beyond exact (ISpendPolicySchemes: authorizeDeposit, authorizeCeiling, creditChannel,
    /// creditCeiling and their views) run in SpendPolicySchemes, by delegatecall, on this wallet's storage.
    fallback() external {
        _delegate(_schemes);
    }

    // ---------------------------------------------------------------- external
    /// @notice Factory only, once: sets the owner, the operator and the first policy, authorised by the owner's
    /// SetPolicy signature whose domain is this (then predicted) address. The policy is SpendPolicyUpdates' (this
    /// call's calldata, forwarded by delegatecall).
    function initialize(
        address owner_,
        address operator_,
        SignedPolicy calldata,
        uint256,
        bytes calldata
    ) external {
        if (msg.sender != _factory) revert SpendPolicyUnauthorizedDeployer(msg.sender);
        if (_owner != address(0)) revert SpendPolicyAlreadyDeployed(address(this));
        if (owner_ == address(0) || operator_ == address(0)) revert SpendPolicyZeroAddress();
        _owner = owner_;
        _operatorAndSpend = uint160(operator_);
        emit OwnerSet(address(this), owner_, 0, "");
        emit OperatorSet(address(this), operator_, 0, "");
        _delegate(_updates);
    }

    /// @inheritdoc ISpendPolicy
    /// @dev SpendPolicyUpdates' (this call's calldata, forwarded by delegatecall).
    function updatePolicy(SignedPolicy calldata, uint256, bytes calldata) external {
        _delegate(_updates);
    }

    /// @inheritdoc ISpendPolicy
    /// @dev `ownerApproval` is only read (and its approvalId only consumed) when the amount is above the threshold.
    /// A blocked paymentId is not recorded, so it may be submitted again later.
    function authorizePayment(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        Transfer calldata transfer,
        OwnerApproval calldata ownerApproval
    ) external onlyOperator returns (bool, BlockReason) {
        if (_payments[paymentId] != 0) revert SpendPolicyPaymentExists(paymentId);
        _checkTransfer(transfer);
        (BlockReason reason, Charge memory charge) = _evaluate(merchant, leaf, proof, transfer.payTo, transfer.amount);
        if (reason == BlockReason.ApprovalRequired && _useApproval(paymentId, merchant, transfer.payTo, transfer.amount, ownerApproval)) {
            reason = BlockReason.None;
        }
        if (reason != BlockReason.None) return _blocked(paymentId, merchant, leaf, transfer.amount, reason);
        _record(paymentId, merchant, leaf, transfer, charge);
        return (true, BlockReason.None);
    }

    /// @inheritdoc ISpendPolicy
    /// @dev See _release for what goes back to which window.
    function releasePayment(bytes32 paymentId, Transfer calldata transfer) external onlyOperator {
        uint256 record = _payments[paymentId];
        if (
            record >> RECORD_STATE_SHIFT != STATE_AUTHORIZED ||
            record & DIGEST_MASK != uint256(_transferDigest(paymentId, transfer)) & DIGEST_MASK
        ) revert SpendPolicyUnknownPayment(paymentId);
        if (IERC3009(_usdc).authorizationState(address(this), paymentId)) revert SpendPolicyPaymentSettled(paymentId);
        _release(paymentId, record, transfer.amount);
    }

    /// @inheritdoc ISpendPolicy
    /// @dev Only a paymentId with no record: a released payment's was deleted, and voiding it only stops its reuse.
    function voidUnrecordedPayment(bytes32 paymentId) external onlyOperator {
        if (_payments[paymentId] != 0) revert SpendPolicyPaymentExists(paymentId);
        _payments[paymentId] = STATE_VOID << RECORD_STATE_SHIFT;
        emit PaymentVoided(paymentId, address(this));
    }

    /// @inheritdoc ISpendPolicy
    function swapForPayment(bytes32 paymentId, string calldata merchant, Transfer calldata transfer) external onlyOperator returns (bool) {
        return _swapForPayment(paymentId, _unsettledRecord(paymentId, transfer), merchant, transfer, _usdc);
    }

    /// @notice ERC-1271: valid only for the recorded digest (an exact payment's USDC TransferWithAuthorization, a
    /// channel deposit's ReceiveWithAuthorization, an upto ceiling's Permit2 witness transfer) of an authorised,
    /// unreleased, uncredited authorisation of the current epoch, signed by the agent's signing key. `signature` is
    /// paymentId (32 bytes) then r, s, v.
    /// A 129-byte signature is a channel Voucher's (channelId, maxClaimableAmount, r, s, v), answered by
    /// SpendPolicySchemes.isValidVoucherSignature.
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        if (signature.length == 129) return _voucherSignature(digest, signature);
        if (signature.length != 97) return ERC1271_INVALID;
        uint256 record = _payments[bytes32(signature[0:32])];
        if (record >> RECORD_STATE_SHIFT != STATE_AUTHORIZED || record & DIGEST_MASK != uint256(digest) & DIGEST_MASK) {
            return ERC1271_INVALID;
        }
        // A pause, a policy, operator or owner change since the authorisation kills it (and while paused nothing new
        // is authorised): the kill switch stops transfers authorised before it, for good.
        if ((record >> RECORD_EPOCH_SHIFT) & type(uint16).max != _epochOf(_operatorAndSpend)) return ERC1271_INVALID;
        (address recovered, ECDSA.RecoverError err, ) = ECDSA.tryRecoverCalldata(digest, signature[32:97]);
        if (err != ECDSA.RecoverError.NoError || recovered != _signer()) return ERC1271_INVALID;
        return IERC1271.isValidSignature.selector;
    }

    // ---------------------------------------------------------------- view
    /// @inheritdoc ISpendPolicy
    function checkPayment(
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        address payTo,
        uint256 amount
    ) external view returns (Decision decision, BlockReason reason) {
        (reason, ) = _evaluate(merchant, leaf, proof, payTo, amount);
        if (reason == BlockReason.None) return (Decision.Allow, reason);
        if (reason == BlockReason.ApprovalRequired) return (Decision.RequiresApproval, reason);
        return (Decision.Block, reason);
    }

    /// @notice The agent: this wallet.
    function agent() external view returns (address) {
        return address(this);
    }

    /// @notice The agent's signing key (the service holds it; alone it can move nothing).
    function signingKey() external view returns (address) {
        return _signer();
    }

    /// @notice The owner whose signatures change the policy, approve payments and withdraw.
    function owner() external view returns (address) {
        return _owner;
    }

    /// @notice The account allowed to authorise and release payments (the service's relayer).
    function operator() external view returns (address) {
        return address(uint160(_operatorAndSpend));
    }

    /// @notice The factory that deployed this agent.
    function factory() external view returns (address) {
        return _factory;
    }

    /// @notice The token of EIP-3009 payments (USDC).
    function usdc() external view returns (address) {
        return _usdc;
    }

    /// @notice Whether every payment is blocked (reason 4).
    function paused() external view returns (bool) {
        return _limits.paused;
    }

    /// @notice The USDC TransferWithAuthorization digest of a transfer from this wallet with nonce `paymentId`.
    function transferDigest(bytes32 paymentId, Transfer calldata transfer) external view returns (bytes32) {
        return _transferDigest(paymentId, transfer);
    }

    // ---------------------------------------------------------------- internal
    /// @dev Runs this call's calldata on `module`'s code, on this storage, and returns or reverts with its answer.
    function _delegate(address module) private {
        assembly ("memory-safe") {
            calldatacopy(0, 0, calldatasize())
            let ok := delegatecall(gas(), module, 0, calldatasize(), 0, 0)
            returndatacopy(0, 0, returndatasize())
            if iszero(ok) {
                revert(0, returndatasize())
            }
            return(0, returndatasize())
        }
    }

    /// @dev The record of an authorised payment whose nonce USDC has not used, checked against `transfer`'s digest.
    function _unsettledRecord(bytes32 paymentId, Transfer calldata transfer) private view returns (uint256 record) {
        record = _payments[paymentId];
        if (
            record >> RECORD_STATE_SHIFT != STATE_AUTHORIZED ||
            record & DIGEST_MASK != uint256(_transferDigest(paymentId, transfer)) & DIGEST_MASK
        ) revert SpendPolicyUnknownPayment(paymentId);
        if (IERC3009(_usdc).authorizationState(address(this), paymentId)) revert SpendPolicyPaymentSettled(paymentId);
    }

    /// @dev Asks SpendPolicySchemes (through this contract's fallback, so on this storage) about a voucher: a static
    /// call to itself, as a view cannot delegatecall. Anything but a 32-byte answer is "invalid".
    function _voucherSignature(bytes32 digest, bytes calldata signature) private view returns (bytes4) {
        (bool ok, bytes memory answer) = address(this).staticcall(
            abi.encodeCall(ISpendPolicySchemes.isValidVoucherSignature, (digest, signature))
        );
        if (!ok || answer.length != 32) return ERC1271_INVALID;
        return abi.decode(answer, (bytes4));
    }

    function _checkTransfer(Transfer calldata transfer) private view {
        if (
            transfer.payTo == address(0) ||
            transfer.payTo == address(this) ||
            transfer.amount > type(uint64).max ||
            transfer.validBefore <= block.timestamp ||
            transfer.validBefore > block.timestamp + MAX_VALIDITY ||
            transfer.validAfter >= transfer.validBefore
        ) revert SpendPolicyInvalidTransfer();
    }

    function _transferDigest(bytes32 paymentId, Transfer calldata t) private view returns (bytes32) {
        return
            MessageHashUtils.toTypedDataHash(
                _usdcDomainSeparator,
                keccak256(
                    abi.encode(
                        TRANSFER_WITH_AUTHORIZATION_TYPEHASH,
                        address(this),
                        t.payTo,
                        t.amount,
                        t.validAfter,
                        t.validBefore,
                        paymentId
                    )
                )
            );
    }

    /// @dev Counts an allowed payment in every window `_evaluate` read and records its transfer digest and epoch.
    function _record(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        Transfer calldata transfer,
        Charge memory c
    ) private {
        uint256 spent = _charge(c, transfer.amount);
        uint256 epoch_ = _epochOf(c.spendWord);
        _payments[paymentId] = _recordOf(c, epoch_, _transferDigest(paymentId, transfer));
        _emitAuthorized(paymentId, merchant, leaf, transfer, spent, epoch_);
    }

    /// @dev PaymentAuthorized, its data laid out here word by word (the ABI encoding of (merchant, payTo, amount,
    /// validAfter, validBefore, spentToday, epoch, leafEntry, leafDailyCap, leafPayee)): thirteen fields do not fit on
    /// the stack, and the encoder's copy of the calldata struct cost a fifth of the event. Every value was read
    /// through Solidity first (payTo in _checkTransfer, payee in _evaluate), so each is clean.
    function _emitAuthorized(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        Transfer calldata transfer,
        uint256 spent,
        uint256 epoch_
    ) private {
        bytes32 topic0 = PaymentAuthorized.selector;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            mstore(ptr, 0x140) // merchant's offset
            calldatacopy(add(ptr, 0x20), transfer, 0x80) // payTo, amount, validAfter, validBefore
            mstore(add(ptr, 0xa0), spent)
            mstore(add(ptr, 0xc0), epoch_)
            mstore(add(ptr, 0x100), calldataload(add(leaf, 0x20))) // dailyCap
            mstore(add(ptr, 0x120), calldataload(add(leaf, 0x40))) // payee
            mstore(add(ptr, 0x140), merchant.length)
            let at := add(0x160, and(add(merchant.length, 31), not(31))) // leafEntry's offset
            mstore(add(ptr, sub(at, 0x20)), 0) // the merchant's last word, zero-padded
            calldatacopy(add(ptr, 0x160), merchant.offset, merchant.length)
            let merchantHash := keccak256(add(ptr, 0x160), merchant.length)
            mstore(add(ptr, 0xe0), at)
            // leaf.entry (its bounds were checked when _evaluate read it): length, then bytes.
            let e := add(leaf, calldataload(leaf))
            let eLen := calldataload(e)
            mstore(add(ptr, at), eLen)
            let size := add(add(at, 0x20), and(add(eLen, 31), not(31)))
            mstore(add(ptr, sub(size, 0x20)), 0) // the entry's last word, zero-padded
            calldatacopy(add(ptr, add(at, 0x20)), add(e, 0x20), eLen)
            log4(ptr, size, topic0, paymentId, address(), merchantHash)
        }
    }


}
