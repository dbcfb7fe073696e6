#!/usr/bin/env node
// Compiles contracts/*.sol with solc-js (offline) and writes artifacts.json.
// Usage: node scripts/devchain/compile.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const solc = require('solc');
const here = dirname(fileURLToPath(import.meta.url));

const CONTRACTS = { TestUSDC: 'TestUSDC.sol', Multicall3: 'Multicall3.sol', OwnedWallet: 'OwnedWallet.sol', OwnedWalletFactory: 'OwnedWallet.sol' };

/** Resolves `@openzeppelin/contracts/...` (any package path) from node_modules. */
function findImports(path) {
  try {
    return { contents: readFileSync(require.resolve(path), 'utf8') };
  } catch (err) {
    return { error: `cannot resolve ${path}: ${err.message}` };
  }
}

const input = {
  language: 'Solidity',
  sources: Object.fromEntries(
    [...new Set(Object.values(CONTRACTS))].map((file) => [file, { content: readFileSync(join(here, 'contracts', file), 'utf8') }]),
  ),
  settings: {
    // cancun: supported by anvil's default hardfork and by Taiko; avoids newer opcodes.
    evmVersion: 'cancun',
    optimizer: { enabled: true, runs: 200 },
    outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
  },
};

const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImports }));
const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
for (const e of output.errors ?? []) console.error(e.formattedMessage);
if (errors.length > 0) process.exit(1);

const pick = (name) => output.contracts[CONTRACTS[name]][name];
const usdc = pick('TestUSDC');
const mc = pick('Multicall3');
const wallet = pick('OwnedWallet');
const factory = pick('OwnedWalletFactory');
const artifacts = {
  TestUSDC: { abi: usdc.abi, bytecode: `0x${usdc.evm.bytecode.object}` },
  Multicall3: {
    abi: mc.abi,
    bytecode: `0x${mc.evm.bytecode.object}`,
    deployedBytecode: `0x${mc.evm.deployedBytecode.object}`,
  },
  // EIP-1271 test wallet (owner EOA) and its CREATE2 factory (EIP-6492 counterfactual sign-ins)
  OwnedWallet: { abi: wallet.abi, bytecode: `0x${wallet.evm.bytecode.object}` },
  OwnedWalletFactory: { abi: factory.abi, bytecode: `0x${factory.evm.bytecode.object}` },
};
writeFileSync(join(here, 'artifacts.json'), `${JSON.stringify(artifacts, null, 2)}\n`);
console.log(`wrote ${join(here, 'artifacts.json')} (solc ${solc.version()})`);
