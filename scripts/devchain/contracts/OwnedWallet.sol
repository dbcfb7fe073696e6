// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ECDSA} from "@openzeppelin/contracts/utils/cryptography/ECDSA.sol";

/// A minimal EIP-1271 smart-contract wallet for tests: a signature is valid
/// when it recovers to the wallet's owner (an EOA) over the hash it is asked
/// about (for a personal_sign message: its EIP-191 hash).
contract OwnedWallet {
    bytes4 internal constant MAGIC = 0x1626ba7e;
    address public immutable owner;

    constructor(address owner_) {
        owner = owner_;
    }

    function isValidSignature(bytes32 hash, bytes calldata signature) external view returns (bytes4) {
        (address signer, ECDSA.RecoverError err, ) = ECDSA.tryRecover(hash, signature);
        return err == ECDSA.RecoverError.NoError && signer == owner ? MAGIC : bytes4(0xffffffff);
    }
}

/// Deploys OwnedWallets at CREATE2 addresses known before deployment (for
/// EIP-6492 signatures of wallets not deployed yet).
contract OwnedWalletFactory {
    function deploy(address owner, bytes32 salt) external returns (address wallet) {
        wallet = address(new OwnedWallet{salt: salt}(owner));
    }

    function addressOf(address owner, bytes32 salt) external view returns (address) {
        bytes32 h = keccak256(abi.encodePacked(bytes1(0xff), address(this), salt, keccak256(abi.encodePacked(type(OwnedWallet).creationCode, abi.encode(owner)))));
        return address(uint160(uint256(h)));
    }
}
