// A local EVM chain for development and tests: anvil (chain id 167000 like Taiko Alethia, or another
// id, e.g. 8453 like Base, for tests of several payment networks)
// with an EIP-3009 USDC look-alike (TestUSDC) and Multicall3 at its canonical address.
// Types: index.d.mts. CLI: cli.mjs. Contracts/artifacts: compile.mjs.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import {
  createPublicClient, createWalletClient, defineChain, getAddress, http, keccak256, parseSignature, stringToHex, toHex,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

export const CHAIN_ID = 167000;
export const MULTICALL3_ADDRESS = '0xcA11bde05977b3631167028862bE2a173976CA11';
export const artifacts = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), 'artifacts.json'), 'utf8'));
export const usdcAbi = artifacts.TestUSDC.abi;

// anvil's well-known default accounts (mnemonic "test test ... junk"), 10000 ETH each.
const ANVIL_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80', // 0: deployer, helper txs
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d', // 1: settler (facilitator gas)
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a', // 2: payTo
];
/** Payers are deterministic keys outside anvil's genesis, so they hold no ETH. */
export const payerKey = (i) => keccak256(stringToHex(`pind-devchain-payer-${i}`));

const anvilBin = () =>
  join(dirname(createRequire(import.meta.url).resolve('@foundry-rs/anvil-linux-amd64/package.json')), 'bin', 'anvil');

/** A viem chain for a dev chain at rpcUrl (Multicall3 registered, so client.multicall works). */
export function devChainDefinition(rpcUrl, chainId = CHAIN_ID) {
  return defineChain({
    id: chainId,
    name: 'pind devchain',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
    contracts: { multicall3: { address: MULTICALL3_ADDRESS } },
  });
}

// Per-rpcUrl clients, so the helpers also work on a description parsed from cli.mjs output.
const states = new Map();
function state(rpcUrl, chainId = CHAIN_ID) {
  let s = states.get(rpcUrl);
  if (!s) {
    const chain = devChainDefinition(rpcUrl, chainId);
    const transport = http(rpcUrl, { retryCount: 0 });
    s = {
      chain,
      publicClient: createPublicClient({ chain, transport, pollingInterval: 50 }),
      wallet: (key) => createWalletClient({ chain, transport, account: privateKeyToAccount(key), pollingInterval: 50 }),
      queue: Promise.resolve(), // helper (deployer) txs run one at a time: no nonce races
    };
    states.set(rpcUrl, s);
  }
  return s;
}

/** Public and wallet clients for a running dev chain (50 ms polling). */
export function devChainClients(chain) {
  const { publicClient, wallet } = state(chain.rpcUrl, chain.chainId);
  return { publicClient, walletClient: wallet };
}

/** Runs fn after every earlier helper tx on this chain; rejects if the tx reverts. */
function helperTx(rpcUrl, fn, chainId = CHAIN_ID) {
  const s = state(rpcUrl, chainId);
  const run = s.queue.then(async () => {
    const hash = await fn(s);
    const receipt = await s.publicClient.waitForTransactionReceipt({ hash });
    if (receipt.status !== 'success') throw new Error(`devchain: tx ${hash} reverted`);
    return receipt;
  });
  s.queue = run.catch(() => {});
  return run;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

async function rpc(rpcUrl, method, params = []) {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = await res.json();
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result;
}

/** Spawns anvil and resolves once it answers eth_chainId; rejects if it exits first or the deadline passes. */
async function spawnAnvil(port, timeoutMs, extraArgs = [], chainId = CHAIN_ID) {
  const child = spawn(anvilBin(), [
    '--chain-id', String(chainId), '--host', '127.0.0.1', '--port', String(port), '--silent',
    '--accounts', String(ANVIL_KEYS.length), ...extraArgs,
  ], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d) => { stderr = (stderr + d).slice(-4000); });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const spawned = new Promise((resolve, reject) => { child.once('spawn', resolve); child.once('error', reject); });
  const killOnExit = () => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* already gone */ } };
  process.on('exit', killOnExit);
  const kill = async () => {
    process.off('exit', killOnExit);
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
      try { process.kill(child.pid, 'SIGTERM'); } catch { /* exited meanwhile; 'exit' still fires */ }
      const timer = setTimeout(() => { try { process.kill(child.pid, 'SIGKILL'); } catch { /* gone */ } }, 5000);
      await exited;
      clearTimeout(timer);
    }
  };

  const rpcUrl = `http://127.0.0.1:${port}`;
  let dead = false;
  const deadline = Date.now() + timeoutMs;
  const ready = (async () => {
    await spawned;
    while (!dead) {
      try {
        const id = await rpc(rpcUrl, 'eth_chainId');
        if (Number(id) !== chainId) throw new Error(`devchain: port ${port} answers chain id ${Number(id)}`);
        return;
      } catch (err) {
        if (err.message.startsWith('devchain:')) throw err;
        if (Date.now() > deadline) throw new Error(`devchain: anvil not ready after ${timeoutMs} ms`);
        await delay(20); // poll interval, not synchronisation
      }
    }
  })();
  const early = exited.then(({ code, signal }) => {
    dead = true;
    throw new Error(`devchain: anvil exited (code ${code}, signal ${signal}) before ready: ${stderr.trim()}`);
  });
  try {
    await Promise.race([ready, early]);
  } catch (err) {
    await kill();
    throw err;
  }
  return { child, rpcUrl, kill };
}

