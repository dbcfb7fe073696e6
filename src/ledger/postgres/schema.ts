/**
 * The PostgreSQL ledger's schema, versioned: `pind_schema` holds the version,
 * and the migrations below run in order, all in one transaction, when a
 * ledger opens. An advisory lock taken in that transaction makes two front
 * ends opening at once take turns: the second finds the work done.
 *
 * Tables (keys are text COLLATE "C": byte order, whatever the database's
 * locale, so keyset pages and listings order as the LMDB ledger's do).
 * Records are kept whole as `json`, which keeps their text as written: a
 * string with a NUL (\u0000), which jsonb and text cannot hold, reads back
 * as it was written. The columns filtered on are derived from them
 * (./pin-store.ts: a NUL there compares as U+FFFD).
 *   pins            one row per pin ever recorded, the whole record as jsonb, and the
 *                   columns listings and indexes need (owner, v1 root, created µs,
 *                   status, pinned_until ms, name, meta, removal, archived)
 *   payments        one row per payment id ever recorded: its PRIMARY KEY is what
 *                   makes a payment buy one thing only
 *   pin_blocks      requestid → the block CIDs (v1) the pin holds
 *   block_refs      block CID (v1) → how many pins hold it (rows locked by each write)
 *   fetch_queue     pins by CID still to fetch; holder and lease_until (version 2): the
 *                   front end fetching it, until when (./fetch-claims.ts)
 *   provides        the provide schedule: (kind, kad) → multihash, holders, due, last
 *   tickets         upload tickets; a claim is a compare-and-set on claimed_by
 *   settling, settlements_closed, tokens_*, owners_revoked, denials, denials_log, facts
 *   front_ends, leases, signing_keys (version 2): what several front ends coordinate through (./coordination.ts)
 *   changes (version 2): each write's changes, for the other processes' watchers (./remote-feed.ts)
 *   clock (version 2): the last `created` handed out to any front end (PinLedger.nextCreated)
 *   block_marks (version 3): blocks a front end is writing before a pin references them (./block-fence.ts)
 *   provides.by, claimed_until (version 3): the front end that announced a key last
 *                   (ProvideSchedule.reannounce), until when one holds it to announce it (claim)
 *   siwx_nonces (version 4): Sign-In-With-X nonces used, until when (TokenLedger.useNonce)
 */
import type pg from 'pg'
import { LedgerSchemaError } from '../errors.js'

/** the newest schema this code knows (the last migration's version) */
export const SCHEMA_VERSION = 4

/** a lock id of its own: hashtext('pind ledger schema') taken once, as a constant */
const MIGRATION_LOCK = 0x70696e64

