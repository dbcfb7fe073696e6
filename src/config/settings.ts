/**
 * Every operator setting, in one table: its key, flag, environment variable,
 * default and parser. Precedence: flags > environment (PIND_*) > config file > defaults.
 * The README's configuration table is kept in step with this file by a test.
 */
import { isIP } from 'node:net'
import { multiaddr } from '@multiformats/multiaddr'
import { LOG_LEVELS, type LogLevel } from '../kernel/log.js'
import {
  address, atomic, bool, caip2, ConfigValueError, duration, httpUrl, int, list, oneOf, privateKeyHex, str, type Parser
} from './parse.js'
import { networkEntries, type NetworkEntry } from './networks.js'

/** Taiko Alethia USDC (bridged FiatToken), the production default asset. */
export const TAIKO_USDC = '0x07d83526730c7438048D55A4fc0b850e2aaB6f0b'
export const DEFAULT_UPLOAD_MAX_BYTES = 104_857_600
/** 32 GiB */
export const DEFAULT_PIN_MAX_BYTES = 34_359_738_368

/** --http-send-budget: 64 MiB, a thousand stalled responses' single pieces (see http/send-budget.ts) */
export const DEFAULT_SEND_BUDGET = 64 * 1024 * 1024
/** --http-min-send-rate, bytes/s (Kestrel's MinResponseDataRate: 240) */
export const DEFAULT_MIN_SEND_RATE = 256
/** --http-min-send-rate-grace, seconds (Kestrel: 5; longer here, see README "Hostile clients") */
export const DEFAULT_MIN_SEND_GRACE = 20

export const GATEWAY_POLICIES = ['pinned', 'blockstore'] as const
export type GatewayPolicy = typeof GATEWAY_POLICIES[number]
/** what request-supplied origins may make the node dial (ipfs/origins.ts) */
export const ORIGIN_POLICIES = ['public', 'any'] as const
export type OriginPolicy = typeof ORIGIN_POLICIES[number]

export const BLOCKSTORES = ['fs', 's3'] as const
export type BlockstoreKind = typeof BLOCKSTORES[number]

export const LEDGERS = ['lmdb', 'postgres'] as const
export type LedgerKind = typeof LEDGERS[number]

export const DATABASE_SSL_MODES = ['disable', 'require', 'verify-ca', 'verify-full'] as const
export type DatabaseSslMode = typeof DATABASE_SSL_MODES[number]

/** a postgres:// URL with no password in it (the password is a secret: the environment or a 0600 file) */
const databaseUrl: Parser<string> = (raw) => {
  const s = str(raw)
  let u: URL
  try { u = new URL(s) } catch { throw new ConfigValueError('expected a URL such as postgres://pind@db.example:5432/pind') }
  if (u.protocol !== 'postgres:' && u.protocol !== 'postgresql:') throw new ConfigValueError('expected a postgres:// URL such as postgres://pind@db.example:5432/pind')
  if (u.password !== '') throw new ConfigValueError('the URL holds a password: put it in PIND_DATABASE_PASSWORD or a file named by --database-password-file (mode 0600), never in a flag or a config file')
  if (u.pathname.length <= 1) throw new ConfigValueError('the URL names no database: postgres://user@host:port/<database>')
  return s
}

const multiaddrString: Parser<string> = (raw) => {
  const s = str(raw)
  try { multiaddr(s) } catch { throw new ConfigValueError('expected a multiaddr such as /ip4/127.0.0.1/tcp/4001') }
  return s
}

export const ROUTING_MODES = ['none', 'dht', 'delegated'] as const
export type RoutingMode = typeof ROUTING_MODES[number]
export const DHT_MODES = ['auto', 'client', 'server'] as const
export type DhtMode = typeof DHT_MODES[number]
export const UPLOAD_WRITES = ['auto', 'staged', 'direct'] as const
export type UploadWrites = typeof UPLOAD_WRITES[number]
export const PROVIDE_STRATEGIES = ['roots', 'all'] as const
export type ProvideStrategy = typeof PROVIDE_STRATEGIES[number]

/** `none`, or any of `dht` and `delegated` (comma-separated) */
const routingModes: Parser<RoutingMode[]> = (raw) => {
  const modes = [...new Set(list(oneOf(ROUTING_MODES))(raw))]
  if (modes.length === 0) throw new ConfigValueError('expected none, dht, delegated or dht,delegated')
  if (modes.includes('none') && modes.length > 1) throw new ConfigValueError('none cannot be combined with dht or delegated')
  return modes
}

/** `public` (the built-in Amino bootstrap peers, used only when asked for) or multiaddrs ending in /p2p/<peer id> */
const bootstrapPeer: Parser<string> = (raw) => {
  const s = str(raw)
  if (s === 'public') return s
  const ma = multiaddrString(s)
  if (!/\/p2p\/[^/]+$/.test(ma)) throw new ConfigValueError('expected "public" or a multiaddr ending in /p2p/<peer id>')
  return ma
}

const corsOrigin: Parser<string> = (raw) => {
  const s = str(raw)
  if (s === '*' || s === 'none' || /^https?:\/\/[^/\s]+$/.test(s)) return s
  throw new ConfigValueError('expected *, none, or origins such as https://app.example.com')
}

