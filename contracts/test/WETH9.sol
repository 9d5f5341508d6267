// SPDX-License-Identifier: GPL-3.0-or-later
pragma solidity 0.8.28;

/// @title WETH9: Wrapped Ether, the canonical WETH9 (as at Base's 0x4200000000000000000000000000000000000006).
/// @notice TEST AND EMBEDDED MODE ONLY: the embedded chain places this runtime code at Base's WETH address with
/// `hardhat_setCode` (Base's own is a predeploy). A line-for-line port of WETH9 to 0.8: same storage, events,
/// revert-free transferFrom semantics for unlimited allowances, and `receive` wraps.
/// @dev No constructor and no initialised storage, so the code works wherever it is placed.
contract WETH9 {
    string public constant name = "Wrapped Ether";
    string public constant symbol = "WETH";
    uint8 public constant decimals = 18;

    event Approval(address indexed src, address indexed guy, uint256 wad);
    event Transfer(address indexed src, address indexed dst, uint256 wad);
    event Deposit(address indexed dst, uint256 wad);
    event Withdrawal(address indexed src, uint256 wad);

    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    receive() external payable {
        deposit();
    }

    /// @notice Wraps msg.value.
    function deposit() public payable {
        balanceOf[msg.sender] += msg.value;
        emit Deposit(msg.sender, msg.value);
    }

    /// @notice Unwraps `wad` back to ETH.
    function withdraw(uint256 wad) external {
        require(balanceOf[msg.sender] >= wad);
        balanceOf[msg.sender] -= wad;
        payable(msg.sender).transfer(wad);
        emit Withdrawal(msg.sender, wad);
    }

    /// @notice The ETH this contract holds: every wrapped wei.
    function totalSupply() external view returns (uint256) {
        return address(this).balance;
    }

    /// @notice Lets `guy` spend `wad` of the caller's WETH.
    function approve(address guy, uint256 wad) external returns (bool) {
        allowance[msg.sender][guy] = wad;
        emit Approval(msg.sender, guy, wad);
        return true;
    }

    /// @notice Moves `wad` to `dst`.
    function transfer(address dst, uint256 wad) external returns (bool) {
        return transferFrom(msg.sender, dst, wad);
    }

    /// @notice Moves `wad` from `src` to `dst`, spending allowance unless it is unlimited or `src` is the caller.
    function transferFrom(address src, address dst, uint256 wad) public returns (bool) {
        require(balanceOf[src] >= wad);
        if (src != msg.sender && allowance[src][msg.sender] != type(uint256).max) {
            require(allowance[src][msg.sender] >= wad);
            allowance[src][msg.sender] -= wad;
        }
        balanceOf[src] -= wad;
        balanceOf[dst] += wad;
        emit Transfer(src, dst, wad);
        return true;
    }
}
