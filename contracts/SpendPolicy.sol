// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {EIP712} from "@openzeppelin/contracts/utils/cryptography/EIP712.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {MessageHashUtils} from "@openzeppelin/contracts/utils/cryptography/MessageHashUtils.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {PolicyRules} from "./PolicyRules.sol";
import {OwnerControls} from "./OwnerControls.sol";
import {OperatorCheck} from "./OperatorCheck.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title What the wallet needs of USDC (FiatToken v2.2): the EIP-3009 domain and nonce state.
interface IERC3009 {
    function DOMAIN_SEPARATOR() external view returns (bytes32);
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
}

/// @title SpendGate agent wallet and spend policy (one per agent, a minimal proxy of one implementation).
/// @notice Holds the agent's funds. It answers ERC-1271 "valid" only for the USDC TransferWithAuthorization digest of
/// a payment this policy authorised and has not released, signed by the agent's signing key; everything else that
/// moves value needs the owner's EIP-712 Withdraw. The operator (the service's relayer) can authorise payments within
/// the owner-signed policy and release unsettled ones; it cannot change the policy, pause state, owner or operator.
/// @dev Deployed by SpendPolicyFactory as an ERC-1167 clone with the agent's signing key as immutable argument, so
/// the address depends only on the factory and that key. Wallet signature format (97 bytes): paymentId (32) then the
/// signing key's ECDSA signature (r, s, v) of the digest.
contract SpendPolicy is OwnerControls, IERC1271 {
    // ---------------------------------------------------------------- immutables (shared by every clone)
    address private immutable _factory;
    address private immutable _usdc;
    bytes32 private immutable _usdcDomainSeparator;

    // ---------------------------------------------------------------- modifiers
    modifier onlyOperator() {
        _checkOperator();
        _;
    }

    // ---------------------------------------------------------------- constructor
    /// @param usdc_ the token whose EIP-3009 transfers this wallet authorises (Base USDC)
    /// @dev Only the implementation is constructed; its deployer (the factory) is the only account that initialises
    /// clones. The implementation itself is never initialised and holds nothing.
    constructor(address usdc_) EIP712("SpendGate", "1") {
        _factory = msg.sender;
        _usdc = usdc_;
        _usdcDomainSeparator = IERC3009(usdc_).DOMAIN_SEPARATOR();
    }

    /// @notice ETH may be sent to the wallet; only the owner's Withdraw takes it out.
    receive() external payable {}

    // ---------------------------------------------------------------- external
    /// @notice Factory only, once: sets the owner, the operator and the first policy, authorised by the owner's
    /// SetPolicy signature whose domain is this (then predicted) address.
    function initialize(
        address owner_,
        address operator_,
        Policy calldata firstPolicy,
        uint256 timestamp,
        bytes calldata signature
    ) external {
        if (msg.sender != _factory) revert SpendPolicyUnauthorizedDeployer(msg.sender);
        if (_owner != address(0)) revert SpendPolicyAlreadyDeployed(address(this));
        if (owner_ == address(0) || operator_ == address(0)) revert SpendPolicyZeroAddress();
        _owner = owner_;
        _operatorAndSpend = uint160(operator_);
        emit OwnerSet(address(this), owner_, 0);
        emit OperatorSet(address(this), operator_, 0);
        _setPolicy(firstPolicy, timestamp, signature);
    }

    /// @inheritdoc ISpendPolicy
    /// @dev `ownerApproval` is only read (and its approvalId only consumed) when the amount is above the threshold.
    /// A blocked paymentId is not recorded, so it may be submitted again later.
    function authorizePayment(
        bytes32 paymentId,
        string calldata merchant,
        string calldata allowlistLeaf,
        bytes32[] calldata proof,
        Transfer calldata transfer,
        OwnerApproval calldata ownerApproval
    ) external onlyOperator returns (bool, BlockReason) {
        if (_payments[paymentId] != 0) revert SpendPolicyPaymentExists(paymentId);
        _checkTransfer(transfer);
        (BlockReason reason, uint256 spent) = _evaluate(
            merchant,
            allowlistLeaf,
            proof,
            transfer.amount,
            block.timestamp / 1 days
        );
        if (reason == BlockReason.ApprovalRequired && _useApproval(paymentId, merchant, transfer.amount, ownerApproval)) {
            reason = BlockReason.None;
        }
        if (reason != BlockReason.None) {
            emit PaymentBlocked(paymentId, address(this), keccak256(bytes(merchant)), merchant, transfer.amount, reason);
            return (false, reason);
        }
        _record(paymentId, merchant, transfer, spent);
        return (true, BlockReason.None);
    }

    /// @inheritdoc ISpendPolicy
    /// @dev A payment authorised on an earlier day is released without touching today's spend.
    function releasePayment(bytes32 paymentId, Transfer calldata transfer) external onlyOperator {
        uint256 record = _payments[paymentId];
        if (
            record >> RECORD_STATE_SHIFT != STATE_AUTHORIZED ||
            record & DIGEST_MASK != uint256(_transferDigest(paymentId, transfer)) & DIGEST_MASK
        ) revert SpendPolicyUnknownPayment(paymentId);
        if (IERC3009(_usdc).authorizationState(address(this), paymentId)) revert SpendPolicyPaymentSettled(paymentId);
        // Deleting the record kills the authorisation: the wallet refuses its digest from now on.
        delete _payments[paymentId];
        uint256 today = block.timestamp / 1 days;
        uint256 word = _operatorAndSpend;
        uint256 spent = _spentOn(word, today);
        if ((record >> RECORD_DAY_SHIFT) & type(uint32).max == today) {
            unchecked {
                spent = spent > transfer.amount ? spent - transfer.amount : 0;
            }
            _operatorAndSpend = _withSpend(word, today, spent);
        }
        emit PaymentReleased(paymentId, address(this), transfer.amount, spent);
    }

    /// @notice ERC-1271: valid only for the USDC TransferWithAuthorization digest of an authorised, unreleased
    /// payment, signed by the agent's signing key. `signature` is paymentId (32 bytes) then r, s, v (65 bytes).
    function isValidSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 97) return ERC1271_INVALID;
        uint256 record = _payments[bytes32(signature[0:32])];
        if (record >> RECORD_STATE_SHIFT != STATE_AUTHORIZED || record & DIGEST_MASK != uint256(digest) & DIGEST_MASK) {
            return ERC1271_INVALID;
        }
        (address recovered, ECDSA.RecoverError err, ) = ECDSA.tryRecoverCalldata(digest, signature[32:97]);
        if (err != ECDSA.RecoverError.NoError || recovered != _signer()) return ERC1271_INVALID;
        return IERC1271.isValidSignature.selector;
    }

    // ---------------------------------------------------------------- view
    /// @inheritdoc ISpendPolicy
    function checkPayment(
        string calldata merchant,
        string calldata allowlistLeaf,
        bytes32[] calldata proof,
        uint256 amount
    ) external view returns (Decision decision, BlockReason reason) {
        (reason, ) = _evaluate(merchant, allowlistLeaf, proof, amount, block.timestamp / 1 days);
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

    /// @notice The current policy.
    function policy() external view returns (Policy memory) {
        Limits memory limits = _limits;
        return Policy(limits.perTxLimit, limits.dailyBudget, _allowlistRoot, limits.approvalThreshold);
    }

    /// @notice How many policies the owner has signed (1 for the first).
    function policyVersion() external view returns (uint256) {
        return _limits.version;
    }

    /// @inheritdoc ISpendPolicy
    function spentToday() external view returns (uint256) {
        return _spentOn(_operatorAndSpend, block.timestamp / 1 days);
    }

    /// @notice What is left of today's budget (0 when the budget was lowered below today's spend).
    function remainingDailyBudget() external view returns (uint256) {
        uint256 budget = _limits.dailyBudget;
        uint256 spent = _spentOn(_operatorAndSpend, block.timestamp / 1 days);
        return budget > spent ? budget - spent : 0;
    }

    /// @inheritdoc ISpendPolicy
    function paymentState(bytes32 paymentId) external view returns (uint8) {
        return uint8(_payments[paymentId] >> RECORD_STATE_SHIFT);
    }

    /// @notice Whether an owner approval with this approvalId has been used.
    function approvalUsed(string calldata approvalId) external view returns (bool) {
        return _approvalsUsed[keccak256(bytes(approvalId))];
    }

    /// @notice The USDC TransferWithAuthorization digest of a transfer from this wallet with nonce `paymentId`.
    function transferDigest(bytes32 paymentId, Transfer calldata transfer) external view returns (bytes32) {
        return _transferDigest(paymentId, transfer);
    }

    // ---------------------------------------------------------------- internal
    function _checkOperator() internal view {
        // The operator slot holds one key, or an OperatorSet whose members (one key per service instance) may relay.
        if (!OperatorCheck.isOperator(address(uint160(_operatorAndSpend)), msg.sender)) {
            revert SpendPolicyUnauthorizedOperator(msg.sender);
        }
    }

    function _signer() private view returns (address) {
        return address(bytes20(Clones.fetchCloneArgs(address(this))));
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

    /// @dev Counts an allowed payment in today's spend and records its transfer digest.
    function _record(bytes32 paymentId, string calldata merchant, Transfer calldata transfer, uint256 spent) private {
        uint256 today = block.timestamp / 1 days;
        // _evaluate passed: spent + amount <= dailyBudget < 2^64.
        unchecked {
            spent += transfer.amount;
        }
        _operatorAndSpend = _withSpend(_operatorAndSpend, today, spent);
        _payments[paymentId] =
            (STATE_AUTHORIZED << RECORD_STATE_SHIFT) |
            (today << RECORD_DAY_SHIFT) |
            (uint256(_transferDigest(paymentId, transfer)) & DIGEST_MASK);
        emit PaymentAuthorized(
            paymentId,
            address(this),
            keccak256(bytes(merchant)),
            merchant,
            transfer.payTo,
            transfer.amount,
            transfer.validBefore,
            spent
        );
    }

    /// @dev The rules in order. Returns the reason and, once the daily rule has been reached, today's spend before
    /// this payment (storage is read only as far as needed).
    function _evaluate(
        string calldata merchant,
        string calldata leaf,
        bytes32[] calldata proof,
        uint256 amount,
        uint256 today
    ) private view returns (BlockReason reason, uint256 spent) {
        Limits memory limits = _limits;
        if (limits.paused) return (BlockReason.PolicyPaused, 0);
        if (!PolicyRules.merchantAllowed(_allowlistRoot, merchant, leaf, proof)) {
            return (BlockReason.MerchantNotAllowed, 0);
        }
        if (amount > limits.perTxLimit) return (BlockReason.PerTxLimitExceeded, 0);
        spent = _spentOn(_operatorAndSpend, today);
        // amount <= perTxLimit and spent <= dailyBudget at the time: both below 2^64, no overflow.
        unchecked {
            if (spent + amount > limits.dailyBudget) return (BlockReason.DailyBudgetExceeded, spent);
        }
        if (amount > limits.approvalThreshold) return (BlockReason.ApprovalRequired, spent);
        return (BlockReason.None, spent);
    }

    /// @dev Checks and consumes the owner's approval of a payment above the threshold. Any failure returns false
    /// (the payment is then blocked with approval_required), never reverts.
    function _useApproval(
        bytes32 paymentId,
        string calldata merchant,
        uint256 amount,
        OwnerApproval calldata approval
    ) private returns (bool) {
        if (approval.signature.length == 0 || amount > approval.amount) return false;
        if (!_withinWindow(approval.timestamp, APPROVAL_WINDOW)) return false;
        bytes32 idHash = keccak256(bytes(approval.approvalId));
        if (_approvalsUsed[idHash]) return false;
        bytes32 structHash = keccak256(
            abi.encode(
                APPROVAL_DECISION_TYPEHASH,
                ACTION_APPROVE_HASH,
                idHash,
                address(this),
                keccak256(bytes(merchant)),
                approval.amount,
                approval.timestamp
            )
        );
        if (!SignatureChecker.isValidSignatureNowCalldata(_owner, _ownerDigest(structHash), approval.signature)) {
            return false;
        }
        _approvalsUsed[idHash] = true;
        emit ApprovalUsed(paymentId, address(this), approval.approvalId, approval.amount, approval.timestamp);
        return true;
    }

}
