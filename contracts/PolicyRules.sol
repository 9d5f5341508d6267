// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title The allowlist rule of a SpendGate policy.
/// @notice A merchant is allowed when a leaf of the owner-signed StandardMerkleTree admits it: leaves [entry, dailyCap,
/// payee] of types ["string","uint256","address"], or, for roots signed before payees existed, [entry, dailyCap]
/// (["string","uint256"]) or [entry] (["string"]) leaves, which mean payee 0. "*" admits any merchant, "*.domain" any
/// merchant ending in ".domain" and longer than it (so not "domain" itself), anything else only itself. A zero root
/// allows nothing; an empty merchant is never allowed.
library PolicyRules {
    /// @dev The leaf is in the allowlist and admits the merchant.
    /// Accepting the three leaf forms is safe: a StandardMerkleTree leaf is the double keccak of the ABI encoding, and
    /// abi.encode(string) starts with the word 0x20, abi.encode(string, uint256) with 0x40 and abi.encode(string,
    /// uint256, address) with 0x60, so no leaf of one form hashes as a leaf of another (nor as an inner node: those hash
    /// 64 bytes, leaves 32). The operator therefore cannot drop or change an entry's cap or payee by claiming another
    /// form, cap or payee: only the leaves the owner signed prove. The older forms are tried only with payee 0 (and
    /// the oldest only with cap 0 too), which is what those roots mean.
    function merchantAllowed(
        bytes32 root,
        string calldata merchant,
        ISpendPolicy.Leaf calldata leaf,
        bytes32[] calldata proof
    ) internal pure returns (bool) {
        string calldata entry = leaf.entry;
        if (root == 0 || !leafMatches(bytes(entry), bytes(merchant))) return false;
        // OpenZeppelin StandardMerkleTree leaf: double keccak of the ABI encoding of its values.
        uint256 cap = leaf.dailyCap;
        address payee = leaf.payee;
        if (MerkleProof.verifyCalldata(proof, root, keccak256(bytes.concat(keccak256(abi.encode(entry, cap, payee)))))) {
            return true;
        }
        if (payee != address(0)) return false;
        if (MerkleProof.verifyCalldata(proof, root, keccak256(bytes.concat(keccak256(abi.encode(entry, cap)))))) return true;
        return cap == 0 && MerkleProof.verifyCalldata(proof, root, keccak256(bytes.concat(keccak256(abi.encode(entry)))));
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
