// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";
import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// @title Test-only ERC-1271 smart-account owner.
/// @notice Accepts a signature when it is the stored EOA signer's ECDSA signature of the hash itself.
contract ERC1271Wallet is IERC1271 {
    address private immutable _signer;

    constructor(address signer_) {
        _signer = signer_;
    }

    /// @notice ERC-1271: the magic value when `signature` is the signer's signature of `hash`, 0xffffffff otherwise.
    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address recovered, ECDSA.RecoverError err, ) = ECDSA.tryRecoverCalldata(hash, signature);
        return err == ECDSA.RecoverError.NoError && recovered == _signer ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }

    /// @notice The EOA whose signatures this wallet accepts.
    function signer() external view returns (address) {
        return _signer;
    }
}
