// SPDX-License-Identifier: MIT
pragma solidity 0.8.28;

import {Ownable} from "@openzeppelin/contracts/access/Ownable.sol";
import {Clones} from "@openzeppelin/contracts/proxy/Clones.sol";
import {SignatureChecker} from "@openzeppelin/contracts/utils/cryptography/SignatureChecker.sol";
import {ISpendPolicy} from "./ISpendPolicy.sol";
import {ISpendPolicyFactory} from "./ISpendPolicyFactory.sol";
import {SpendPolicy} from "./SpendPolicy.sol";
import {OperatorCheck} from "./OperatorCheck.sol";

/// @title Deploys one agent (wallet and spend policy in one contract) per signing key, as a minimal proxy.
/// @notice Every agent is an ERC-1167 clone of one implementation (deployed by this factory's constructor, verified
/// once), with the agent's signing key as immutable argument. Its CREATE2 salt is the signing key (an open agent) or
/// keccak256(signing key, owner) (an owner-bound agent, created with its owner known): its address depends only on this
/// factory, that key and, when bound, the owner, so genesis can hand it out before anything is deployed. Only the
/// default operator (or, when it is an OperatorSet, one of its members) deploys, so nobody can squat an agent's
/// address with an owner of their own; and an owner-bound address cannot be deployed with any other owner, even by
/// the operator.
contract SpendPolicyFactory is ISpendPolicyFactory, Ownable {
    // ---------------------------------------------------------------- storage
    /// @dev keccak256 of SpendPolicy's creation code, as this factory was compiled with: configure deploys exactly that
    /// code (its bytes come as calldata, since this factory's runtime code has no room for them).
    bytes32 private immutable _implementationCodeHash;
    /// @dev keccak256 of SpendPolicySchemes' and SpendPolicyUpdates' creation codes (the modules every wallet runs by
    /// delegatecall), given to the constructor: they are part of this factory's init code, so of its address. Their
    /// own creation codes would not fit in it (EIP-3860's 48 KiB) beside SpendPolicy's.
    bytes32 private immutable _schemesCodeHash;
    bytes32 private immutable _updatesCodeHash;
    address private _implementation;
    address private _defaultOperator;
    address private _schemes;
    address private _updates;
    address private _usdc;

    // ---------------------------------------------------------------- modifiers
    modifier onlyDefaultOperator() {
        _checkDeployer();
        _;
    }

    // ---------------------------------------------------------------- constructor
    /// @param initialOwner the factory's owner: configures it once, then sets the default operator
    /// @param schemesCodeHash keccak256 of SpendPolicySchemes' creation code (without constructor arguments)
    /// @param updatesCodeHash keccak256 of SpendPolicyUpdates' creation code
    /// @dev Nothing chain-specific here: deployed through the deterministic deployer (CREATE2) with the same arguments,
    /// the factory has the same address on every network, and so (its first three creations) have its modules and its
    /// implementation, and so has every agent (signing key, and owner when bound) on every network its owner deploys
    /// it on. Every byte of code those agents run is fixed by that address: the owner of a factory at it, on a network
    /// nobody configured yet, chooses only the network's token and swap contracts.
    constructor(address initialOwner, bytes32 schemesCodeHash, bytes32 updatesCodeHash) Ownable(initialOwner) {
        _implementationCodeHash = keccak256(type(SpendPolicy).creationCode);
        _schemesCodeHash = schemesCodeHash;
        _updatesCodeHash = updatesCodeHash;
    }

    // ---------------------------------------------------------------- external
    /// @notice Factory owner only, once, before configure: creates the wallet's two modules, SpendPolicySchemes for
    /// `usdc` (x402 channels and upto ceilings) and SpendPolicyUpdates (the owner's SetPolicy, the allowlist in clear),
    /// from creation codes checked against the hashes this factory was deployed with. They are its first two
    /// creations. (Apart from configure: together they pass the 16.8M gas cap of a transaction on some networks.)
    /// @param schemesCode SpendPolicySchemes' creation code (without constructor arguments)
    /// @param updatesCode SpendPolicyUpdates' creation code
    /// @param usdc the EIP-3009 token the agents pay with (this network's USDC)
    function createModules(bytes calldata schemesCode, bytes calldata updatesCode, address usdc) external onlyOwner {
        if (_schemes != address(0)) revert SpendPolicyFactoryConfigured(_schemes);
        if (usdc == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        if (keccak256(schemesCode) != _schemesCodeHash || keccak256(updatesCode) != _updatesCodeHash) {
            revert SpendPolicyFactoryWrongImplementation();
        }
        _schemes = _create(bytes.concat(schemesCode, abi.encode(usdc)));
        _updates = _create(updatesCode);
        _usdc = usdc;
    }

    /// @notice Factory owner only, once, after createModules: deploys the one SpendPolicy implementation with this
    /// network's token, swap contracts and the modules createModules made, and sets the default operator. Until then
    /// no agent can be deployed. The implementation is this factory's third creation, so its address is the same on
    /// every network; its code is SpendPolicy's, checked against the hash this factory computed from its own compiled
    /// copy (the owner chooses only the network's swap contracts, and the token in createModules).
    /// @param creationCode SpendPolicy's creation code (without constructor arguments)
    /// @param defaultOperator_ the service's relayer (one key, or an OperatorSet): deploys agents, becomes their operator
    /// @param swapRouter SwapRouter02 of swaps before settlement (zero with the next two: no swaps)
    /// @param weth WETH9
    /// @param uniswapFactory the Uniswap v3 factory whose USDC/WETH 0.05% pool bounds the price
    function configure(
        bytes calldata creationCode,
        address defaultOperator_,
        address swapRouter,
        address weth,
        address uniswapFactory
    ) external onlyOwner {
        if (_implementation != address(0)) revert SpendPolicyFactoryConfigured(_implementation);
        (address schemes, address updates, address usdc) = (_schemes, _updates, _usdc);
        if (schemes == address(0)) revert SpendPolicyFactoryNoModules();
        if (keccak256(creationCode) != _implementationCodeHash) revert SpendPolicyFactoryWrongImplementation();
        address implementation_ = _create(
            bytes.concat(creationCode, abi.encode(usdc, ISpendPolicy.SwapConfig(swapRouter, weth, uniswapFactory), schemes, updates))
        );
        _implementation = implementation_;
        emit Configured(implementation_, usdc, schemes, updates);
        _setDefaultOperator(defaultOperator_);
    }

    /// @inheritdoc ISpendPolicyFactory
    function deployAgent(
        address signer,
        address agentOwner,
        bool ownerBound,
        ISpendPolicy.SignedPolicy calldata,
        uint256,
        bytes calldata
    ) external onlyDefaultOperator returns (address agent) {
        if (signer == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        address implementation_ = _implementation;
        bytes32 salt = _salt(signer, ownerBound ? agentOwner : address(0));
        address predicted = Clones.predictDeterministicAddressWithImmutableArgs(implementation_, abi.encodePacked(signer), salt);
        if (predicted.code.length != 0) revert ISpendPolicy.SpendPolicyAlreadyDeployed(predicted);
        agent = Clones.cloneDeterministicWithImmutableArgs(implementation_, abi.encodePacked(signer), salt);
        // The default operator (one key, or the OperatorSet of every instance) becomes the agent's, not the member that
        // relayed: any instance serves the agent.
        _initialize(agent, agentOwner, _defaultOperator);
        emit AgentDeployed(agent, agentOwner, agent);
    }

    /// @notice Factory owner only. Sets the account that deploys agents and becomes the operator of new ones
    /// (existing agents rotate their operator with the owner's SetOperator signature).
    function setDefaultOperator(address operator_) external onlyOwner {
        _setDefaultOperator(operator_);
    }

    // ---------------------------------------------------------------- view
    /// @inheritdoc ISpendPolicyFactory
    function predictAgent(address signer, address boundOwner) public view returns (address) {
        return
            Clones.predictDeterministicAddressWithImmutableArgs(
                _implementation,
                abi.encodePacked(signer),
                _salt(signer, boundOwner)
            );
    }

    /// @inheritdoc ISpendPolicyFactory
    function agentOf(address signer, address boundOwner) external view returns (address) {
        address predicted = predictAgent(signer, boundOwner);
        return predicted.code.length != 0 ? predicted : address(0);
    }

    /// @notice The account that deploys agents and becomes the operator of new ones.
    function defaultOperator() external view returns (address) {
        return _defaultOperator;
    }

    /// @notice The one SpendPolicy implementation every agent delegates to.
    function implementation() external view returns (address) {
        return _implementation;
    }

    /// @notice The modules createModules made (zero before) and the token they were made for.
    function modules() external view returns (address schemes, address updates, address usdc) {
        return (_schemes, _updates, _usdc);
    }

    /// @inheritdoc ISpendPolicyFactory
    function isValidSignatureNow(address signer, bytes32 hash, bytes calldata signature) external view returns (bool) {
        return SignatureChecker.isValidSignatureNowCalldata(signer, hash, signature);
    }

    // ---------------------------------------------------------------- internal
    /// @dev SpendPolicy.initialize(owner, operator, firstPolicy, timestamp, signature) on `agent`, its last three
    /// arguments forwarded as deployAgent received them: its head is one word shorter than deployAgent's (two
    /// addresses for three words), so the two offsets move by a word and the tail is copied as it is, not decoded and
    /// encoded again (a fifth of a deployment's gas with five entries). Whatever the bytes, the wallet verifies the
    /// owner's signature over exactly what it decodes, and deployAgent itself reads none of them.
    function _initialize(address agent, address agentOwner, address operator_) private {
        bytes4 selector = SpendPolicy.initialize.selector;
        assembly ("memory-safe") {
            let ptr := mload(0x40)
            let tail := sub(calldatasize(), 0xc4)
            mstore(ptr, selector)
            mstore(add(ptr, 0x04), agentOwner)
            mstore(add(ptr, 0x24), operator_)
            mstore(add(ptr, 0x44), sub(calldataload(0x64), 0x20)) // firstPolicy's offset
            mstore(add(ptr, 0x64), calldataload(0x84)) // timestamp
            mstore(add(ptr, 0x84), sub(calldataload(0xa4), 0x20)) // signature's offset
            calldatacopy(add(ptr, 0xa4), 0xc4, tail)
            if iszero(call(gas(), agent, 0, ptr, add(0xa4, tail), 0, 0)) {
                returndatacopy(ptr, 0, returndatasize())
                revert(ptr, returndatasize())
            }
        }
    }

    /// @dev CREATE of `initCode`; a constructor that reverts is a wrong code.
    function _create(bytes memory initCode) private returns (address created) {
        assembly ("memory-safe") {
            created := create(0, add(initCode, 0x20), mload(initCode))
        }
        if (created == address(0)) revert SpendPolicyFactoryWrongImplementation();
    }

    /// @dev Before configure the default operator is 0, which no caller is: nothing can be deployed.
    function _checkDeployer() internal view {
        if (!OperatorCheck.isOperator(_defaultOperator, msg.sender)) {
            revert ISpendPolicy.SpendPolicyUnauthorizedDeployer(msg.sender);
        }
    }

    function _setDefaultOperator(address operator_) private {
        if (operator_ == address(0)) revert ISpendPolicy.SpendPolicyZeroAddress();
        _defaultOperator = operator_;
        emit DefaultOperatorSet(operator_);
    }

    /// @dev An open agent's salt is its signing key (as before owner-bound agents existed, so those addresses stay);
    /// an owner-bound one's commits to the owner too. The two cannot collide: keccak256 of 64 bytes is not a padded
    /// 20-byte value but with negligible probability.
    function _salt(address signer, address boundOwner) private pure returns (bytes32) {
        if (boundOwner == address(0)) return bytes32(uint256(uint160(signer)));
        return keccak256(abi.encode(signer, boundOwner));
    }
}
