// Hand-written types for index.mjs (TypeScript looks for `index.d.mts` beside an `.mjs` import).
import type { Abi, Address, Chain, Hex, PublicClient, TransactionReceipt, WalletClient, Account, Transport } from 'viem';

export declare const CHAIN_ID: 167000;
export declare const MULTICALL3_ADDRESS: '0xcA11bde05977b3631167028862bE2a173976CA11';
export declare const artifacts: {
  TestUSDC: { abi: Abi; bytecode: Hex };
  Multicall3: { abi: Abi; bytecode: Hex; deployedBytecode: Hex };
  /** EIP-1271 wallet whose owner EOA signs for it (contracts/OwnedWallet.sol) */
  OwnedWallet: { abi: Abi; bytecode: Hex };
  /** CREATE2 factory of OwnedWallets: deploy(owner, salt), addressOf(owner, salt) */
  OwnedWalletFactory: { abi: Abi; bytecode: Hex };
};
export declare const usdcAbi: Abi;

export interface DevChainOptions {
  /** Fixed port; default: a free loopback port. */
  port?: number;
  /** Number of funded payers (no ETH, `payerBalance` USDC each). Default 1. */
  payers?: number;
  /** Atomic USDC (6 decimals) minted to each payer. Default 1_000_000 USDC = 1e12. */
  payerBalance?: bigint;
  /** Deadline for anvil to answer JSON-RPC. Default 15000 ms. */
  timeoutMs?: number;
  /**
   * anvil --prune-history N: persist no historical states (long runs otherwise fill ~/.foundry/anvil/tmp)
   * and keep the last N in memory (`true`: 64; with none, eth_call at "latest" fails now and then while a block is mined).
   */
  pruneHistory?: boolean | number;
  /** anvil --cache-path: where it may persist states. */
  cachePath?: string;
  /** The chain id. Default 167000 (Taiko Alethia); e.g. 8453 (Base) for a second payment network. */
  chainId?: number;
}

export interface DevChainAccount {
  privateKey: Hex;
  address: Address;
}

/** What cli.mjs prints as JSON (everything but `stop`). */
export interface DevChainInfo {
  rpcUrl: string;
  /** 167000 unless started with another `chainId` */
  chainId: number;
  /** CAIP-2: `eip155:<chainId>` */
  network: `eip155:${number}`;
  port: number;
  pid: number;
  /** TestUSDC address (EIP-712 domain "USD Coin" / "2"). */
  usdc: Address;
  multicall3: Address;
  /** anvil account 0: owner of TestUSDC; sends the helpers' transactions. */
  deployerKey: Hex;
  /** anvil account 1 (has ETH): for the facilitator to pay settle gas. */
  settlerKey: Hex;
  settlerAddress: Address;
  /** anvil account 2: receives payments. */
  payTo: Address;
  payToKey: Hex;
  /** Deterministic keys holding USDC and no ETH. */
  payers: DevChainAccount[];
}

export interface DevChain extends DevChainInfo {
  /** Kills anvil (SIGTERM, SIGKILL after 5 s) and waits for it to exit. Idempotent. */
  stop(): Promise<void>;
}

export interface TransferWithAuthorizationMessage {
  from: Address;
  to: Address;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
}

export declare function startDevChain(opts?: DevChainOptions): Promise<DevChain>;
export declare function devChainDefinition(rpcUrl: string): Chain;
export declare function devChainClients(chain: Pick<DevChainInfo, 'rpcUrl'>): {
  publicClient: PublicClient<Transport, Chain>;
  walletClient: (privateKey: Hex) => WalletClient<Transport, Chain, Account>;
};
/** Deterministic payer key number i. */
export declare function payerKey(i: number): Hex;
export declare function usdcBalance(chain: Pick<DevChainInfo, 'rpcUrl' | 'usdc'>, address: Address): Promise<bigint>;
export declare function mintUsdc(
  chain: Pick<DevChainInfo, 'rpcUrl' | 'usdc' | 'deployerKey'>, to: Address, amount: bigint | number,
): Promise<TransactionReceipt>;
/**
 * Default `via: 'authorization'`: fromKey signs an EIP-3009 TransferWithAuthorization, the deployer
 * submits it (works without ETH; never uses the settler's nonces). `via: 'transfer'`: a plain ERC-20
 * transfer sent by fromKey (needs ETH).
 */
export declare function transferUsdc(
  chain: Pick<DevChainInfo, 'rpcUrl' | 'usdc' | 'deployerKey'>, fromKey: Hex, to: Address, amount: bigint | number,
  opts?: { via?: 'authorization' | 'transfer' },
): Promise<TransactionReceipt>;
export declare const transferWithAuthorizationTypes: {
  readonly TransferWithAuthorization: readonly [
    { readonly name: 'from'; readonly type: 'address' },
    { readonly name: 'to'; readonly type: 'address' },
    { readonly name: 'value'; readonly type: 'uint256' },
    { readonly name: 'validAfter'; readonly type: 'uint256' },
    { readonly name: 'validBefore'; readonly type: 'uint256' },
    { readonly name: 'nonce'; readonly type: 'bytes32' },
  ];
};
/** EIP-712 typed data for TestUSDC's TransferWithAuthorization, ready for signTypedData. */
export declare function authorizationTypedData(
  chain: Pick<DevChainInfo, 'usdc'>, message: TransferWithAuthorizationMessage,
): {
  domain: { name: 'USD Coin'; version: '2'; chainId: number; verifyingContract: Address };
  types: typeof transferWithAuthorizationTypes;
  primaryType: 'TransferWithAuthorization';
  message: TransferWithAuthorizationMessage;
};
