// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Test only: an "operator set" that answers every call in a malformed way, chosen by `mode`, to show that
/// only exactly 32 bytes holding 1 make a policy accept a caller.
contract OddOperatorSet {
    /// 0: 64 bytes of ones; 1: the number 2; 2: reverts with 32 bytes holding 1; 3: 31 bytes; 4: burns all its gas.
    uint256 public mode;

    function setMode(uint256 mode_) external {
        mode = mode_;
    }

    fallback() external {
        uint256 m = mode;
        assembly {
            mstore(0x00, 1)
            mstore(0x20, 1)
            if eq(m, 0) { return(0x00, 0x40) }
            if eq(m, 1) {
                mstore(0x00, 2)
                return(0x00, 0x20)
            }
            if eq(m, 2) { revert(0x00, 0x20) }
            if eq(m, 3) { return(0x01, 0x1f) }
            for {} 1 {} {}
        }
    }
}