/**
 * Starts anvil on a free loopback port, deploys TestUSDC, installs Multicall3 and funds payers.
 * `pruneHistory`: persist no historical states (a long run otherwise leaves gigabytes of them under
 * ~/.foundry/anvil/tmp, see NOTES) and keep only the last N in memory (`true`: 64). Not 0: with no
 * state kept, an eth_call at "latest" fails now and then while a block is mined (79 of 3620 calls
 * beside a stream of transfers). `cachePath`: where anvil may persist states instead of ~/.foundry.
 * `chainId`: default 167000 (Taiko Alethia); e.g. 8453 (Base) for a second payment network.
 * @param {{port?: number, payers?: number, payerBalance?: bigint, timeoutMs?: number, pruneHistory?: boolean | number, cachePath?: string, chainId?: number}} [opts]
 */
export async function startDevChain(opts = {}) {
  const { payers: payerCount = 1, payerBalance = 1_000_000n * 10n ** 6n, timeoutMs = 15_000, chainId = CHAIN_ID } = opts;
  const anvilArgs = [
    ...(opts.pruneHistory ? ['--prune-history', String(opts.pruneHistory === true ? 64 : opts.pruneHistory)] : []),
    ...(opts.cachePath !== undefined ? ['--cache-path', opts.cachePath] : []),
  ];
  let node;
  for (let attempt = 1; !node; attempt++) {
    const port = opts.port ?? await freePort();
    try {
      node = { port, ...await spawnAnvil(port, timeoutMs, anvilArgs, chainId) };
    } catch (err) {
      // Another process may grab a free port between our probe and anvil's bind: retry.
      if (opts.port !== undefined || attempt >= 3 || !/exited/.test(err.message)) throw err;
    }
  }
  const { child, rpcUrl, port, kill } = node;
  const stop = async () => { states.delete(rpcUrl); await kill(); };

  try {
    const s = state(rpcUrl, chainId);
    const [deployerKey, settlerKey, payToKey] = ANVIL_KEYS;
    const deployer = s.wallet(deployerKey);
    const deploy = await helperTx(rpcUrl, () =>
      deployer.deployContract({ abi: usdcAbi, bytecode: artifacts.TestUSDC.bytecode }), chainId);
    const usdc = getAddress(deploy.contractAddress);
    await rpc(rpcUrl, 'anvil_setCode', [MULTICALL3_ADDRESS, artifacts.Multicall3.deployedBytecode]);

    const payers = Array.from({ length: payerCount }, (_, i) => {
      const privateKey = payerKey(i);
      return { privateKey, address: privateKeyToAccount(privateKey).address };
    });
    const chain = {
      rpcUrl, chainId, network: `eip155:${chainId}`, port, pid: child.pid, usdc, multicall3: MULTICALL3_ADDRESS,
      deployerKey, settlerKey, settlerAddress: privateKeyToAccount(settlerKey).address,
      payTo: privateKeyToAccount(payToKey).address, payToKey, payers,
    };
    await Promise.all(payers.map((p) => mintUsdc(chain, p.address, payerBalance)));
    return Object.assign(chain, { stop });
  } catch (err) {
    await stop();
    throw err;
  }
}

/** USDC balance (atomic units, 6 decimals). */
export function usdcBalance(chain, address) {
  return state(chain.rpcUrl, chain.chainId).publicClient.readContract({
    address: chain.usdc, abi: usdcAbi, functionName: 'balanceOf', args: [address],
  });
}

/** Mints USDC to `to` (owner = deployer). Resolves with the receipt once mined. */
export function mintUsdc(chain, to, amount) {
  return helperTx(chain.rpcUrl, (s) => s.wallet(chain.deployerKey).writeContract({
    address: chain.usdc, abi: usdcAbi, functionName: 'mint', args: [to, BigInt(amount)],
  }), chain.chainId);
}

/**
 * Moves USDC from the owner of fromKey to `to`. Resolves with the receipt once mined.
 * Default (`via: 'authorization'`): fromKey signs an EIP-3009 TransferWithAuthorization and the
 * deployer account submits it, so it works for payers without ETH and never competes with the
 * settler's nonces. `via: 'transfer'`: a plain ERC-20 transfer sent by fromKey (needs ETH).
 * @param {{via?: 'authorization' | 'transfer'}} [opts]
 */
export async function transferUsdc(chain, fromKey, to, amount, opts = {}) {
  const { via = 'authorization' } = opts;
  const value = BigInt(amount);
  if (via === 'transfer') {
    return helperTx(chain.rpcUrl, (s) => s.wallet(fromKey).writeContract({
      address: chain.usdc, abi: usdcAbi, functionName: 'transfer', args: [to, value],
    }), chain.chainId);
  }
  const from = privateKeyToAccount(fromKey);
  const message = {
    from: from.address, to, value, validAfter: 0n,
    validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
    nonce: toHex(crypto.getRandomValues(new Uint8Array(32))),
  };
  const signature = await from.signTypedData(authorizationTypedData(chain, message));
  const { v, r, s: sigS } = parseSignature(signature);
  return helperTx(chain.rpcUrl, (s) => s.wallet(chain.deployerKey).writeContract({
    address: chain.usdc, abi: usdcAbi, functionName: 'transferWithAuthorization',
    args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, Number(v), r, sigS],
  }), chain.chainId);
}

export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: 'from', type: 'address' }, { name: 'to', type: 'address' }, { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' }, { name: 'validBefore', type: 'uint256' }, { name: 'nonce', type: 'bytes32' },
  ],
};

/** EIP-712 typed data for TestUSDC's TransferWithAuthorization (for signTypedData). */
export function authorizationTypedData(chain, message) {
  return {
    domain: { name: 'USD Coin', version: '2', chainId: chain.chainId ?? CHAIN_ID, verifyingContract: chain.usdc },
    types: transferWithAuthorizationTypes,
    primaryType: 'TransferWithAuthorization',
    message,
  };
}
