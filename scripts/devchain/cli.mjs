#!/usr/bin/env node
// Starts a dev chain, prints its description as one JSON line on stdout, and keeps it up
// until SIGINT/SIGTERM. Options: --port N, --payers N, --chain-id N (default 167000).
import { parseArgs } from 'node:util';
import { startDevChain } from './index.mjs';

const { values } = parseArgs({ options: { port: { type: 'string' }, payers: { type: 'string' }, 'chain-id': { type: 'string' } } });
const chain = await startDevChain({
  port: values.port === undefined ? undefined : Number(values.port),
  payers: values.payers === undefined ? undefined : Number(values.payers),
  chainId: values['chain-id'] === undefined ? undefined : Number(values['chain-id']),
});
process.stdout.write(`${JSON.stringify(chain)}\n`);

let stopping = false;
const shutdown = async (signal) => {
  if (stopping) return;
  stopping = true;
  await chain.stop();
  process.exitCode = signal === 'SIGINT' ? 130 : 143;
};
process.on('SIGINT', shutdown);
process.on('SIGTERM', shutdown);