const ipAddress: Parser<string> = (raw) => {
  const s = str(raw)
  if (isIP(s) === 0) throw new ConfigValueError('expected an IP address such as 127.0.0.1 or ::1')
  return s
}

/** a DNS name (no port, no scheme), lowercase: `localhost`, `example.net` */
const domainName: Parser<string> = (raw) => {
  const s = str(raw).toLowerCase().replace(/\.$/, '')
  if (s.length > 200 || !/^(?!-)[a-z0-9-]{1,63}(?<!-)(\.(?!-)[a-z0-9-]{1,63}(?<!-))*$/.test(s)) throw new ConfigValueError('expected a domain name such as example.net or localhost (no scheme, no port)')
  return s
}

const hostPort: Parser<string> = (raw) => {
  const s = str(raw)
  const m = /^(.+):(\d{1,5})$/.exec(s)
  if (m == null || Number(m[2]) > 65535 || !/^[0-9A-Za-z.:[\]-]+$/.test(m[1] as string)) throw new ConfigValueError('expected host:port such as 127.0.0.1:9464')
  return s
}

/** S3 bucket names (AWS rules, loosely: other stores allow a little more) */
const bucketName: Parser<string> = (raw) => {
  const s = str(raw)
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{1,254}$/.test(s)) throw new ConfigValueError('expected a bucket name such as pind-blocks')
  return s
}

/** a key prefix inside the bucket: may be empty (the whole bucket); never starts with / */
const keyPrefix: Parser<string> = (raw) => {
  if (typeof raw !== 'string') throw new ConfigValueError('expected a key prefix such as blocks/ (or "" for none)')
  const s = raw.trim()
  // eslint-disable-next-line no-control-regex
  if (s.startsWith('/') || s.length > 512 || /[\u0000-\u001f\u007f]/.test(s)) throw new ConfigValueError('expected a key prefix such as blocks/ (not starting with /)')
  return s
}

/** a size in bytes: 1073741824, or with a unit: 512MiB, 1GiB, 10GB (0 = off) */
const byteSize: Parser<number> = (raw) => {
  const s = typeof raw === 'number' ? String(raw) : typeof raw === 'string' ? raw.trim() : ''
  const m = /^(\d+)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)?$/i.exec(s)
  const units: Record<string, number> = { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, tb: 1e12, kib: 2 ** 10, mib: 2 ** 20, gib: 2 ** 30, tib: 2 ** 40 }
  const n = m == null ? NaN : Number(m[1]) * (units[(m[2] ?? 'b').toLowerCase()] ?? NaN)
  if (!Number.isSafeInteger(n) || n < 0) throw new ConfigValueError('expected a size in bytes such as 1073741824, 512MiB or 10GB')
  return n
}

/** the send budget: a size of at least one piece (64 KiB) */
const sendBudget: Parser<number> = (raw) => {
  const n = byteSize(raw)
  if (n < 65536) throw new ConfigValueError('expected a size of at least 64KiB, such as 64MiB')
  return n
}

const host: Parser<string> = (raw) => {
  const s = str(raw)
  if (!/^[0-9A-Za-z.:-]+$/.test(s)) throw new ConfigValueError('expected a host name or IP address')
  return s
}

export interface Config {
  dataDir: string
  logLevel: LogLevel
  host: string
  port: number
  publicUrl?: string
  p2pListen: string[]
  p2pAnnounce: string[]
  p2pPeers: string[]
  p2pMaxConnections: number
  p2pInboundRate: number
  routing: RoutingMode[]
  bootstrap: string[]
  dhtMode: DhtMode
  uploadWrites: UploadWrites
  routingPrivateAddresses: boolean
  delegatedRoutingUrl?: string
  provideStrategy: ProvideStrategy
  reprovideInterval: number
  dhtRecordLifetime: number
  dhtMaxRecords: number
  dhtMaxRecordsPerPeer: number
  network: string
  rpcUrl?: string
  asset: `0x${string}`
  assetName: string
  assetVersion: string
  payTo?: `0x${string}`
  settlerKey?: `0x${string}`
  settlerKeyFile?: string
  facilitatorUrl?: string
  /** more payment networks beside the single-network settings (config/networks.ts) */
  networks: NetworkEntry[]
  settlerMinBalance: bigint
  priceRate: bigint
  priceMin: bigint
  priceMax: bigint
  maxMonths: number
  bazaar: boolean
  paymentTimeout: number
  tokenTtl: number
  tokenIssuer?: string
  uploadMaxBytes: number
  pinMaxBytes: number
  pinFetchConcurrency: number
  uploadConcurrency: number
  uploadTicketValidity: number
  uploadTicketRetries: number
  pinRetryWindow: number
  pinStallTimeout: number
  pinProbeTimeout: number
  settleTimeout: number
  originAddresses: OriginPolicy
  gatewayPolicy: GatewayPolicy
  gatewayNetworkTimeout: number
  gatewayDomain?: string
  corsOrigins: string[]
  rateLimitUnpaid: number
  rateLimitReads: number
  trustedProxies: string[]
  httpHeadTimeout: number
  httpIdleTimeout: number
  httpMaxConnections?: number
  httpMaxConnectionsPerClient?: number
  httpSendBudget: number
  httpMinSendRate: number
  httpMinSendRateGrace: number
  httpMaxStreamsPerClient: number
  metricsListen?: string
  shutdownTimeout: number
  shutdownDrain: number
  expiryGrace: number
  expirySweepInterval: number
  gcInterval: number
  gcWatermark: number
  denylist: string[]
  /** absent: lmdb, or what the data dir records (ledger.json) */
  ledger?: LedgerKind
  databaseUrl?: string
  databasePassword?: string
  databasePasswordFile?: string
  databasePoolSize: number
  databaseStatementTimeout: number
  databaseSslmode?: DatabaseSslMode
  databaseCaFile?: string
  /** absent: fs, or what the data dir records (blockstore.json) */
  blockstore?: BlockstoreKind
  s3Endpoint?: string
  s3Bucket?: string
  s3Prefix?: string
  s3Region?: string
  s3ForcePathStyle?: boolean
  s3AccessKeyId?: string
  s3SecretAccessKey?: string
  s3SessionToken?: string
  s3CredentialsFile?: string
  s3CacheSize: number
  s3Timeout: number
  s3VerifyReads: boolean
  /** runtime tuning (src/runtime/, docs/runtime.md) */
  runtimeIdleCollection: boolean
  runtimeHeapTrim: boolean
  runtimeMallocTrim: boolean
  runtimeMapTrim: boolean
  runtimeHeapGrowingPercent: number
  runtimeReleaseBuffers: boolean
}

