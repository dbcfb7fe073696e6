// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// @title Multicall3 — the standard batching contract (mds1/multicall, MIT), re-typed from its
///        public interface for local chains. Lives at 0xcA11bde05977b3631167028862bE2a173976CA11
///        (the dev chain puts it there with anvil_setCode). No constructor, no storage.
contract Multicall3 {
    struct Call {
        address target;
        bytes callData;
    }

    struct Call3 {
        address target;
        bool allowFailure;
        bytes callData;
    }

    struct Call3Value {
        address target;
        bool allowFailure;
        uint256 value;
        bytes callData;
    }

    struct Result {
        bool success;
        bytes returnData;
    }

    /// Calls in order; reverts if any call fails.
    function aggregate(Call[] calldata calls) public payable returns (uint256 blockNumber, bytes[] memory returnData) {
        blockNumber = block.number;
        returnData = new bytes[](calls.length);
        for (uint256 i = 0; i < calls.length; ++i) {
            bool success;
            (success, returnData[i]) = calls[i].target.call(calls[i].callData);
            require(success, "Multicall3: call failed");
        }
    }

    /// Calls in order; a failed call reverts the batch only if requireSuccess.
    function tryAggregate(bool requireSuccess, Call[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; ++i) {
            Result memory result = returnData[i];
            (result.success, result.returnData) = calls[i].target.call(calls[i].callData);
            if (requireSuccess) require(result.success, "Multicall3: call failed");
        }
    }

    function tryBlockAndAggregate(bool requireSuccess, Call[] calldata calls)
        public
        payable
        returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData)
    {
        blockNumber = block.number;
        blockHash = blockhash(block.number);
        returnData = tryAggregate(requireSuccess, calls);
    }

    function blockAndAggregate(Call[] calldata calls)
        public
        payable
        returns (uint256 blockNumber, bytes32 blockHash, Result[] memory returnData)
    {
        (blockNumber, blockHash, returnData) = tryBlockAndAggregate(true, calls);
    }

    /// Calls in order; each call says whether it may fail.
    function aggregate3(Call3[] calldata calls) public payable returns (Result[] memory returnData) {
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; ++i) {
            Call3 calldata call = calls[i];
            Result memory result = returnData[i];
            (result.success, result.returnData) = call.target.call(call.callData);
            require(call.allowFailure || result.success, "Multicall3: call failed");
        }
    }

    /// Like aggregate3, with ETH value per call; msg.value must equal the sum of the values.
    function aggregate3Value(Call3Value[] calldata calls) public payable returns (Result[] memory returnData) {
        uint256 valAccumulator;
        returnData = new Result[](calls.length);
        for (uint256 i = 0; i < calls.length; ++i) {
            Call3Value calldata call = calls[i];
            Result memory result = returnData[i];
            valAccumulator += call.value;
            (result.success, result.returnData) = call.target.call{value: call.value}(call.callData);
            require(call.allowFailure || result.success, "Multicall3: call failed");
        }
        require(msg.value == valAccumulator, "Multicall3: value mismatch");
    }

    function getBlockHash(uint256 blockNumber) public view returns (bytes32 blockHash) {
        blockHash = blockhash(blockNumber);
    }

    function getBlockNumber() public view returns (uint256 blockNumber) {
        blockNumber = block.number;
    }

    function getCurrentBlockCoinbase() public view returns (address coinbase) {
        coinbase = block.coinbase;
    }

    /// Post-merge this is PREVRANDAO (what block.difficulty returned before).
    function getCurrentBlockDifficulty() public view returns (uint256 difficulty) {
        difficulty = block.prevrandao;
    }

    function getCurrentBlockGasLimit() public view returns (uint256 gaslimit) {
        gaslimit = block.gaslimit;
    }

    function getCurrentBlockTimestamp() public view returns (uint256 timestamp) {
        timestamp = block.timestamp;
    }

    function getEthBalance(address addr) public view returns (uint256 balance) {
        balance = addr.balance;
    }

    function getLastBlockHash() public view returns (bytes32 blockHash) {
        unchecked {
            blockHash = blockhash(block.number - 1);
        }
    }

    function getBasefee() public view returns (uint256 basefee) {
        basefee = block.basefee;
    }

    function getChainId() public view returns (uint256 chainid) {
        chainid = block.chainid;
    }
}
