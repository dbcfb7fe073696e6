/**
 * Imported first by src/main.ts, so it runs before any other module: what pind
 * creates (the data dir, the ledger, keys, blocks, exports, the native addon
 * the binary unpacks) is its owner's alone: files 0600, folders 0700.
 */
process.umask(0o077)

export {}
