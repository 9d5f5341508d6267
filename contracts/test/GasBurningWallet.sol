// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";

/// @title Test-only ERC-1271 wallet that burns gas: a hostile payer for the x402 facilitator's gas limit.
/// @notice Accepts every signature, after hashing `rounds` times in isValidSignature (the gas grows faster than the
///         rounds: each one also takes more memory).
contract GasBurningWallet is IERC1271 {
    uint256 private immutable _rounds;

    constructor(uint256 rounds_) {
        _rounds = rounds_;
    }

    /// @notice ERC-1271: the magic value for any signature, once the gas is burnt.
    function isValidSignature(bytes32 hash, bytes calldata) external view returns (bytes4) {
        bytes32 h = hash;
        for (uint256 i = 0; i < _rounds; ++i) h = keccak256(abi.encode(h));
        return h == bytes32(0) ? bytes4(0xffffffff) : IERC1271.isValidSignature.selector;
    }
}
