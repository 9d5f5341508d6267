// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {MerkleProof} from "@openzeppelin/contracts/utils/cryptography/MerkleProof.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";

/// @title The allowlist rule of a SpendGate policy.
/// @notice A merchant is allowed when a leaf of the allowlist's StandardMerkleTree (derived by the contract from the
/// owner-signed entries: SpendPolicyUpdates) admits it: leaves [entry, dailyCap, payee] of types
/// ["string","uint256","address"]. "*" admits any merchant, "*.domain" any merchant ending in ".domain" and longer than
/// it (so not "domain" itself), anything else only itself. A zero root allows nothing; an empty merchant is never
/// allowed.
library PolicyRules {
    /// @dev The leaf is in the allowlist and admits the merchant. Only the leaves the owner signed prove: the operator
    /// cannot drop or change an entry's cap or payee.
    function merchantAllowed(
        bytes32 root,
        string calldata merchant,
        ISpendPolicy.Leaf calldata leaf,
        bytes32[] calldata proof
    ) internal pure returns (bool) {
        string calldata entry = leaf.entry;
        if (root == 0 || !leafMatches(bytes(entry), bytes(merchant))) return false;
        // OpenZeppelin StandardMerkleTree leaf: double keccak of the ABI encoding of its values.
        return MerkleProof.verifyCalldata(proof, root, keccak256(bytes.concat(keccak256(abi.encode(entry, leaf.dailyCap, leaf.payee)))));
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
