// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";
import {ChannelWithdrawals} from "./ChannelWithdrawals.sol";
import {IBatchSettlementChannels} from "./interfaces/x402/IBatchSettlementChannels.sol";
import {ISpendPolicySchemes} from "./ISpendPolicySchemes.sol";
import {X402Digests} from "./X402Digests.sol";

/// @title What the schemes need of USDC (FiatToken v2.2) beyond ERC-20.
interface IUSDCAuthorizations {
    function DOMAIN_SEPARATOR() external view returns (bytes32);
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
}

/// @title x402 batch-settlement channels and upto ceilings for a SpendGate agent wallet.
/// @notice Runs only by delegatecall from SpendPolicy (its fallback), on the wallet's storage: deployed once by the
/// SpendPolicy implementation's constructor, it holds nothing itself. See ISpendPolicySchemes for each operation; the
/// payer's withdrawal from a channel is in its base, ChannelWithdrawals.
/// @dev Why a stolen operator (or every server key, no owner key) can move no more than the policy allows:
/// - Deposits and ceilings pass _evaluate and _useApproval, the same code as exact payments, and are charged with
///   _charge to the same windows; the wallet then signs exactly one digest for each (the ReceiveWithAuthorization to
///   the deposit collector, the Permit2 witness transfer), through the 97-byte path of SpendPolicy.isValidSignature,
///   bound to the epoch like an exact payment.
/// - Vouchers: only for a channel whose config this wallet checked (payer this wallet, payerAuthorizer 0, USDC, a
///   receiver the policy admitted) and only in the epoch of its latest deposit; the channel contract lets no claim pass
///   its balance, which holds only deposits the policy authorised.
/// - Credits need chain state: a channel's deposits minus its balance (the channel contract pays refunds and
///   withdrawals to the payer only), net of what was credited; a ceiling's Permit2 allowance left, which only the
///   wallet sets (to exactly one ceiling's amount) and only Permit2's transfers lower.
contract SpendPolicySchemes is ChannelWithdrawals {
    // ---------------------------------------------------------------- constants (canonical x402 addresses on Base)
    // BATCH_SETTLEMENT (the channel contract) is ChannelWithdrawals'.
    address public constant ERC3009_DEPOSIT_COLLECTOR = 0x4020806089470a89826cB9fB1f4059150b550004;
    address public constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;
    address public constant UPTO_PROXY = 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002;
    /// @notice The shortest and longest withdrawDelay of a channel the wallet deposits into: the payer's own way out
    /// (withdrawChannel) takes that long, so a stolen server cannot lock a deposit away for longer than a week (the
    /// channel contract alone would allow 30 days).
    uint256 public constant MIN_WITHDRAW_DELAY = 15 minutes;
    uint256 public constant MAX_WITHDRAW_DELAY = 7 days;


    // ---------------------------------------------------------------- immutables
    address private immutable _usdcToken;
    bytes32 private immutable _usdcSeparator;
    bytes32 private immutable _batchSeparator;
    bytes32 private immutable _permit2Separator;

    /// @dev PaymentAuthorized's data, in its ABI order: abi.encode of this struct (after its leading offset) is the
    /// event's data, so the thirteen fields never sit on the stack together.
    struct AuthorizedData {
        string merchant;
        address payTo;
        uint256 amount;
        uint256 validAfter;
        uint256 validBefore;
        uint256 spentToday;
        uint256 epoch;
        string leafEntry;
        uint256 leafDailyCap;
        address leafPayee;
    }

    modifier onlyOperator() {
        _checkOperator();
        _;
    }

    /// @param usdc_ the wallet's USDC (the channel token and the ceiling's permitted token)
    constructor(address usdc_) {
        _usdcToken = usdc_;
        _usdcSeparator = IUSDCAuthorizations(usdc_).DOMAIN_SEPARATOR();
        _batchSeparator = X402Digests.batchSettlementSeparator(BATCH_SETTLEMENT);
        _permit2Separator = X402Digests.permit2Separator(PERMIT2);
    }

    // ---------------------------------------------------------------- external
    /// @inheritdoc ISpendPolicySchemes
    function authorizeDeposit(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        ChannelConfig calldata config,
        ChannelDeposit calldata deposit,
        OwnerApproval calldata ownerApproval
    ) external onlyDelegated onlyOperator returns (bool, BlockReason) {
        if (_payments[paymentId] != 0) revert SpendPolicyPaymentExists(paymentId);
        Plan memory p = _planDeposit(config, deposit);
        _settleReturned(p.rec.ref);
        return _authorizeDeposit(paymentId, merchant, leaf, proof, p, ownerApproval);
    }

    /// @inheritdoc ISpendPolicySchemes
    function authorizeCeiling(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        Ceiling calldata ceiling,
        OwnerApproval calldata ownerApproval
    ) external onlyDelegated onlyOperator returns (bool, BlockReason) {
        if (_payments[paymentId] != 0) revert SpendPolicyPaymentExists(paymentId);
        if (_openCeiling != 0) revert SpendPolicyCeilingOpen(_openCeiling);
        Plan memory p;
        p.transfer = Transfer(ceiling.payTo, ceiling.amount, ceiling.validAfter, ceiling.deadline);
        _checkTransferOf(p.transfer);
        p.digest = _ceilingDigest(ceiling);
        p.rec = SchemeRecord(p.digest, uint64(ceiling.amount), Scheme.Upto);
        BlockReason reason = _decide(paymentId, merchant, leaf, proof, p, ownerApproval);
        if (reason != BlockReason.None) return (false, reason);
        _openCeiling = paymentId;
        // Permit2 can pull exactly this ceiling, and only with the wallet's ERC-1271 "valid" for this digest.
        IERC20(_usdcToken).approve(PERMIT2, ceiling.amount);
        return (true, BlockReason.None);
    }

    /// @inheritdoc ISpendPolicySchemes
    function creditChannel(bytes32 paymentId) external onlyDelegated onlyOperator returns (uint256 credited) {
        (uint256 record, SchemeRecord memory s) = _creditable(paymentId, Scheme.BatchSettlement);
        Channel storage ch = _channels[s.ref];
        bytes32 latest = ch.latestDeposit;
        uint256 latestRecord = _payments[latest];
        if (_isChannelDeposit(latest, s.ref) && _pending(latestRecord, ch.latestNonce)) {
            // The channel's pending deposit dies here (the wallet no longer signs it), so every deposit counted in
            // `deposited` has landed or never will: deposited - balance is then exactly what came back.
            latestRecord = (latestRecord & ~(uint256(type(uint8).max) << RECORD_STATE_SHIFT)) | (STATE_CLOSED << RECORD_STATE_SHIFT);
            _payments[latest] = latestRecord;
            if (latest == paymentId) record = latestRecord;
        }
        (uint128 balance, ) = IBatchSettlementChannels(BATCH_SETTLEMENT).channels(s.ref);
        uint256 deposited = ch.deposited;
        uint256 returned = deposited > balance ? deposited - balance : 0;
        uint256 already = ch.credited;
        if (returned <= already) revert SpendPolicyNothingToCredit(paymentId);
        credited = returned - already;
        if (credited > s.amount) credited = s.amount;
        ch.credited = uint64(already + credited);
        _credit(paymentId, record, s, credited, returned);
    }

    /// @inheritdoc ISpendPolicySchemes
    function creditCeiling(bytes32 paymentId) external onlyDelegated onlyOperator returns (uint256 credited) {
        (uint256 record, SchemeRecord memory s) = _creditable(paymentId, Scheme.Upto);
        // The open ceiling is this one (one at a time): its allowance is what is left of it.
        delete _openCeiling;
        uint256 left = IERC20(_usdcToken).allowance(address(this), PERMIT2);
        credited = left < s.amount ? left : s.amount;
        if (left != 0) IERC20(_usdcToken).approve(PERMIT2, 0);
        _credit(paymentId, record, s, credited, left);
    }

    /// @inheritdoc ISpendPolicySchemes
    function isValidVoucherSignature(bytes32 digest, bytes calldata signature) external view returns (bytes4) {
        if (signature.length != 129 || _isModuleItself()) return ERC1271_INVALID;
        bytes32 channelId = bytes32(signature[0:32]);
        uint256 amount = uint256(bytes32(signature[32:64]));
        Channel storage ch = _channels[channelId];
        if (ch.deposited == 0 || ch.epoch != _epochOf(_operatorAndSpend) || amount > type(uint128).max) {
            return ERC1271_INVALID;
        }
        if (X402Digests.voucher(_batchSeparator, channelId, amount) != digest) return ERC1271_INVALID;
        (address recovered, ECDSA.RecoverError err, ) = ECDSA.tryRecoverCalldata(digest, signature[64:129]);
        if (err != ECDSA.RecoverError.NoError || recovered != _signer()) return ERC1271_INVALID;
        return 0x1626ba7e;
    }

    // ---------------------------------------------------------------- view
    /// @inheritdoc ISpendPolicySchemes
    function channelState(
        bytes32 channelId
    ) external view returns (uint256 deposited, uint256 credited, uint256 epoch_, bytes32 latestDeposit) {
        Channel storage ch = _channels[channelId];
        return (ch.deposited, ch.credited, ch.epoch, ch.latestDeposit);
    }

    /// @inheritdoc ISpendPolicySchemes
    function openCeiling() external view returns (bytes32) {
        return _openCeiling;
    }

    /// @inheritdoc ISpendPolicySchemes
    function channelIdOf(ChannelConfig calldata config) external view returns (bytes32) {
        return _channelId(config);
    }

    /// @inheritdoc ISpendPolicySchemes
    function depositDigest(bytes32 channelId, ChannelDeposit calldata deposit) external view returns (bytes32) {
        Transfer memory t = Transfer(address(0), deposit.amount, deposit.validAfter, deposit.validBefore);
        return _depositDigest(keccak256(abi.encode(channelId, deposit.nonceSalt)), t);
    }

    /// @inheritdoc ISpendPolicySchemes
    function ceilingDigest(Ceiling calldata ceiling) external view returns (bytes32) {
        return _ceilingDigest(ceiling);
    }

    // ---------------------------------------------------------------- internal
    /// @dev A deposit or ceiling checked and hashed: its transfer (payTo the receiver), its scheme record (ref: the
    /// channel id or the permit digest), the one digest the wallet will sign for it, and a deposit's ERC-3009 nonce.
    struct Plan {
        Transfer transfer;
        SchemeRecord rec;
        bytes32 digest;
        bytes32 nonce;
    }

    function _planDeposit(ChannelConfig calldata config, ChannelDeposit calldata deposit) private view returns (Plan memory p) {
        if (
            config.payer != address(this) ||
            config.payerAuthorizer != address(0) ||
            config.token != _usdcToken ||
            config.receiver == address(0) ||
            config.receiver == address(this)
        ) revert SpendPolicyInvalidChannel();
        if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
            revert SpendPolicyWithdrawDelayOutOfRange(config.withdrawDelay);
        }
        p.transfer = Transfer(config.receiver, deposit.amount, deposit.validAfter, deposit.validBefore);
        _checkTransferOf(p.transfer);
        bytes32 channelId = _channelId(config);
        p.rec = SchemeRecord(channelId, uint64(deposit.amount), Scheme.BatchSettlement);
        Channel storage ch = _channels[channelId];
        bytes32 latest = ch.latestDeposit;
        if (_isChannelDeposit(latest, channelId) && _pending(_payments[latest], ch.latestNonce)) {
            revert SpendPolicyDepositPending(channelId, latest);
        }
        p.nonce = keccak256(abi.encode(channelId, deposit.nonceSalt));
        p.digest = _depositDigest(p.nonce, p.transfer);
    }

    /// @dev Before a deposit into a channel the wallet used before: what came back from it (deposited minus its
    /// balance) beyond what was settled already came back before this deposit, so no later credit may draw on it (it
    /// would refill this deposit's windows with money from earlier ones). It is credited to the channel's latest
    /// deposit (at most that deposit's amount; the windows it was counted in, if still current), and the rest, money
    /// that came back from deposits credited already, refills nothing. A new channel has nothing to settle (no call). While
    /// the wallet's own timed withdrawal is in progress nothing goes in: what it brings back was asked for before.
    function _settleReturned(bytes32 channelId) private {
        Channel storage ch = _channels[channelId];
        uint256 deposited = ch.deposited;
        if (deposited == 0) return;
        (, uint40 withdrawing) = IBatchSettlementChannels(BATCH_SETTLEMENT).pendingWithdrawals(channelId);
        if (withdrawing != 0) revert SpendPolicyChannelWithdrawing(channelId);
        (uint128 balance, ) = IBatchSettlementChannels(BATCH_SETTLEMENT).channels(channelId);
        uint256 returned = deposited > balance ? deposited - balance : 0;
        uint256 settled = ch.credited;
        if (returned <= settled) return;
        ch.credited = uint64(returned);
        bytes32 latest = ch.latestDeposit;
        // Its pending authorisation, if any, made _planDeposit revert: it landed or never will.
        if (!_isChannelDeposit(latest, channelId)) return;
        SchemeRecord memory s = _schemeRecords[latest];
        uint256 amount = returned - settled;
        _credit(latest, _payments[latest], s, amount < s.amount ? amount : s.amount, returned);
    }

    function _authorizeDeposit(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        Plan memory p,
        OwnerApproval calldata ownerApproval
    ) private returns (bool, BlockReason) {
        BlockReason reason = _decide(paymentId, merchant, leaf, proof, p, ownerApproval);
        if (reason != BlockReason.None) return (false, reason);
        Channel storage ch = _channels[p.rec.ref];
        ch.deposited += uint64(p.transfer.amount);
        ch.epoch = uint16(_epochOf(_operatorAndSpend));
        ch.latestDeposit = paymentId;
        ch.latestNonce = p.nonce;
        return (true, BlockReason.None);
    }

    /// @dev The policy's decision, exactly as authorizePayment's (rules, then the owner's approval above the
    /// threshold), for the transfer of `p`. A refusal is logged (PaymentBlocked, SchemePayment) and returned; an
    /// allowance is charged to every window, recorded with the one digest the wallet will sign for it, and logged
    /// (PaymentAuthorized, SchemePayment).
    function _decide(
        bytes32 paymentId,
        string calldata merchant,
        Leaf calldata leaf,
        bytes32[] calldata proof,
        Plan memory p,
        OwnerApproval calldata ownerApproval
    ) private returns (BlockReason reason) {
        Charge memory c;
        Transfer memory t = p.transfer;
        (reason, c) = _evaluate(merchant, leaf, proof, t.payTo, t.amount);
        if (reason == BlockReason.ApprovalRequired && _useApproval(paymentId, merchant, t.payTo, t.amount, ownerApproval)) {
            reason = BlockReason.None;
        }
        if (reason != BlockReason.None) {
            _blocked(paymentId, merchant, leaf, t.amount, reason);
            emit SchemePayment(paymentId, p.rec.scheme, p.rec.ref, false);
            return reason;
        }
        _commit(paymentId, merchant, leaf, p, c);
    }

    function _commit(bytes32 paymentId, string calldata merchant, Leaf calldata leaf, Plan memory p, Charge memory c) private {
        Transfer memory t = p.transfer;
        uint256 spent = _charge(c, t.amount);
        uint256 epoch_ = _epochOf(c.spendWord);
        _payments[paymentId] = _recordOf(c, epoch_, p.digest);
        _schemeRecords[paymentId] = p.rec;
        _emitAuthorized(
            paymentId,
            AuthorizedData(merchant, t.payTo, t.amount, t.validAfter, t.validBefore, spent, epoch_, leaf.entry, leaf.dailyCap, leaf.payee)
        );
        emit SchemePayment(paymentId, p.rec.scheme, p.rec.ref, true);
    }

    /// @dev The record of an authorised (or closed) deposit or ceiling of `scheme`, not yet credited.
    function _creditable(bytes32 paymentId, Scheme scheme) private view returns (uint256 record, SchemeRecord memory s) {
        record = _payments[paymentId];
        uint256 state = record >> RECORD_STATE_SHIFT;
        s = _schemeRecords[paymentId];
        if ((state != STATE_AUTHORIZED && state != STATE_CLOSED) || s.amount == 0 || s.scheme != scheme) {
            revert SpendPolicyUnknownSchemePayment(paymentId);
        }
    }

    /// @dev Deletes the record (the wallet signs its digest no more; no second credit) and gives `amount` back to the
    /// windows it was counted in that are still current (SpendPolicyState._release: PaymentReleased).
    function _credit(bytes32 paymentId, uint256 record, SchemeRecord memory s, uint256 amount, uint256 returned) private {
        delete _schemeRecords[paymentId];
        _release(paymentId, record, amount);
        emit SchemeCredited(paymentId, s.scheme, s.ref, amount, returned);
    }

    /// @dev Whether `paymentId` is still an uncredited deposit into `channelId` (a credited paymentId may since have
    /// been reused for something else, which a channel's latestDeposit must not then touch).
    function _isChannelDeposit(bytes32 paymentId, bytes32 channelId) private view returns (bool) {
        SchemeRecord storage r = _schemeRecords[paymentId];
        return paymentId != 0 && r.scheme == Scheme.BatchSettlement && r.ref == channelId;
    }

    /// @dev Whether a deposit record may still land: authorised in the current epoch (the wallet still signs it) and
    /// its ERC-3009 nonce unused. One of an older epoch never will (the wallet refuses it for good; by the time the
    /// 16-bit epoch wraps, its validBefore, at most MAX_VALIDITY ahead, has long passed).
    function _pending(uint256 record, bytes32 nonce) private view returns (bool) {
        return
            record >> RECORD_STATE_SHIFT == STATE_AUTHORIZED &&
            (record >> RECORD_EPOCH_SHIFT) & type(uint16).max == _epochOf(_operatorAndSpend) &&
            !IUSDCAuthorizations(_usdcToken).authorizationState(address(this), nonce);
    }

    function _checkTransferOf(Transfer memory t) private view {
        if (
            t.payTo == address(0) ||
            t.payTo == address(this) ||
            t.amount == 0 ||
            t.amount > type(uint64).max ||
            t.validBefore <= block.timestamp ||
            t.validBefore > block.timestamp + MAX_VALIDITY ||
            t.validAfter >= t.validBefore
        ) revert SpendPolicyInvalidTransfer();
    }

    function _channelId(ChannelConfig calldata config) internal view override returns (bytes32) {
        return X402Digests.channelId(_batchSeparator, config);
    }

    function _depositDigest(bytes32 nonce, Transfer memory t) private view returns (bytes32) {
        return
            X402Digests.receiveWithAuthorization(
                _usdcSeparator,
                address(this),
                ERC3009_DEPOSIT_COLLECTOR,
                t.amount,
                t.validAfter,
                t.validBefore,
                nonce
            );
    }

    function _ceilingDigest(Ceiling calldata c) private view returns (bytes32) {
        return X402Digests.uptoPermit(_permit2Separator, _usdcToken, UPTO_PROXY, c);
    }

    function _emitAuthorized(bytes32 paymentId, AuthorizedData memory d) private {
        bytes memory data = abi.encode(d);
        bytes32 topic0 = PaymentAuthorized.selector;
        bytes32 merchantHash = keccak256(bytes(d.merchant));
        assembly ("memory-safe") {
            // Skip the length word and the struct's leading offset (0x20): what is left is the event's data.
            log4(add(data, 0x40), sub(mload(data), 0x20), topic0, paymentId, address(), merchantHash)
        }
    }
}