export interface Setting {
  key: keyof Config
  /** commander flag spelling, e.g. `--port <n>`; absent for settings that are env/file only (secrets). */
  flag?: string
  env: string
  description: string
  default?: unknown
  parse: Parser<unknown>
  /** never printed, logged or echoed */
  secret?: boolean
  /** a bad value's error names the problem but does not echo the value (a JSON document) */
  quiet?: boolean
  /** global settings apply to every subcommand; the rest only to `serve` */
  global?: boolean
}

export const SETTINGS: readonly Setting[] = [
  { key: 'dataDir', flag: '--data-dir <dir>', env: 'PIND_DATA_DIR', global: true, default: './pind-data', parse: str, description: 'where the ledger, blocks, keys and identity live' },
  { key: 'logLevel', flag: '--log-level <level>', env: 'PIND_LOG_LEVEL', global: true, default: 'warn', parse: oneOf(LOG_LEVELS), description: 'error, warn, info (one line per request) or debug' },
  { key: 'host', flag: '--host <host>', env: 'PIND_HOST', default: '127.0.0.1', parse: host, description: 'HTTP listen address' },
  { key: 'port', flag: '--port <port>', env: 'PIND_PORT', default: 8080, parse: int(0, 65535), description: 'HTTP listen port (0 = any free port)' },
  { key: 'publicUrl', flag: '--public-url <url>', env: 'PIND_PUBLIC_URL', parse: httpUrl, description: 'the URL clients use to reach this service (agent card, gateway links, x402 resource); default http://<host>:<port>' },
  { key: 'p2pListen', flag: '--p2p-listen <multiaddrs>', env: 'PIND_P2P_LISTEN', default: ['/ip4/127.0.0.1/tcp/4001'], parse: list(multiaddrString), description: 'libp2p TCP listen multiaddrs, comma-separated' },
  { key: 'p2pAnnounce', flag: '--p2p-announce <multiaddrs>', env: 'PIND_P2P_ANNOUNCE', default: [], parse: list(multiaddrString), description: 'multiaddrs to announce (delegates in PinStatus); default: the listen addresses' },
  { key: 'p2pPeers', flag: '--p2p-peers <multiaddrs>', env: 'PIND_P2P_PEERS', default: [], parse: list(multiaddrString), description: 'peers to dial at start; nothing else is dialled unless a pin request names origins or --routing finds providers' },
  { key: 'p2pMaxConnections', flag: '--p2p-max-connections <n>', env: 'PIND_P2P_MAX_CONNECTIONS', default: 256, parse: int(8, 100_000), description: 'libp2p connections open at once (in and out); past this the least valuable are closed' },
  { key: 'p2pInboundRate', flag: '--p2p-inbound-rate <per-second>', env: 'PIND_P2P_INBOUND_RATE', default: 5, parse: int(1, 10_000), description: 'inbound libp2p connections accepted per second from one address' },
  { key: 'routing', flag: '--routing <modes>', env: 'PIND_ROUTING', default: ['none'], parse: routingModes, description: 'content routing: none (dial only configured peers and origins), dht (the Amino DHT, /ipfs/kad/1.0.0: announce pins, find providers), delegated (find providers over the Delegated Routing V1 HTTP API); dht,delegated combines both' },
  { key: 'bootstrap', flag: '--bootstrap <multiaddrs>', env: 'PIND_BOOTSTRAP', default: [], parse: list(bootstrapPeer), description: 'DHT bootstrap peers, comma-separated multiaddrs ending in /p2p/<id>; "public" adds the well-known Amino bootstrap peers (never used unless named)' },
  { key: 'dhtMode', flag: '--dht-mode <mode>', env: 'PIND_DHT_MODE', default: 'auto', parse: oneOf(DHT_MODES), description: 'auto: DHT server once AutoNAT confirms a public address, else client; client: query and announce only; server: also answer DHT queries and store records for others' },
  { key: 'routingPrivateAddresses', flag: '--routing-private-addresses', env: 'PIND_ROUTING_PRIVATE_ADDRESSES', default: false, parse: bool, description: 'keep private and loopback addresses in DHT peer records and dial providers found at them: for a LAN or loopback routing network only (on the public network such addresses are dropped)' },
  { key: 'delegatedRoutingUrl', flag: '--delegated-routing-url <url>', env: 'PIND_DELEGATED_ROUTING_URL', parse: httpUrl, description: 'Delegated Routing V1 HTTP API endpoint for --routing delegated (no default: name one, e.g. https://delegated-ipfs.dev)' },
  { key: 'provideStrategy', flag: '--provide-strategy <strategy>', env: 'PIND_PROVIDE_STRATEGY', default: 'roots', parse: oneOf(PROVIDE_STRATEGIES), description: 'what --routing dht announces: roots (the root CID of each live pin) or all (every block of each live pin)' },
  { key: 'reprovideInterval', flag: '--reprovide-interval <duration>', env: 'PIND_REPROVIDE_INTERVAL', default: 22 * 3600, parse: duration(1, 7 * 86400), description: 'how often each announced CID is announced again (Amino keeps records 48 h; Kubo reprovides every 22 h)' },
  { key: 'dhtRecordLifetime', flag: '--dht-record-lifetime <duration>', env: 'PIND_DHT_RECORD_LIFETIME', default: 48 * 3600, parse: duration(1, 7 * 86400), description: 'as a DHT server: how long provider records other peers store here stay valid (Amino: 48 h)' },
  { key: 'dhtMaxRecords', flag: '--dht-max-records <n>', env: 'PIND_DHT_MAX_RECORDS', default: 250_000, parse: int(0, 100_000_000), description: 'as a DHT server: most records other peers may store here at once; past this new ones are dropped' },
  { key: 'dhtMaxRecordsPerPeer', flag: '--dht-max-records-per-peer <n>', env: 'PIND_DHT_MAX_RECORDS_PER_PEER', default: 2_500, parse: int(0, 100_000_000), description: 'as a DHT server: most provider records naming one peer stored here at once (its share of --dht-max-records); past this its new ones are dropped' },
  { key: 'network', flag: '--network <caip2>', env: 'PIND_NETWORK', default: 'eip155:167000', parse: caip2, description: 'x402 payment network' },
  { key: 'rpcUrl', flag: '--rpc-url <url>', env: 'PIND_RPC_URL', parse: httpUrl, description: 'EVM JSON-RPC URL (asset check at start, embedded facilitator)' },
  { key: 'asset', flag: '--asset <address>', env: 'PIND_ASSET', default: TAIKO_USDC, parse: address, description: 'EIP-3009 token accepted as payment (USDC)' },
  { key: 'assetName', flag: '--asset-name <name>', env: 'PIND_ASSET_NAME', default: 'USD Coin', parse: str, description: 'EIP-712 domain name of the asset' },
  { key: 'assetVersion', flag: '--asset-version <version>', env: 'PIND_ASSET_VERSION', default: '2', parse: str, description: 'EIP-712 domain version of the asset' },
  { key: 'payTo', flag: '--pay-to <address>', env: 'PIND_PAY_TO', parse: address, description: 'address that receives payments; without it, paid writes answer 503' },
  { key: 'settlerKey', env: 'PIND_SETTLER_KEY', secret: true, parse: privateKeyHex, description: 'embedded facilitator: settler private key (environment only; prefer the key file)' },
  { key: 'settlerKeyFile', flag: '--settler-key-file <file>', env: 'PIND_SETTLER_KEY_FILE', parse: str, description: 'embedded facilitator: file holding the settler private key (mode 0600)' },
  { key: 'settlerMinBalance', flag: '--settler-min-balance <wei>', env: 'PIND_SETTLER_MIN_BALANCE', default: 1_000_000_000_000_000n, parse: atomic(), description: 'embedded facilitator: warn when the settler holds less than this many wei for gas (10^15 = 0.001 ETH); below the cost of one settlement, paid writes answer 503' },
  { key: 'facilitatorUrl', flag: '--facilitator-url <url>', env: 'PIND_FACILITATOR_URL', parse: httpUrl, description: 'remote x402 facilitator (used when no settler key is set)' },
  { key: 'networks', env: 'PIND_NETWORKS', default: [], quiet: true, parse: networkEntries, description: 'more payment networks, a JSON array (the config file\'s "networks", or this variable): each {network, asset, assetName, assetVersion, payTo, and rpcUrl with settlerKeyFile or settlerKeyEnv (the name of a variable holding the key), or facilitatorUrl}; the single-network settings above stay the first entry (docs/networks.md)' },
  { key: 'settleTimeout', flag: '--settle-timeout <duration>', env: 'PIND_SETTLE_TIMEOUT', default: 60, parse: duration(1, 600), description: 'how long a paid write waits for its settlement (facilitator or chain); past it the answer is 503 with Retry-After and the settlement note is left to reconciliation (a retry with the same payment gets what it bought once the chain shows it)' },
  { key: 'priceRate', flag: '--price-rate <atomic>', env: 'PIND_PRICE_RATE', default: 100_000n, parse: atomic(), description: 'price per GB (10^9 bytes) per month, in atomic USDC units (100000 = 0.10 USD)' },
  { key: 'priceMin', flag: '--price-min <atomic>', env: 'PIND_PRICE_MIN', default: 1_000n, parse: atomic(), description: 'minimum charge per paid write, atomic units (1000 = 0.001 USD)' },
  { key: 'priceMax', flag: '--price-max <atomic>', env: 'PIND_PRICE_MAX', default: 100_000_000n, parse: atomic(), description: 'largest price ever quoted, atomic units (100000000 = 100 USD); larger requests are refused' },
  { key: 'maxMonths', flag: '--max-months <n>', env: 'PIND_MAX_MONTHS', default: 24, parse: int(1, 120), description: 'longest pin duration a request may buy' },
  { key: 'bazaar', flag: '--bazaar [bool]', env: 'PIND_BAZAAR', default: true, parse: bool, description: 'each 402 (HTTP and MCP) carries x402\'s bazaar discovery extension, from which a bazaar-aware facilitator catalogues the paid routes; false keeps a private service out of such catalogues (/.well-known/x402, /openapi.json and the agent card still describe it to those who reach it)' },
  { key: 'paymentTimeout', flag: '--payment-timeout <duration>', env: 'PIND_PAYMENT_TIMEOUT', default: 900, parse: duration(60, 86400), description: 'x402 maxTimeoutSeconds: how long a signed payment stays valid' },
  { key: 'tokenTtl', flag: '--token-ttl <duration>', env: 'PIND_TOKEN_TTL', default: 30 * 86400, parse: duration(60, 400 * 86400), description: 'lifetime of wallet auth tokens' },
  { key: 'tokenIssuer', flag: '--token-issuer <string>', env: 'PIND_TOKEN_ISSUER', parse: str, description: 'iss/aud of wallet tokens; default the public URL' },
  { key: 'uploadMaxBytes', flag: '--upload-max-bytes <n>', env: 'PIND_UPLOAD_MAX_BYTES', default: DEFAULT_UPLOAD_MAX_BYTES, parse: int(1, 2 ** 40), description: 'largest file accepted by POST /upload' },
  { key: 'pinMaxBytes', flag: '--pin-max-bytes <n>', env: 'PIND_PIN_MAX_BYTES', default: DEFAULT_PIN_MAX_BYTES, parse: int(1, 2 ** 50), description: 'largest DAG a pin by CID may hold (bytes of all blocks)' },
  { key: 'uploadConcurrency', flag: '--upload-concurrency <n>', env: 'PIND_UPLOAD_CONCURRENCY', default: 32, parse: int(1, 1024), description: 'paid uploads streamed at the same time; past this a paid upload gets 503 with Retry-After before its payment is used' },
  { key: 'uploadWrites', flag: '--upload-writes <mode>', env: 'PIND_UPLOAD_WRITES', default: 'auto', parse: oneOf(UPLOAD_WRITES), description: 'where a paid upload\'s blocks go while its body arrives. staged: a staging folder on local disk, put in the block store once the payment settles (nothing reaches the store unpaid); direct: the block store at once, once the payment verified (the writes overlap the body; what a failed upload wrote is deleted again); auto: direct with S3, staged on disk' },
  { key: 'uploadTicketValidity', flag: '--upload-ticket-validity <duration>', env: 'PIND_UPLOAD_TICKET_VALIDITY', default: 30 * 86400, parse: duration(60, 400 * 86400), description: 'how long a prepaid upload ticket (POST /upload/tickets) can be used after its purchase' },
  { key: 'uploadTicketRetries', flag: '--upload-ticket-retries <n>', env: 'PIND_UPLOAD_TICKET_RETRIES', default: 3, parse: int(1, 100), description: 'failed uploads with one ticket may write this many times its bytes in all (each failed upload\'s blocks are removed at once); then the ticket answers 410' },
  { key: 'pinFetchConcurrency', flag: '--pin-fetch-concurrency <n>', env: 'PIND_PIN_FETCH_CONCURRENCY', default: 4, parse: int(1, 256), description: 'pins by CID fetched at the same time (each with up to 32 blocks in flight)' },
  { key: 'pinRetryWindow', flag: '--pin-retry-window <duration>', env: 'PIND_PIN_RETRY_WINDOW', default: 24 * 3600, parse: duration(1, 30 * 86400), description: 'how long a pin by CID keeps retrying unreachable content before it fails' },
  { key: 'pinStallTimeout', flag: '--pin-stall-timeout <duration>', env: 'PIND_PIN_STALL_TIMEOUT', default: 60, parse: duration(1, 3600), description: 'a fetch attempt ends (and is retried with backoff) when no block arrives for this long' },
  { key: 'pinProbeTimeout', flag: '--pin-probe-timeout <duration>', env: 'PIND_PIN_PROBE_TIMEOUT', default: 5, parse: duration(0, 60), description: 'how long POST /pins looks for the root block to price a CID it does not hold (0 = do not look)' },
  { key: 'originAddresses', flag: '--origin-addresses <policy>', env: 'PIND_ORIGIN_ADDRESSES', default: 'public', parse: oneOf(ORIGIN_POLICIES), description: 'what the origins of pin requests may make this node dial: public (public IP addresses, and DNS names that resolve to one, over TCP) or any (also loopback, private and link-local addresses, /unix and /dnsaddr: a node on a private network)' },
  { key: 'gatewayPolicy', flag: '--gateway-policy <policy>', env: 'PIND_GATEWAY_POLICY', default: 'pinned', parse: oneOf(GATEWAY_POLICIES), description: 'pinned: serve only content of live pins (gateway and bitswap); blockstore: anything held locally' },
  { key: 'expiryGrace', flag: '--expiry-grace <duration>', env: 'PIND_EXPIRY_GRACE', default: 7 * 86400, parse: duration(0, 365 * 86400), description: 'an expired pin (hidden at pinned_until) keeps its blocks this long, so it can still be renewed; then it is swept' },
  { key: 'expirySweepInterval', flag: '--expiry-sweep-interval <duration>', env: 'PIND_EXPIRY_SWEEP_INTERVAL', default: 3600, parse: duration(1, 86400), description: 'how often serve sweeps pins past pinned_until + grace' },
  { key: 'gcInterval', flag: '--gc-interval <duration>', env: 'PIND_GC_INTERVAL', default: 3600, parse: duration(0, 30 * 86400), description: 'how often serve runs gc by itself (as `pind gc`: expired pins swept, unreferenced blocks removed); 0 = never on a schedule' },
  { key: 'gcWatermark', flag: '--gc-watermark <bytes>', env: 'PIND_GC_WATERMARK', default: 1_073_741_824, parse: int(0, 2 ** 50), description: 'serve also runs gc as soon as the blocks released since its last run (an estimate from removed pins\' sizes) pass this many bytes; 0 = never by watermark' },
  { key: 'gatewayDomain', flag: '--gateway-domain <domain>', env: 'PIND_GATEWAY_DOMAIN', parse: domainName, description: 'the subdomain gateway: content is served as websites at http(s)://{cidv1-base32}.ipfs.{domain}/ (each root an origin of its own: HTML inline, _redirects followed), and /ipfs/{cid} on the domain itself redirects there; needs DNS for *.ipfs.{domain} (and a wildcard certificate at the TLS proxy). Unset: the path gateway alone' },
  { key: 'gatewayNetworkTimeout', flag: '--gateway-network-timeout <duration>', env: 'PIND_GATEWAY_NETWORK_TIMEOUT', default: 0, parse: duration(0, 300), description: 'above 0: the gateway also serves content it does not hold, fetched per block from connected peers within this time (not stored); 0 = never' },
  { key: 'corsOrigins', flag: '--cors-origins <origins>', env: 'PIND_CORS_ORIGINS', default: ['*'], parse: list(corsOrigin), description: 'browser origins allowed by CORS, comma-separated (* = any; "none" = CORS off)' },
  { key: 'rateLimitUnpaid', flag: '--rate-limit-unpaid <per-minute>', env: 'PIND_RATE_LIMIT_UNPAID', default: 120, parse: int(0, 1_000_000), description: 'write requests that do not turn out paid (402s, invalid payments or tokens, sign-in challenges) per client address per minute; 0 = unlimited' },
  { key: 'rateLimitReads', flag: '--rate-limit-reads <per-minute>', env: 'PIND_RATE_LIMIT_READS', default: 6000, parse: int(0, 10_000_000), description: 'GET/HEAD/OPTIONS requests per client address per minute; 0 = unlimited' },
  { key: 'trustedProxies', flag: '--trusted-proxies <addresses>', env: 'PIND_TRUSTED_PROXIES', default: [], parse: list(ipAddress), description: 'reverse proxies whose X-Forwarded-For is believed (exact addresses, comma-separated)' },
  { key: 'httpHeadTimeout', flag: '--http-head-timeout <duration>', env: 'PIND_HTTP_HEAD_TIMEOUT', default: 20, parse: duration(1, 600), description: 'a connection must send a complete request head within this of opening (and of its previous response), else 408 and closed' },
  { key: 'httpIdleTimeout', flag: '--http-idle-timeout <duration>', env: 'PIND_HTTP_IDLE_TIMEOUT', default: 60, parse: duration(1, 3600), description: 'a connection with no byte moving either way for this long is closed' },
  { key: 'httpMaxConnections', flag: '--http-max-connections <n>', env: 'PIND_HTTP_MAX_CONNECTIONS', parse: int(1, 1_000_000), description: 'open HTTP connections at most; past it a new connection closes the one waiting longest for a request head (503 if all are busy); default half the open-file limit' },
  { key: 'httpMaxConnectionsPerClient', flag: '--http-max-connections-per-client <n>', env: 'PIND_HTTP_MAX_CONNECTIONS_PER_CLIENT', parse: int(1, 1_000_000), description: 'open HTTP connections per client address (IPv6: per /64; trusted proxies not counted) at most, same policy; default an eighth of --http-max-connections' },
  { key: 'httpSendBudget', flag: '--http-send-budget <bytes>', env: 'PIND_HTTP_SEND_BUDGET', default: DEFAULT_SEND_BUDGET, parse: sendBudget, description: 'response bytes all streamed responses (gateway files, CARs, blocks, listings) may hold queued in this process at once, e.g. 64MiB; a response that finds it spent waits (and reads nothing more) until bytes go out, and the response that has waited longest (1 s or more) for its own client is cut to make room' },
  { key: 'httpMinSendRate', flag: '--http-min-send-rate <bytes-per-second>', env: 'PIND_HTTP_MIN_SEND_RATE', default: DEFAULT_MIN_SEND_RATE, parse: int(0, 1_000_000_000), description: 'a client must take a streamed response at least this fast (bytes/s, averaged over the time the response waits for it, after the grace period) or its connection is cut; 0 = no minimum' },
  { key: 'httpMinSendRateGrace', flag: '--http-min-send-rate-grace <duration>', env: 'PIND_HTTP_MIN_SEND_RATE_GRACE', default: DEFAULT_MIN_SEND_GRACE, parse: duration(1, 3600), description: 'how long a streamed response waits for a slow client before --http-min-send-rate applies' },
  { key: 'httpMaxStreamsPerClient', flag: '--http-max-streams-per-client <n>', env: 'PIND_HTTP_MAX_STREAMS_PER_CLIENT', default: 64, parse: int(0, 1_000_000), description: 'gateway GETs under way per client address (IPv6: per /64; trusted proxies: per forwarded client) at most; past it 429 with Retry-After; 0 = unlimited' },
  { key: 'metricsListen', flag: '--metrics-listen <host:port>', env: 'PIND_METRICS_LISTEN', parse: hostPort, description: 'also serve GET /metrics (Prometheus) on this separate address, e.g. 127.0.0.1:9464; it is always on the admin socket' },
  { key: 'denylist', flag: '--denylist <paths>', env: 'PIND_DENYLIST', default: [], parse: list(str), description: 'IPIP-383 denylists (Kubo\'s compact *.deny format, e.g. Bad Bits): files, or directories whose *.deny files are all read; comma-separated; reloaded when they change. Denied content answers 410 at the gateway, is not sent over bitswap and is refused (451) by paid writes' },
  { key: 'shutdownTimeout', flag: '--shutdown-timeout <duration>', env: 'PIND_SHUTDOWN_TIMEOUT', default: 10, parse: duration(0, 3600), description: 'how long in-flight requests may finish after SIGTERM' },
  // 0 for a single node (nothing polls /ready, so waiting would only delay the stop); behind a balancer
  // set it above the balancer's check interval x fall count, so it stops sending before serve closes
  { key: 'shutdownDrain', flag: '--shutdown-drain <duration>', env: 'PIND_SHUTDOWN_DRAIN', default: 0, parse: duration(0, 300), description: 'after SIGTERM, how long /ready answers 503 (draining) while every other request is still served, with Connection: close, before serve stops accepting (behind a load balancer: longer than its check interval x fall count); 0 = no drain' },
  // the ledger: global, because every admin command on a stopped data dir opens it
  { key: 'ledger', flag: '--ledger <lmdb|postgres>', env: 'PIND_LEDGER', global: true, parse: oneOf(LEDGERS), description: 'where the ledger lives: lmdb (ledger.mdb in the data dir) or postgres (the database of --database-url, which several serves can share); default: what the data dir records, else lmdb' },
  { key: 'databaseUrl', flag: '--database-url <url>', env: 'PIND_DATABASE_URL', global: true, parse: databaseUrl, description: 'the PostgreSQL database of --ledger postgres, e.g. postgres://pind@db.example:5432/pind (no password in it: PIND_DATABASE_PASSWORD or --database-password-file); default: what the data dir records' },
  { key: 'databasePassword', env: 'PIND_DATABASE_PASSWORD', global: true, secret: true, parse: str, description: 'the database password (environment only; or the password file)' },
  { key: 'databasePasswordFile', flag: '--database-password-file <file>', env: 'PIND_DATABASE_PASSWORD_FILE', global: true, parse: str, description: 'file holding the database password (mode 0600)' },
  { key: 'databasePoolSize', flag: '--database-pool-size <n>', env: 'PIND_DATABASE_POOL_SIZE', global: true, default: 10, parse: int(2, 1000), description: 'connections this process keeps to the database at most (2 at least: a gc batch holds one while it reads the ledger through another)' },
  { key: 'databaseStatementTimeout', flag: '--database-statement-timeout <duration>', env: 'PIND_DATABASE_STATEMENT_TIMEOUT', global: true, default: 30, parse: duration(1, 3600), description: 'the database cancels a statement that runs longer than this' },
  { key: 'databaseSslmode', flag: '--database-sslmode <mode>', env: 'PIND_DATABASE_SSLMODE', global: true, parse: oneOf(DATABASE_SSL_MODES), description: 'TLS to the database: disable, require (encrypted, the server not verified), verify-ca (its certificate chains to --database-ca-file), verify-full (that, and it names the host); default verify-full, or disable for a loopback host' },
  { key: 'databaseCaFile', flag: '--database-ca-file <file>', env: 'PIND_DATABASE_CA_FILE', global: true, parse: str, description: 'PEM file of the CA the database\'s certificate must chain to (default: the system\'s CAs)' },
  // block storage: global, because gc, settlements and blocks migrate work on the blocks too
  { key: 'blockstore', flag: '--blockstore <fs|s3>', env: 'PIND_BLOCKSTORE', global: true, parse: oneOf(BLOCKSTORES), description: 'where blocks live: fs (blocks/ in the data dir) or s3 (a bucket); default: what the data dir records, else fs' },
  { key: 's3Endpoint', flag: '--s3-endpoint <url>', env: 'PIND_S3_ENDPOINT', global: true, parse: httpUrl, description: 'S3 API endpoint (R2: https://<account>.r2.cloudflarestorage.com, B2: https://s3.<region>.backblazeb2.com); default AWS S3 of the region' },
  { key: 's3Bucket', flag: '--s3-bucket <name>', env: 'PIND_S3_BUCKET', global: true, parse: bucketName, description: 'the bucket that holds the blocks (it must exist)' },
  { key: 's3Prefix', flag: '--s3-prefix <prefix>', env: 'PIND_S3_PREFIX', global: true, parse: keyPrefix, description: 'key prefix of the blocks in the bucket (default blocks/; one prefix per data dir)' },
  { key: 's3Region', flag: '--s3-region <region>', env: 'PIND_S3_REGION', global: true, parse: str, description: 'the bucket\'s region for request signing (default us-east-1; R2: auto)' },
  { key: 's3ForcePathStyle', flag: '--s3-force-path-style [bool]', env: 'PIND_S3_FORCE_PATH_STYLE', global: true, parse: bool, description: 'address the bucket as <endpoint>/<bucket> instead of <bucket>.<endpoint> (Ceph, MinIO, Garage; default false)' },
  { key: 's3AccessKeyId', env: 'PIND_S3_ACCESS_KEY_ID', global: true, secret: true, parse: str, description: 'S3 access key id (environment only; or the credentials file)' },
  { key: 's3SecretAccessKey', env: 'PIND_S3_SECRET_ACCESS_KEY', global: true, secret: true, parse: str, description: 'S3 secret access key (environment only; or the credentials file)' },
  { key: 's3SessionToken', env: 'PIND_S3_SESSION_TOKEN', global: true, secret: true, parse: str, description: 'S3 session token for temporary credentials (environment only; optional)' },
  { key: 's3CredentialsFile', flag: '--s3-credentials-file <file>', env: 'PIND_S3_CREDENTIALS_FILE', global: true, parse: str, description: 'file with the S3 credentials (mode 0600; aws_access_key_id = …, aws_secret_access_key = …)' },
  { key: 's3CacheSize', flag: '--s3-cache-size <bytes>', env: 'PIND_S3_CACHE_SIZE', global: true, default: 0, parse: byteSize, description: 'on-disk read cache for S3 blocks in <data-dir>/s3-cache, e.g. 10GiB (0 = none)' },
  { key: 's3Timeout', flag: '--s3-timeout <duration>', env: 'PIND_S3_TIMEOUT', global: true, default: 10, parse: duration(1, 120), description: 'deadline of one request to the S3 bucket, retries included: a bucket that takes requests and answers none fails uploads (503, no payment used), reads (503/504) and /health within it' },
  { key: 's3VerifyReads', flag: '--s3-verify-reads [bool]', env: 'PIND_S3_VERIFY_READS', global: true, default: false, parse: bool, description: 'hash every block read from the bucket against its CID and refuse one that differs (a damaged or replaced object: 500, never served or cached), as Kubo\'s Datastore.HashOnRead; costs CPU per byte read. Off: the bucket this node wrote is trusted (migration\'s read-back is always hashed)' },
  { key: 'runtimeIdleCollection', flag: '--runtime-idle-collection [bool]', env: 'PIND_RUNTIME_IDLE_COLLECTION', default: false, parse: bool, description: 'one full garbage collection each time the process goes quiet after work, so what the load left goes back to the system at once: V8\'s last-resort collection, asked for through its inspector inside the process (no flag, no port; docs/runtime.md)' },
  { key: 'runtimeHeapTrim', flag: '--runtime-heap-trim [bool]', env: 'PIND_RUNTIME_HEAP_TRIM', default: false, parse: bool, description: 'under load, a full collection when memory V8 kept after a burst stays 8 MiB above its lowest (at most every 2 minutes; docs/runtime.md)' },
  { key: 'runtimeMallocTrim', flag: '--runtime-malloc-trim [bool]', env: 'PIND_RUNTIME_MALLOC_TRIM', default: false, parse: bool, description: 'after each collection of --runtime-idle-collection and --runtime-heap-trim, glibc\'s malloc_trim(0): the free pages inside malloc\'s arenas go back to the system (docs/runtime.md)' },
  { key: 'runtimeMapTrim', flag: '--runtime-map-trim [bool]', env: 'PIND_RUNTIME_MAP_TRIM', default: false, parse: bool, description: 'after each collection of --runtime-idle-collection, the pages of LMDB\'s mapped files leave the process\'s resident memory; they stay in the page cache, where the next read finds them (docs/runtime.md)' },
  { key: 'runtimeHeapGrowingPercent', flag: '--runtime-heap-growing-percent <percent>', env: 'PIND_RUNTIME_HEAP_GROWING_PERCENT', default: 0, parse: int(0, 1000), description: 'the old generation grows by this percentage of what survived its last full collection before the next one (V8\'s --heap-growing-percent); 0 = V8\'s own factor (docs/runtime.md)' },
  { key: 'runtimeReleaseBuffers', flag: '--runtime-release-buffers [bool]', env: 'PIND_RUNTIME_RELEASE_BUFFERS', default: true, parse: bool, description: 'free upload body pieces and gateway block reads as soon as they are written, instead of waiting for a garbage collection (docs/runtime.md)' }
]

/** A setting's default, for code that needs it without a whole configuration (admin commands on a stopped data dir). */
export function settingDefault<K extends keyof Config> (key: K): Config[K] {
  const s = SETTINGS.find(x => x.key === key)
  if (s?.default === undefined) throw new Error(`setting ${key} has no default`)
  return s.default as Config[K]
}
