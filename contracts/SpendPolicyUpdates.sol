// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {PolicyRules} from "./PolicyRules.sol";
import {SpendPolicyModule} from "./SpendPolicyModule.sol";

/// @title The owner's signed policy of a SpendGate agent wallet: SetPolicy version 4, the allowlist in clear.
/// @notice Runs only by delegatecall from SpendPolicy (updatePolicy, and the first policy from initialize), on the
/// wallet's storage. The owner signs every allowlist entry (entry, daily cap, payee, requireSignedOffer), so her
/// wallet shows what she allows; the contract derives from those entries, and from nothing else, the Merkle root that
/// payments prove their leaf against. Nobody (a page that built the prompt, a stolen server) can have her sign one
/// list and enforce another: a different list is a different digest, and her signature does not verify over it.
/// @dev The root is exactly OpenZeppelin's StandardMerkleTree.of(values, ["string","uint256","address"]) over the
/// leaves [entry, dailyCap, payee] (leaf hashes sorted ascending, the library's array layout, sorted-pair hashing), so
/// the service's proofs (built with the OpenZeppelin merkle-tree package from the same entries) verify, and anyone can recompute
/// the root with that library from PolicyUpdated's merchants.
contract SpendPolicyUpdates is SpendPolicyModule {
    // ---------------------------------------------------------------- constants
    /// @notice The most allowlist entries a policy may have (the root's derivation and the event grow with each).
    uint256 public constant MAX_MERCHANTS = 64;

    /// @dev _encodeMerchants' status: 1 + the first unsorted index (bits 0-7), then one bit each.
    uint256 private constant STATUS_UNSORTED = 0xff;
    uint256 private constant STATUS_BAD = 0x100;
    uint256 private constant STATUS_OPEN_WILDCARD = 0x200;
    uint256 private constant STATUS_PINNED = 0x400;

    bytes32 private constant MERCHANT_TYPEHASH =
        keccak256("Merchant(string entry,uint256 dailyCap,address payee,bool requireSignedOffer)");
    bytes32 private constant SET_POLICY_TYPEHASH =
        keccak256(
            "SetPolicy(address agent,uint256 perTxLimit,uint256 dailyBudget,Merchant[] merchants,uint256 approvalThreshold,uint256 hourlyBudget,uint256 weeklyBudget,uint256 monthlyBudget,uint256 lifetimeBudget,uint256 maxPaymentsPerHour,uint256 validUntil,uint256 maxSwapSlippageBps,uint256 swapTwapSeconds,uint256 minSwapRate,uint256 timestamp)Merchant(string entry,uint256 dailyCap,address payee,bool requireSignedOffer)"
        );

    // ---------------------------------------------------------------- external
    /// @inheritdoc SpendPolicyModule
    function updatePolicy(SignedPolicy calldata policy_, uint256 timestamp, bytes calldata signature) external override onlyDelegated {
        _setPolicy(policy_, timestamp, signature);
    }

    /// @notice The first policy, at deployment: SpendPolicy.initialize (the factory's call, once) forwards its own
    /// calldata here after setting the owner and the operator. Never reached otherwise: the wallet answers initialize
    /// itself, and its fallback forwards no other selector to this module than updatePolicy's.
    function initialize(
        address,
        address,
        SignedPolicy calldata firstPolicy,
        uint256 timestamp,
        bytes calldata signature
    ) external onlyDelegated {
        if (_extras.version != 0) revert SpendPolicyAlreadyDeployed(address(this));
        _setPolicy(firstPolicy, timestamp, signature);
    }

    /// @notice The allowlist root the contract would store for `merchants` (reverting as updatePolicy would for a
    /// list it refuses): what a wallet or an auditor checks a list against without signing anything.
    function allowlistRootOf(Merchant[] calldata merchants) external pure returns (bytes32 root) {
        (, root, ) = _allowlist(merchants);
    }

    // ---------------------------------------------------------------- internal
    function _setPolicy(SignedPolicy calldata p, uint256 timestamp, bytes calldata signature) private {
        (bytes32 merchantsHash, bytes32 root, bytes memory merchantsAbi) = _allowlist(p.merchants);
        _useOrderedSignature(KIND_SET_POLICY, timestamp, _structHash(p, merchantsHash, timestamp), signature);
        if (
            (p.perTxLimit | p.dailyBudget | p.approvalThreshold | p.minSwapRate) > type(uint64).max ||
            (p.hourlyBudget | p.weeklyBudget | p.monthlyBudget | p.lifetimeBudget) > type(uint64).max ||
            p.maxPaymentsPerHour > type(uint16).max ||
            (p.validUntil | p.swapTwapSeconds) > type(uint32).max ||
            p.maxSwapSlippageBps > 10_000
        ) revert SpendPolicyInvalidPolicy();
        Limits memory old = _limits;
        bool windows = (p.hourlyBudget | p.weeklyBudget | p.monthlyBudget | p.lifetimeBudget) != 0;
        _limits = Limits(
            uint64(p.perTxLimit),
            uint64(p.dailyBudget),
            uint64(p.approvalThreshold),
            old.paused,
            windows,
            uint16(p.maxPaymentsPerHour),
            uint32(p.validUntil)
        );
        // Each fits in 64 bits (checked above).
        if (windows || old.hasWindows) {
            _windowLimits =
                (p.hourlyBudget << L_HOUR_SHIFT) |
                (p.weeklyBudget << L_WEEK_SHIFT) |
                (p.monthlyBudget << L_MONTH_SHIFT) |
                (p.lifetimeBudget << L_LIFETIME_SHIFT);
        }
        uint32 version = _extras.version + 1;
        _extras = PolicyExtras(version, uint16(p.maxSwapSlippageBps), uint32(p.swapTwapSeconds), uint64(p.minSwapRate));
        _allowlistRoot = root;
        _bumpEpoch();
        _emitPolicyUpdated(p, version, root, timestamp, signature, merchantsAbi);
    }

    /// @dev The EIP-712 hash of SetPolicy (version 4) for this wallet, `merchantsHash` being its Merchant[]'s.
    function _structHash(SignedPolicy calldata p, bytes32 merchantsHash, uint256 timestamp) private view returns (bytes32) {
        // Two halves: sixteen words in one abi.encode do not fit on the stack.
        return
            keccak256(
                bytes.concat(
                    abi.encode(
                        SET_POLICY_TYPEHASH,
                        address(this),
                        p.perTxLimit,
                        p.dailyBudget,
                        merchantsHash,
                        p.approvalThreshold,
                        p.hourlyBudget,
                        p.weeklyBudget
                    ),
                    abi.encode(
                        p.monthlyBudget,
                        p.lifetimeBudget,
                        p.maxPaymentsPerHour,
                        p.validUntil,
                        p.maxSwapSlippageBps,
                        p.swapTwapSeconds,
                        p.minSwapRate,
                        timestamp
                    )
                )
            );
    }

    /// @dev Checks the signed list and returns the EIP-712 hash of its Merchant[], the Merkle root the contract enforces
    /// (zero for an empty list: nothing allowed) and the list's canonical ABI encoding (what PolicyUpdated logs). Each
    /// entry is read from calldata once (_encodeMerchants), so what is hashed, proved and logged are the same bytes.
    function _allowlist(
        Merchant[] calldata merchants
    ) private pure returns (bytes32 merchantsHash, bytes32 root, bytes memory encoded) {
        uint256 n = merchants.length;
        if (n > MAX_MERCHANTS) revert SpendPolicyTooManyMerchants(n, MAX_MERCHANTS);
        bytes32[] memory structHashes = new bytes32[](n);
        bytes32[] memory leaves = new bytes32[](n);
        bytes32[] memory tree = new bytes32[](n == 0 ? 0 : 2 * n - 1);
        uint256 status;
        (encoded, status) = _encodeMerchants(merchants, structHashes, leaves);
        if (status & STATUS_UNSORTED != 0) revert SpendPolicyMerchantsNotSorted((status & STATUS_UNSORTED) - 1);
        if (status & STATUS_BAD != 0) revert SpendPolicyInvalidPolicy();
        if (status & (STATUS_OPEN_WILDCARD | STATUS_PINNED) == STATUS_OPEN_WILDCARD | STATUS_PINNED) _checkOverlaps(merchants);
        merchantsHash = keccak256(abi.encodePacked(structHashes));
        root = _merkleRoot(leaves, tree);
    }

    /// @dev One pass over the signed entries in calldata: writes their canonical ABI encoding (a `bytes` of [n][n
    /// offsets][elements], each element [0x80][cap][payee][flag][len][entry, padded]), each Merchant's EIP-712 hash
    /// into `structHashes` and each Merkle leaf into `leaves`. `status`: in STATUS_UNSORTED, 1 + the index of the
    /// first entry that is empty or not strictly after the one before in byte order (0: sorted); STATUS_BAD, a cap past
    /// 64 bits, a dirty payee or flag, or an entry past 255 bytes; STATUS_OPEN_WILDCARD, a wildcard with payee 0;
    /// STATUS_PINNED, an entry with a payee. Assembly: in Solidity the three encodings of each entry cost about three
    /// times as much.
    function _encodeMerchants(
        Merchant[] calldata merchants,
        bytes32[] memory structHashes,
        bytes32[] memory leaves
    ) private pure returns (bytes memory encoded, uint256 status) {
        bytes32 typehash = MERCHANT_TYPEHASH;
        bytes4 notHostSelector = SpendPolicyMerchantNotHostName.selector;
        assembly ("memory-safe") {
            /// Whether bytes [b, b + bLen) sort strictly after [a, a + aLen) (a proper prefix sorts first).
            function after_(a, aLen, b, bLen) -> yes {
                let m := bLen
                if lt(aLen, m) {
                    m := aLen
                }
                let order := 0 // 1: a first, 2: b first
                for {
                    let k := 0
                } and(lt(k, m), iszero(order)) {
                    k := add(k, 0x20)
                } {
                    let x := mload(add(a, k))
                    let y := mload(add(b, k))
                    let rest := sub(m, k)
                    if lt(rest, 0x20) {
                        let mask := not(sub(shl(shl(3, sub(0x20, rest)), 1), 1))
                        x := and(x, mask)
                        y := and(y, mask)
                    }
                    if iszero(eq(x, y)) {
                        order := add(1, gt(x, y))
                    }
                }
                switch order
                case 0 {
                    yes := lt(aLen, bLen)
                }
                default {
                    yes := eq(order, 1)
                }
            }
            /// Writes the element at calldata `elem` at `tail` ([0x80][cap][payee][flag][len][entry, zero-padded]).
            function put(elem, tail) -> len, padded {
                let str := add(elem, calldataload(elem))
                len := calldataload(str)
                padded := and(add(len, 31), not(31))
                mstore(tail, 0x80)
                calldatacopy(add(tail, 0x20), add(elem, 0x20), 0x60) // cap, payee, flag
                mstore(add(tail, 0x80), 0)
                mstore(add(tail, add(0x80, padded)), 0)
                mstore(add(tail, 0x80), len)
                calldatacopy(add(tail, 0xa0), add(str, 0x20), len)
            }
            /// The element's EIP-712 Merchant hash (built past it) and its Merkle leaf,
            /// keccak256(keccak256(abi.encode(entry, cap, payee))): abi.encode lays out as
            /// [0x60][cap][payee][len][entry, padded], the element from its second word with three words moved.
            function hashes(tail, len, padded, typehash_) -> structHash, leaf {
                let next := add(add(tail, 0xa0), padded)
                mstore(next, typehash_)
                mstore(add(next, 0x20), keccak256(add(tail, 0xa0), len))
                mcopy(add(next, 0x40), add(tail, 0x20), 0x60)
                structHash := keccak256(next, 0xa0)
                let flag := mload(add(tail, 0x60))
                mcopy(add(tail, 0x40), add(tail, 0x20), 0x40)
                mstore(add(tail, 0x20), 0x60)
                mstore(0x00, keccak256(add(tail, 0x20), add(0x80, padded)))
                leaf := keccak256(0x00, 0x20)
                mcopy(add(tail, 0x20), add(tail, 0x40), 0x40)
                mstore(add(tail, 0x60), flag)
            }
            /// STATUS_BAD, STATUS_PINNED and STATUS_OPEN_WILDCARD (bits 8, 10, 9) of the element at `tail`.
            function check(tail, len) -> bits {
                let payee := mload(add(tail, 0x40))
                bits := shl(
                    8,
                    iszero(iszero(or(or(shr(64, mload(add(tail, 0x20))), shr(160, payee)), or(gt(mload(add(tail, 0x60)), 1), gt(len, 255)))))
                )
                switch iszero(payee)
                case 0 {
                    bits := or(bits, 0x400)
                }
                default {
                    if eq(byte(0, mload(add(tail, 0xa0))), 0x2a) {
                        bits := or(bits, 0x200)
                    }
                }
            }
            /// Whether the `len` bytes at `p` are no normalised host name: "*", or "*." and a host, or a host; a host is
            /// lower-case ASCII letters, digits, '-' and '.', not ending in '.'. 32 bytes a step: a byte b (below 0x80)
            /// is in [lo, hi] when the high bits of (b | 0x80) - lo and (hi | 0x80) - b are both set, with no borrow
            /// between bytes.
            function notHost(p, len) -> bad {
                let start := 0
                if eq(byte(0, mload(p)), 0x2a) {
                    if eq(len, 1) {
                        leave
                    }
                    start := 2
                    if iszero(eq(byte(1, mload(p)), 0x2e)) {
                        bad := 1
                        leave
                    }
                }
                if iszero(gt(len, start)) {
                    bad := 1
                    leave
                }
                if eq(byte(0, mload(add(p, sub(len, 1)))), 0x2e) {
                    bad := 1
                    leave
                }
                for {
                    let k := start
                } lt(k, len) {
                    k := add(k, 0x20)
                } {
                    let w := mload(add(p, k))
                    let rest := sub(len, k)
                    if lt(rest, 0x20) {
                        // The bytes past the entry read as 'a'.
                        let keep := not(sub(shl(shl(3, sub(0x20, rest)), 1), 1))
                        w := or(and(w, keep), and(not(keep), 0x6161616161616161616161616161616161616161616161616161616161616161))
                    }
                    if and(w, 0x8080808080808080808080808080808080808080808080808080808080808080) {
                        bad := 1
                        leave
                    }
                    let x := or(w, 0x8080808080808080808080808080808080808080808080808080808080808080)
                    let ok := or(
                        or(
                            and(sub(x, 0x6161616161616161616161616161616161616161616161616161616161616161), sub(0xfafafafafafafafafafafafafafafafafafafafafafafafafafafafafafafafa, w)), // a-z
                            and(sub(x, 0x3030303030303030303030303030303030303030303030303030303030303030), sub(0xb9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9b9, w)) // 0-9
                        ),
                        and(sub(x, 0x2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d2d), sub(0xaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeaeae, w)) // '-', '.'
                    )
                    if iszero(eq(and(ok, 0x8080808080808080808080808080808080808080808080808080808080808080), 0x8080808080808080808080808080808080808080808080808080808080808080)) {
                        bad := 1
                        leave
                    }
                }
            }
            encoded := mload(0x40)
            mstore(add(encoded, 0x20), merchants.length)
            let tail := add(add(encoded, 0x40), shl(5, merchants.length))
            let prev := 0 // the previous element's length word
            for {
                let i := 0
            } lt(i, merchants.length) {
                i := add(i, 1)
            } {
                mstore(add(add(encoded, 0x40), shl(5, i)), sub(tail, add(encoded, 0x40)))
                let len, padded := put(add(merchants.offset, calldataload(add(merchants.offset, shl(5, i)))), tail)
                status := or(status, check(tail, len))
                if notHost(add(tail, 0xa0), len) {
                    mstore(0x00, notHostSelector)
                    mstore(0x04, i)
                    revert(0x00, 0x24)
                }
                if iszero(and(status, 0xff)) {
                    if or(iszero(len), and(gt(prev, 0), iszero(after_(add(prev, 0x20), mload(prev), add(tail, 0xa0), len)))) {
                        status := or(status, add(i, 1))
                    }
                }
                let structHash, leaf := hashes(tail, len, padded, typehash)
                mstore(add(add(structHashes, 0x20), shl(5, i)), structHash)
                mstore(add(add(leaves, 0x20), shl(5, i)), leaf)
                prev := add(tail, 0x80)
                tail := add(add(tail, 0xa0), padded)
            }
            mstore(encoded, sub(tail, add(encoded, 0x20)))
            mstore(0x40, tail)
        }
    }

    /// @dev Refuses a list in which an entry with payee 0 admits (PolicyRules.leafMatches) an entry that names a payee.
    /// Only wildcards ("*", "*.domain") can: sorted entries are distinct, and an exact host admits only itself. Run
    /// only when the list has both a wildcard with payee 0 and a pinned entry.
    function _checkOverlaps(Merchant[] calldata merchants) private pure {
        uint256 n = merchants.length;
        for (uint256 i; i < n; ++i) {
            bytes calldata wildcard = bytes(merchants[i].entry);
            if (merchants[i].payee != address(0) || wildcard[0] != "*") continue;
            for (uint256 j; j < n; ++j) {
                if (merchants[j].payee != address(0) && PolicyRules.leafMatches(wildcard, bytes(merchants[j].entry))) {
                    revert SpendPolicyMerchantOverlap(i, j);
                }
            }
        }
    }

    /// @dev StandardMerkleTree's root over these leaf hashes: sorted ascending, laid out as the library's array in
    /// `tree` (2n - 1 words; leaf i at index 2n-2-i), each inner node the sorted-pair hash of its children (what
    /// MerkleProof verifies). Assembly: Solidity's checked indexing made the sort of 64 leaves cost half a million gas.
    function _merkleRoot(bytes32[] memory leaves, bytes32[] memory tree) private pure returns (bytes32 root) {
        assembly ("memory-safe") {
            let n := mload(leaves)
            let base := add(leaves, 0x20)
            // Insertion sort (n <= MAX_MERCHANTS).
            for {
                let i := 1
            } lt(i, n) {
                i := add(i, 1)
            } {
                let leaf := mload(add(base, shl(5, i)))
                let j := i
                for {

                } gt(j, 0) {
                    j := sub(j, 1)
                } {
                    let left := mload(add(base, shl(5, sub(j, 1))))
                    if iszero(gt(left, leaf)) {
                        break
                    }
                    mstore(add(base, shl(5, j)), left)
                }
                mstore(add(base, shl(5, j)), leaf)
            }
            let nodes := add(tree, 0x20)
            let size := mload(tree)
            for {
                let i := 0
            } lt(i, n) {
                i := add(i, 1)
            } {
                mstore(add(nodes, shl(5, sub(sub(size, 1), i))), mload(add(base, shl(5, i))))
            }
            // Inner nodes, from the last down to the root: the sorted pair of children 2k+1 and 2k+2.
            for {
                let k := sub(size, n)
            } gt(k, 0) {

            } {
                k := sub(k, 1)
                let a := mload(add(nodes, shl(5, add(shl(1, k), 1))))
                let b := mload(add(nodes, shl(5, add(shl(1, k), 2))))
                if gt(a, b) {
                    let t := a
                    a := b
                    b := t
                }
                mstore(0x00, a)
                mstore(0x20, b)
                mstore(add(nodes, shl(5, k)), keccak256(0x00, 0x40))
            }
            if n {
                root := mload(nodes)
            }
        }
    }

    /// @dev PolicyUpdated(agent, version, policy, allowlistRoot, timestamp, signature), its data laid out here: the
    /// policy's twelve numbers from calldata, its merchants as `_allowlist` encoded (and hashed) them, the signature.
    /// The encoder's own copy of the calldata struct cost a quarter of an update with ten entries.
    function _emitPolicyUpdated(
        SignedPolicy calldata p,
        uint256 version,
        bytes32 root,
        uint256 signedAt,
        bytes calldata signature,
        bytes memory merchantsAbi
    ) private {
        bytes32 topic0 = PolicyUpdated.selector;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            let mlen := mload(merchantsAbi)
            let sigAt := add(0x220, mlen)
            mstore(ptr, 0x80) // the policy tuple's offset
            mstore(add(ptr, 0x20), root)
            mstore(add(ptr, 0x40), signedAt)
            mstore(add(ptr, 0x60), sigAt)
            // The tuple: perTxLimit, dailyBudget, merchants' offset (13 words in), approvalThreshold ... minSwapRate.
            calldatacopy(add(ptr, 0x80), p, 0x40)
            mstore(add(ptr, 0xc0), 0x1a0)
            calldatacopy(add(ptr, 0xe0), add(p, 0x60), 0x140)
            mcopy(add(ptr, 0x220), add(merchantsAbi, 0x20), mlen)
            let sig := add(ptr, sigAt)
            mstore(sig, signature.length)
            let sigPadded := and(add(signature.length, 31), not(31))
            mstore(add(sig, sigPadded), 0)
            calldatacopy(add(sig, 0x20), signature.offset, signature.length)
            log3(ptr, add(add(sigAt, 0x20), sigPadded), topic0, address(), version)
        }
    }
}
