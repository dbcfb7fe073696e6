import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { domainSeparator, hashDomain, parseSignature, toHex, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import {
  authorizationTypedData, devChainClients, startDevChain, transferUsdc, usdcBalance, usdcAbi, type DevChain,
} from '../../scripts/devchain/index.mjs';

let chain: DevChain;
let pc: ReturnType<typeof devChainClients>['publicClient'];

const read = (functionName: string, args: readonly unknown[] = []) =>
  pc.readContract({ address: chain.usdc, abi: usdcAbi, functionName, args });
const randomNonce = (): Hex => toHex(crypto.getRandomValues(new Uint8Array(32)));
const now = () => BigInt(Math.floor(Date.now() / 1000));

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('devchain', () => {
  beforeAll(async () => {
    chain = await startDevChain({ payers: 2 });
    pc = devChainClients(chain).publicClient;
  }, 30_000);

  afterAll(async () => {
    await chain?.stop();
  });

  it('runs anvil with chain id 167000', async () => {
    expect(await pc.getChainId()).toBe(167000);
    expect(isAlive(chain.pid)).toBe(true);
  });

  it('deploys a USDC look-alike with the FiatToken v2 EIP-712 domain', async () => {
    expect(await read('name')).toBe('USD Coin');
    expect(await read('symbol')).toBe('USDC');
    expect(await read('version')).toBe('2');
    expect(await read('decimals')).toBe(6);
    const domain = { name: 'USD Coin', version: '2', chainId: 167000n, verifyingContract: chain.usdc };
    const expected = hashDomain({
      domain,
      types: {
        EIP712Domain: [
          { name: 'name', type: 'string' }, { name: 'version', type: 'string' },
          { name: 'chainId', type: 'uint256' }, { name: 'verifyingContract', type: 'address' },
        ],
      },
    });
    expect(await read('DOMAIN_SEPARATOR')).toBe(expected);
    expect(expected).toBe(domainSeparator({ domain: { ...domain, chainId: 167000 } }));
  });

  it('funds payers with USDC and no ETH; the settler has ETH', async () => {
    expect(chain.payers).toHaveLength(2);
    for (const p of chain.payers) {
      expect(await usdcBalance(chain, p.address)).toBe(1_000_000n * 10n ** 6n);
      expect(await pc.getBalance({ address: p.address })).toBe(0n);
    }
    expect(await pc.getBalance({ address: chain.settlerAddress })).toBeGreaterThan(10n ** 18n);
  });

  it('settles a transferWithAuthorization signed by the payer and refuses its replay', async () => {
    const payer = privateKeyToAccount(chain.payers[0]!.privateKey);
    const settler = devChainClients(chain).walletClient(chain.settlerKey);
    const value = 1_234_567n;
    const message = {
      from: payer.address, to: chain.payTo, value, validAfter: 0n, validBefore: now() + 600n, nonce: randomNonce(),
    };
    const signature = await payer.signTypedData(authorizationTypedData(chain, message));
    const { v, r, s } = parseSignature(signature);
    const args = [message.from, message.to, value, message.validAfter, message.validBefore, message.nonce, Number(v), r, s];
    const [payerBefore, payToBefore] = [await usdcBalance(chain, payer.address), await usdcBalance(chain, chain.payTo)];

    const hash = await settler.writeContract({
      address: chain.usdc, abi: usdcAbi, functionName: 'transferWithAuthorization', args,
    });
    expect((await pc.waitForTransactionReceipt({ hash })).status).toBe('success');
    expect(await usdcBalance(chain, payer.address)).toBe(payerBefore - value);
    expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + value);
    expect(await read('authorizationState', [payer.address, message.nonce])).toBe(true);

    await expect(settler.writeContract({
      address: chain.usdc, abi: usdcAbi, functionName: 'transferWithAuthorization', args,
    })).rejects.toThrow(/authorization is used or canceled/);
    // the bytes-signature form shares the nonce space
    await expect(settler.writeContract({
      address: chain.usdc, abi: usdcAbi, functionName: 'transferWithAuthorization', args: [...args.slice(0, 6), signature],
    })).rejects.toThrow(/authorization is used or canceled/);
    expect(await usdcBalance(chain, chain.payTo)).toBe(payToBefore + value);
  });

  it('checks validity window and signer', async () => {
    const payer = privateKeyToAccount(chain.payers[1]!.privateKey);
    const settler = devChainClients(chain).walletClient(chain.settlerKey);
    const attempt = async (msg: { validAfter: bigint; validBefore: bigint }, signer = payer) => {
      const message = { from: payer.address, to: chain.payTo, value: 1n, nonce: randomNonce(), ...msg };
      const signature = await signer.signTypedData(authorizationTypedData(chain, message));
      return settler.writeContract({
        address: chain.usdc, abi: usdcAbi, functionName: 'transferWithAuthorization',
        args: [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, signature],
      });
    };
    await expect(attempt({ validAfter: now() + 3600n, validBefore: now() + 7200n })).rejects.toThrow(/not yet valid/);
    await expect(attempt({ validAfter: 0n, validBefore: now() - 1n })).rejects.toThrow(/authorization is expired/);
    const stranger = privateKeyToAccount(chain.payToKey);
    await expect(attempt({ validAfter: 0n, validBefore: now() + 600n }, stranger)).rejects.toThrow(/invalid signature/);
    // the bytes form with a good signature goes through
    const hash = await attempt({ validAfter: 0n, validBefore: now() + 600n });
    expect((await pc.waitForTransactionReceipt({ hash })).status).toBe('success');
  });

  it('has Multicall3 at its canonical address (aggregate3 and tryAggregate)', async () => {
    expect(chain.multicall3).toBe('0xcA11bde05977b3631167028862bE2a173976CA11');
    const results = await pc.multicall({
      contracts: [
        { address: chain.usdc, abi: usdcAbi, functionName: 'balanceOf', args: [chain.payers[0]!.address] },
        { address: chain.usdc, abi: usdcAbi, functionName: 'version' },
      ],
    });
    expect(results.map((r) => r.status)).toEqual(['success', 'success']);
    expect(results[1]!.result).toBe('2');

    // declared 'view' (it is payable) so viem's readContract types accept it, as @x402/evm calls it
    const tryAggregateAbi = [{
      type: 'function', name: 'tryAggregate', stateMutability: 'view',
      inputs: [
        { name: 'requireSuccess', type: 'bool' },
        { name: 'calls', type: 'tuple[]', components: [{ name: 'target', type: 'address' }, { name: 'callData', type: 'bytes' }] },
      ],
      outputs: [{ name: 'returnData', type: 'tuple[]', components: [{ name: 'success', type: 'bool' }, { name: 'returnData', type: 'bytes' }] }],
    }] as const;
    const out = await pc.readContract({
      address: chain.multicall3, abi: tryAggregateAbi, functionName: 'tryAggregate',
      args: [false, [
        { target: chain.usdc, callData: '0x54fd4d50' }, // version()
        { target: chain.usdc, callData: '0xdeadbeef' }, // no such function
      ]],
    });
    expect(out.map((r) => r.success)).toEqual([true, false]);
  });

  it('transferUsdc drains a payer without ETH (signed authorization, submitted by the deployer)', async () => {
    const payer = chain.payers[1]!;
    const balance = await usdcBalance(chain, payer.address);
    await transferUsdc(chain, payer.privateKey, chain.payTo, balance);
    expect(await usdcBalance(chain, payer.address)).toBe(0n);
    await expect(transferUsdc(chain, payer.privateKey, chain.payTo, 1n)).rejects.toThrow(/exceeds balance/);
  });

  it('stop() kills anvil and waits for it', async () => {
    const { pid } = chain;
    await chain.stop();
    expect(isAlive(pid)).toBe(false);
    await chain.stop(); // idempotent
  });
});
