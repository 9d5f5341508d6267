// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

/// @title Whether a caller may act as an agent's operator: the operator itself, or a member of the operator set the
/// operator slot names (OperatorSet.isOperator).
library OperatorCheck {
    /// @dev Gas for the set's answer: a mapping read needs far less; a hostile contract cannot burn the caller's gas.
    uint256 private constant QUERY_GAS = 30_000;

    /// @notice True when `account` is `operator`, or when `operator` is a contract whose `isOperator(account)` answers
    /// exactly 32 bytes encoding `true`. One key: one comparison, no call. An EOA operator answers a call with no data,
    /// and anything but exactly 32 bytes holding 1 counts as "no", so neither a key nor a contract that answers
    /// something else passes by accident; only the 32 bytes are copied, whatever the callee returns.
    function isOperator(address operator, address account) internal view returns (bool ok) {
        if (account == operator) return true;
        bytes4 selector = bytes4(keccak256("isOperator(address)"));
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            mstore(ptr, selector)
            mstore(add(ptr, 0x04), and(account, 0xffffffffffffffffffffffffffffffffffffffff))
            mstore(0x00, 0)
            let success := staticcall(QUERY_GAS, operator, ptr, 0x24, 0x00, 0x20)
            ok := and(and(success, eq(returndatasize(), 0x20)), eq(mload(0x00), 1))
        }
    }
}
