// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";

/// @title The allowlist rule of a SpendGate policy.
/// @notice A merchant is allowed when a leaf of the owner-signed StandardMerkleTree admits it (leaves [entry, dailyCap]
/// of types ["string","uint256"], or [entry] of ["string"] for roots signed before per-entry caps existed):
/// "*" admits any merchant, "*.domain" any merchant ending in ".domain" and longer than it (so not "domain"
/// itself), anything else only itself. A zero root allows nothing; an empty merchant is never allowed.
library PolicyRules {
    /// @dev The leaf is in the allowlist and admits the merchant.
    /// Accepting either leaf form is safe: a StandardMerkleTree leaf is the double keccak of the ABI encoding, and
    /// abi.encode(string) starts with the word 0x20 where abi.encode(string, uint256) starts with 0x40, so no [entry]
    /// leaf hash equals an [entry, cap] leaf hash (nor an inner node: those hash 64 bytes, leaves 32). The operator
    /// therefore cannot drop or raise an entry's cap by claiming the other form or another cap: only the leaves the
    /// owner signed prove. A v1 leaf is tried only with cap 0, which is what a v1 root means.
    function merchantAllowed(
        bytes32 root,
        string calldata merchant,
        string calldata leaf,
        uint256 dailyCap,
        bytes32[] calldata proof
    ) internal pure returns (bool) {
        if (root == 0 || !leafMatches(bytes(leaf), bytes(merchant))) return false;
        // OpenZeppelin StandardMerkleTree leaf: double keccak of the ABI encoding of its values.
        bytes32 leafHash = keccak256(bytes.concat(keccak256(abi.encode(leaf, dailyCap))));
        if (MerkleProof.verifyCalldata(proof, root, leafHash)) return true;
        return dailyCap == 0 && MerkleProof.verifyCalldata(proof, root, keccak256(bytes.concat(keccak256(abi.encode(leaf)))));
    }

    /// @dev Same rule as leafMatches() in src/policy/allowlist.ts.
    function leafMatches(bytes calldata leaf, bytes calldata merchant) internal pure returns (bool) {
        uint256 merchantLength = merchant.length;
        if (merchantLength == 0) return false;
        uint256 leafLength = leaf.length;
        if (leafLength != 0 && leaf[0] == "*") {
            if (leafLength == 1) return true;
            if (leaf[1] == ".") {
                // suffix = leaf[1:], ".domain"; merchant must be strictly longer.
                uint256 suffixLength = leafLength - 1;
                if (merchantLength <= suffixLength) return false;
                return keccak256(merchant[merchantLength - suffixLength:]) == keccak256(leaf[1:]);
            }
        }
        return merchantLength == leafLength && keccak256(merchant) == keccak256(leaf);
    }
}
