// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {IERC1271} from "@openzeppelin/contracts/interfaces/IERC1271.sol";

/// @title Test1271Wallet: a minimal TEST contract payer. Never deploy it to a real network.
/// @notice Answers ERC-1271 with the magic value exactly for the digests its owner approved beforehand (the signature
/// bytes are ignored), the way SpendGate's policy wallet answers for what its policy authorised. The owner can also
/// make it call anything (to approve Permit2 on the token, or to start a channel withdrawal).
contract Test1271Wallet is IERC1271 {
    address public immutable owner;
    mapping(bytes32 digest => bool) public approved;

    event DigestApproved(bytes32 indexed digest, bool approved);

    error NotOwner();
    error CallFailed(bytes reason);

    constructor(address owner_) {
        owner = owner_;
    }

    modifier onlyOwner() {
        if (msg.sender != owner) revert NotOwner();
        _;
    }

    /// @notice Makes (or stops making) `digest` valid for ERC-1271.
    function setApproved(bytes32 digest, bool ok) external onlyOwner {
        approved[digest] = ok;
        emit DigestApproved(digest, ok);
    }

    /// @notice Calls `target` with `data` as this wallet.
    function execute(address target, bytes calldata data) external onlyOwner returns (bytes memory) {
        (bool ok, bytes memory out) = target.call(data);
        if (!ok) revert CallFailed(out);
        return out;
    }

    /// @notice ERC-1271: the magic value for an approved digest, 0xffffffff otherwise.
    function isValidSignature(bytes32 hash, bytes calldata) external view returns (bytes4) {
        return approved[hash] ? IERC1271.isValidSignature.selector : bytes4(0xffffffff);
    }
}