const MIGRATIONS: Array<{ version: number, sql: string }> = [
  {
    version: 1,
    sql: `
CREATE TABLE pins (
  requestid text COLLATE "C" PRIMARY KEY,
  owner text COLLATE "C" NOT NULL,
  cid text COLLATE "C" NOT NULL,
  created_us bigint NOT NULL,
  status text NOT NULL CHECK (status IN ('queued', 'pinning', 'pinned', 'failed')),
  until_ms double precision NOT NULL,
  name text,
  name_lower text NOT NULL,
  meta jsonb NOT NULL,
  removed boolean NOT NULL,
  removed_ms double precision,
  archived boolean NOT NULL DEFAULT false,
  record json NOT NULL
);
CREATE INDEX pins_owner_created ON pins (owner, created_us DESC) WHERE NOT removed;
CREATE INDEX pins_created ON pins (created_us DESC) WHERE NOT removed;
CREATE INDEX pins_cid ON pins (cid) WHERE NOT removed;
CREATE INDEX pins_until ON pins (until_ms, requestid) WHERE NOT removed;
CREATE INDEX pins_meta ON pins USING gin (meta jsonb_path_ops) WHERE NOT removed;
CREATE INDEX pins_removed ON pins (removed_ms, requestid) WHERE removed AND NOT archived;

CREATE TABLE payments (
  id text COLLATE "C" PRIMARY KEY,
  requestid text COLLATE "C" NOT NULL,
  amount text NOT NULL CHECK (amount ~ '^[0-9]+$'),
  archived boolean NOT NULL DEFAULT false,
  record json NOT NULL
);

CREATE TABLE pin_blocks (
  requestid text COLLATE "C" PRIMARY KEY,
  cids text[] NOT NULL
);

CREATE TABLE block_refs (
  cid text COLLATE "C" PRIMARY KEY,
  n integer NOT NULL CHECK (n > 0)
);

CREATE TABLE fetch_queue (
  requestid text COLLATE "C" PRIMARY KEY,
  created_us bigint NOT NULL
);
CREATE INDEX fetch_queue_created ON fetch_queue (created_us);

CREATE TABLE provides (
  kind text NOT NULL CHECK (kind IN ('roots', 'blocks')),
  kad bytea NOT NULL,
  mh bytea NOT NULL,
  n integer NOT NULL,
  due bigint NOT NULL,
  at bigint NOT NULL,
  PRIMARY KEY (kind, kad)
);
CREATE INDEX provides_due ON provides (kind, due, kad);

CREATE TABLE tickets (
  id text COLLATE "C" PRIMARY KEY,
  payer text NOT NULL,
  payment_id text COLLATE "C" NOT NULL,
  claimed_by text COLLATE "C" UNIQUE,
  record json NOT NULL
);

CREATE TABLE settling (
  payment_id text COLLATE "C" PRIMARY KEY,
  record json NOT NULL
);

CREATE TABLE settlements_closed (
  seq bigserial PRIMARY KEY,
  payment_id text COLLATE "C" NOT NULL,
  closed_at timestamptz NOT NULL,
  record json NOT NULL
);

CREATE TABLE tokens_issued (
  jti text COLLATE "C" PRIMARY KEY,
  record json NOT NULL
);
CREATE TABLE tokens_revoked (
  jti text COLLATE "C" PRIMARY KEY,
  at text NOT NULL
);
CREATE TABLE owners_revoked (
  owner text COLLATE "C" PRIMARY KEY,
  iat bigint NOT NULL
);

CREATE TABLE denials (
  key text COLLATE "C" PRIMARY KEY,
  record json NOT NULL
);
CREATE TABLE denials_log (
  seq bigserial PRIMARY KEY,
  event json NOT NULL
);

CREATE TABLE facts (
  key text COLLATE "C" PRIMARY KEY,
  value json NOT NULL
);
`
  },
  {
    version: 2,
    sql: `
CREATE TABLE front_ends (
  id text COLLATE "C" PRIMARY KEY,
  record json NOT NULL,
  seen_at timestamptz NOT NULL
);
CREATE TABLE leases (
  name text COLLATE "C" PRIMARY KEY,
  holder text COLLATE "C" NOT NULL,
  until timestamptz NOT NULL
);
CREATE TABLE changes (
  seq bigserial PRIMARY KEY,
  origin text NOT NULL,
  at timestamptz NOT NULL DEFAULT now(),
  body json NOT NULL
);
CREATE INDEX changes_at ON changes (at);
CREATE TABLE clock (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  last_us bigint NOT NULL
);
INSERT INTO clock (last_us) SELECT coalesce(max(created_us), 0) FROM pins;
CREATE SEQUENCE signing_keys_version;
CREATE TABLE signing_keys (
  kid text COLLATE "C" PRIMARY KEY,
  key json NOT NULL,
  version bigint NOT NULL
);
ALTER TABLE fetch_queue ADD COLUMN holder text COLLATE "C", ADD COLUMN lease_until timestamptz;
`
  },
  {
    version: 3,
    sql: `
CREATE TABLE block_marks (
  ticket text COLLATE "C" NOT NULL,
  name text COLLATE "C" NOT NULL,
  until timestamptz NOT NULL,
  PRIMARY KEY (ticket, name)
);
CREATE INDEX block_marks_name ON block_marks (name);
ALTER TABLE provides ADD COLUMN by text COLLATE "C", ADD COLUMN claimed_until bigint;
CREATE INDEX provides_by ON provides (by) WHERE by IS NOT NULL;
`
  },
  {
    version: 4,
    sql: `
CREATE TABLE siwx_nonces (
  nonce text COLLATE "C" PRIMARY KEY,
  until timestamptz NOT NULL
);
CREATE INDEX siwx_nonces_until ON siwx_nonces (until);
`
  }
]

/**
 * Brings the database's schema to SCHEMA_VERSION in one transaction (under
 * the advisory lock); LedgerSchemaError when it is newer than this code
 * knows. Returns the version it found (0: a new ledger).
 */
export async function migrate (client: pg.ClientBase): Promise<number> {
  await client.query('BEGIN')
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK])
    await client.query(`CREATE TABLE IF NOT EXISTS pind_schema (
      one boolean PRIMARY KEY DEFAULT true CHECK (one),
      version integer NOT NULL,
      created timestamptz NOT NULL DEFAULT now(),
      migrated timestamptz NOT NULL DEFAULT now()
    )`)
    const row = (await client.query<{ version: number }>('SELECT version FROM pind_schema')).rows[0]
    const found = row?.version ?? 0
    if (found > SCHEMA_VERSION) throw new LedgerSchemaError(`the ledger's database has schema version ${found}; this pind understands versions up to ${SCHEMA_VERSION}`)
    for (const m of MIGRATIONS) if (m.version > found) await client.query(m.sql)
    if (row == null) await client.query('INSERT INTO pind_schema (version) VALUES ($1)', [SCHEMA_VERSION])
    else if (found < SCHEMA_VERSION) await client.query('UPDATE pind_schema SET version = $1, migrated = now()', [SCHEMA_VERSION])
    await client.query('COMMIT')
    return found
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})
    throw err
  }
}
