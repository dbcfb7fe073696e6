/**
 * Bad input, thousands of times (issue #7, item 4): one real pind (the
 * bundle) on a dev chain, rate limits off, gets malformed requests of every
 * kind — broken CIDs, path traversal and encoding tricks, broken JSON and
 * wrong types, bad size/duration headers, broken and lying multipart bodies,
 * forged tokens, tampered and replayed payments, unknown methods, oversized
 * and invalid headers, raw garbage on the socket — and must answer each with
 * a 4xx carrying the spec error body, stay up (GET /health after every batch),
 * keep its RSS flat and write nothing to the ledger.
 *
 * Real bugs this suite found are in the last describe block, one `it` per
 * bug, asserting the correct behaviour: all are fixed, and each stays as a
 * regression test (it failed on the code before its fix).
 */
import { randomBytes } from 'node:crypto'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startDevChain, type DevChain } from '../../scripts/devchain/index.mjs'
import { BadInputClient, problemWith, rawExchange, targetOf, type Case, type HttpCase, type RawCase } from '../helpers/bad-input/client.js'
import {
  b64url, badChallengeBodies, badCids, badMultipart, badTokenBodies, forgedTokens, invalidJson, pathSegment, prng, wrongPinBodies, type Jwk
} from '../helpers/bad-input/cases.js'
import { connect } from 'node:net'
import { startFacilitatorStandIn } from '../helpers/facilitator-standin.js'
import { chainArgs, payingFetch, signChallenge, uploadChallenge, uploadForm } from '../helpers/paying-client.js'
import { diskBlocks } from '../helpers/backend.js'
import { runPind, startPind, type PindProcess } from '../helpers/pind.js'
import { MAX_URL_LENGTH } from '../../src/http/server.js'

const SEED = Number(process.env.BAD_INPUT_SEED ?? 0x7e57)
const rng = prng(SEED)

let chain: DevChain
let pind: PindProcess
let client: BadInputClient
const started = Date.now()

/** owner A: a pin made by a paid upload whose signed payment we keep (settled, so replays go through the replay path) */
const A = { token: '', requestid: '', cid: '', address: '', settledPayment: '', size: 0 }
/** owner B: another payer with a pin of their own */
const B = { token: '', requestid: '', address: '' }
/** signed payments for an upload of 1000 bytes, verified but never settled (each malformed body fails before settlement) */
let freshPayments: string[] = []
/** the terms (accepts[0]) of an upload challenge for 1000 bytes */
let terms: Record<string, unknown> = {}
let jwks: Jwk[] = []
let ledgerBefore: string[] = []
let blocksBefore = 0
let rssBefore = 0

const FRESH_SIZE = 1000

function rssKiB (pid: number): number {
  const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (m == null) throw new Error('no VmRSS')
  return Number(m[1])
}

/** files under a folder, recursively (the blockstore is a tree of block files) */
function countFiles (dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true })) n += e.isDirectory() ? countFiles(join(dir, e.name)) : 1
  return n
}

/** pins and payments as `pind export-ledger` (through the running serve's admin socket) writes them, header line left out */
async function ledgerLines (): Promise<string[]> {
  const r = await runPind(['export-ledger', '--data-dir', pind.dataDir])
  if (r.code !== 0) throw new Error(`export-ledger exited ${String(r.code)}: ${r.err}`)
  return r.out.split('\n').filter(l => l !== '' && !l.startsWith('{"type":"header"'))
}

const bearer = (token: string): string => `Bearer ${token}`
const jsonCase = (category: string, label: string, path: string, body: string | Uint8Array, headers: Record<string, string> = {}, expect?: number[]): HttpCase =>
  ({ category, label, method: 'POST', path, headers: { 'content-type': 'application/json', ...headers }, body, ...(expect != null ? { expect } : {}) })

beforeAll(async () => {
  chain = await startDevChain({ payers: 3 })
  const { args, env } = chainArgs(chain)
  pind = await startPind({
    // limits off (they would answer 429 and hide what is under test); no network probe for unknown CIDs (a 402 at once)
    args: [...args, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0', '--pin-probe-timeout', '0'],
    env
  })
  client = new BadInputClient(targetOf(pind.url))

  // owner A: 1.5 MB (a dag-pb root over two raw leaves), paid by hand so the signed payment can be replayed later
  const payerA = chain.payers[0]!
  const bytes = randomBytes(1_500_000)
  A.size = bytes.length
  A.settledPayment = await signChallenge(chain, payerA.privateKey, await uploadChallenge(pind.url, bytes.length))
  const up = await fetch(`${pind.url}/upload`, { method: 'POST', body: uploadForm(bytes, 'a.bin'), headers: { 'x-upload-size': String(bytes.length), 'payment-signature': A.settledPayment } })
  expect(up.status).toBe(201)
  const upBody = await up.json() as { requestid: string, cid: string }
  Object.assign(A, { token: up.headers.get('x-wallet-auth-token') as string, requestid: upBody.requestid, cid: upBody.cid, address: payerA.address.toLowerCase() })

  // owner B, with the real x402 client
  const payerB = chain.payers[1]!
  const upB = await payingFetch(chain, payerB.privateKey)(`${pind.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(64), 'b.bin') })
  expect(upB.status).toBe(201)
  Object.assign(B, { token: upB.headers.get('x-wallet-auth-token') as string, requestid: (await upB.json() as { requestid: string }).requestid, address: payerB.address.toLowerCase() })

  // payments that verify but are never settled here
  const challenge = await uploadChallenge(pind.url, FRESH_SIZE)
  terms = decodePaymentRequiredHeader(challenge.headers.get('payment-required') as string).accepts[0] as unknown as Record<string, unknown>
  freshPayments = await Promise.all([0, 1, 2, 3].map(async () => await signChallenge(chain, chain.payers[2]!.privateKey, challenge)))

  jwks = (await (await fetch(`${pind.url}/.well-known/jwks.json`)).json() as { keys: Jwk[] }).keys
  ledgerBefore = await ledgerLines()
  blocksBefore = diskBlocks(join(pind.dataDir, 'blocks'))
  expect(blocksBefore).toBeGreaterThanOrEqual(2) // A's and B's files (packed: the count sees small.mdb)
  expect(ledgerBefore.filter(l => l.startsWith('{"type":"pin"')).length).toBe(2)

  // warm-up: one pass of the cheap categories (checked like the rest), so the heap has grown to its working size;
  // then the RSS baseline (in a longer run RSS levels off after ~20k requests: V8 sizing its heap, not a leak)
  await client.runAll([...cidCases(), ...jsonCases(), ...tokenCases(), ...methodCases()].map(c => ({ ...c, category: 'warm-up' })))
  rssBefore = rssKiB(pind.pid)
}, 120_000)

afterAll(async () => {
  client?.close()
  const seconds = (Date.now() - started) / 1000
  if (client != null) {
    process.stdout.write(`bad-input: slowest requests\n${client.slowest.map(s => `  ${s.ms.toFixed(0).padStart(6)} ms ${s.label.slice(0, 120)}`).join('\n')}\n`)
    const total = [...client.counts.values()].reduce((a, b) => a + b, 0)
    process.stdout.write(`\nbad-input: seed ${SEED}, ${total} requests in ${seconds.toFixed(1)} s\n`)
    for (const [category, n] of client.counts) process.stdout.write(`  ${category.padEnd(28)} ${n}\n`)
  }
  await pind?.stop()
  await chain?.stop()
})

// ---- generators of cases, per category ------------------------------------------------

function cidCases (): Case[] {
  const out: Case[] = []
  for (const c of badCids(A.cid, rng, 350)) {
    const seg = pathSegment(c.text)
    // a target over 8 KiB is refused (414) before anything looks at it, however good the CID
    const gw = `/ipfs/${seg}`.length > MAX_URL_LENGTH ? [414] : c.inlineRaw === true ? [200, 400, 404] : undefined
    out.push({ category: 'bad CIDs', label: `GET /ipfs/{${c.label}}`, path: `/ipfs/${seg}`, ...(gw != null ? { expect: gw } : {}) })
    out.push({ category: 'bad CIDs', label: `HEAD /ipfs/{${c.label}}`, method: 'HEAD', path: `/ipfs/${seg}`, ...(gw != null ? { expect: gw } : {}) })
    const filter = `/pins?cid=${encodeURIComponent(c.text)}`
    const listed = filter.length > MAX_URL_LENGTH ? [414] : c.parses ? [200] : undefined
    out.push({ category: 'bad CIDs', label: `GET /pins?cid={${c.label}}`, path: filter, headers: { authorization: bearer(A.token) }, ...(listed != null ? { expect: listed } : {}) })
    out.push(jsonCase('bad CIDs', `POST /pins {cid: ${c.label}}`, '/pins', JSON.stringify({ cid: c.text })))
  }
  return out
}

function traversalCases (): Case[] {
  const cid = A.cid
  // [path, may it be served? (URL normalisation turns it into the CID itself, or into / : the landing page)]
  const paths: Array<[string, boolean?]> = [
    ['/ipfs/../../etc/passwd'], ['/ipfs/..%2f..%2fetc%2fpasswd'], ['/ipfs/%2e%2e/%2e%2e/etc/passwd'], ['/ipfs/%2E%2E/%2E%2E/etc/passwd'],
    [`/ipfs/${cid}/../../../etc/passwd`], [`/ipfs/${cid}/..%2f..%2f..%2fetc%2fpasswd`], [`/ipfs/${cid}/%2e%2e/%2e%2e/etc/passwd`],
    [`/ipfs/${cid}/%252e%252e%252fetc%252fpasswd`], [`/ipfs/${cid}/%25252e%25252e`], [`/ipfs/${cid}/%00`], [`/ipfs/${cid}%00`], [`/ipfs/${cid}/a%00b`],
    [`/ipfs/${cid}/%00/../../etc/passwd`], [`/ipfs/${cid}/%c0%ae%c0%ae/%c0%af`], [`/ipfs/${cid}/%e0%80%ae%e0%80%ae`], [`/ipfs/${cid}/%ed%a0%80`],
    [`/ipfs/${cid}/%ff%fe`], [`/ipfs/${cid}/%`], [`/ipfs/${cid}/%%32%65`], [`/ipfs/${cid}/%u002e%u002e`], [`/ipfs/${cid}/%zz`],
    [`/ipfs/${cid}/..\\..\\etc\\passwd`], [`/ipfs/${cid}\\..\\..\\etc\\passwd`], ['/ipfs\\..\\etc\\passwd'], [`/ipfs/${cid}/%5c..%5c..%5cetc%5cpasswd`],
    [`/ipfs/${cid}/.`, true], [`/ipfs/${cid}/%2e`, true], [`/ipfs/${cid}/./././`, true], [`/ipfs/${cid}/a/..`, true], [`/ipfs/${cid}/a/%2e%2e/`, true],
    [`//ipfs/${cid}/../..`, true], ['/ipfs//..//..//etc/passwd'], [`/ipfs/${cid}/;/../`, true], [`/ipfs/${cid}/file:///etc/passwd`],
    [`/ipfs/${cid}/C:\\Windows\\win.ini`], [`/ipfs/${cid}/\u00ff\u00fe`], [`/ipfs/${cid}/%2F%2F%2F`], [`/ipfs/${cid}/a%2Fb`], [`/ipfs/${cid}/%2e%2e%5c`],
    [`/ipfs/${cid}/` + '..%2f'.repeat(500)], [`/ipfs/${cid}/` + 'a/'.repeat(3000)], [`/ipfs/${cid}/` + '%2e%2e%2f'.repeat(900)],
    [`/ipfs/${cid}/` + 'x'.repeat(15_000)], ['/ipfs/' + 'a'.repeat(20_000)], [`/ipfs/${cid}/` + '/'.repeat(5000) + 'x'],
    ['/ipfs'], ['/ipfs/'], ['/ipfs/%20'], ['/ipfs/.'], ['/ipfs/..', true], ['/ipns/' + cid], ['/ipfs/ipfs/' + cid], ['/IPFS/' + cid],
    [`/ipfs/${cid}?format=../../etc/passwd`], [`/ipfs/${cid}?format=%00`], [`/ipfs/${cid}?format=tar`], [`/ipfs/${cid}?format=ipns-record`],
    [`/ipfs/${cid}?format=car&dag-scope=../..`], [`/ipfs/${cid}?format=car&entity-bytes=a:b`], [`/ipfs/${cid}?format=car&entity-bytes=99999999999999999999:1`],
    [`/ipfs/${cid}?format=car&entity-bytes=5:1`], [`/ipfs/${cid}?format=car&car-version=2`], [`/ipfs/${cid}?format=car&car-order=random`],
    [`/ipfs/${cid}?format=car&car-dups=maybe`], [`/ipfs/${cid}?format=car&dag-scope=block&entity-bytes=0:1`], [`/ipfs/${cid}/x?format=raw`],
    [`/ipfs/${cid}?format=dag-json`], [`/ipfs/${cid}?format=cbor`]
  ]
  const out: Case[] = []
  for (const [path, maybeServed] of paths) {
    const expect = maybeServed === true ? [200, 301, 400, 404] : path.length > 16 * 1024 ? [431] : undefined
    out.push({ category: 'traversal & encoding', label: `GET ${path.slice(0, 90)}`, path, ...(expect != null ? { expect } : {}) })
    // a request the HTTP parser refuses (bytes outside ASCII, a head over 16 KiB) is answered before its method is known,
    // with a body: node's client then rightly refuses that answer to a HEAD; those are sent as GET only
    if (/^[\x21-\x7e]*$/.test(path) && path.length < 15_000) out.push({ category: 'traversal & encoding', label: `HEAD ${path.slice(0, 90)}`, method: 'HEAD', path, ...(expect != null ? { expect } : {}) })
  }
  // Accept headers that ask for what the gateway refuses
  for (const accept of ['application/vnd.ipfs.ipns-record', 'application/x-tar', 'application/vnd.ipld.car; version=2', 'application/vnd.ipld.car; order=random', 'application/vnd.ipld.car; dups=x', 'application/x-tar, application/vnd.ipld.car; version=9']) {
    out.push({ category: 'traversal & encoding', label: `GET /ipfs/{cid} Accept: ${accept}`, path: `/ipfs/${cid}`, headers: { accept } })
  }
  return out
}

function jsonCases (): Case[] {
  const cat = 'invalid JSON & wrong types'
  const valid = JSON.stringify({ cid: A.cid, name: 'x', origins: [], meta: { k: 'v' } })
  const out: Case[] = []
  const targets: Array<[string, string, Record<string, string>]> = [
    ['POST /pins', '/pins', {}],
    ['POST /pins/{A} (replace)', `/pins/${A.requestid}`, { authorization: bearer(A.token) }],
    ['POST /auth/challenge', '/auth/challenge', {}],
    ['POST /auth/token', '/auth/token', {}]
  ]
  for (const { label, body, fuzzed } of invalidJson(rng, valid, 120)) {
    // a fuzzed body may still be JSON, even a valid (unpaid) pin: any 4xx then
    for (const [name, path, headers] of targets) out.push(jsonCase(cat, `${name}: ${label}`, path, body, headers, fuzzed === true ? undefined : [400, 413]))
  }
  for (const { label, body } of wrongPinBodies(A.cid)) {
    out.push(jsonCase(cat, `POST /pins: ${label}`, '/pins', JSON.stringify(body), {}, [400, 413]))
    out.push(jsonCase(cat, `POST /pins/{A}: ${label}`, `/pins/${A.requestid}`, JSON.stringify(body), { authorization: bearer(A.token) }, [400, 413]))
  }
  for (const { label, body } of badChallengeBodies()) out.push(jsonCase(cat, `POST /auth/challenge: ${label}`, '/auth/challenge', JSON.stringify(body), {}, [400]))
  for (const { label, body } of badTokenBodies(rng)) out.push(jsonCase(cat, `POST /auth/token: ${label}`, '/auth/token', JSON.stringify(body), {}, [400, 401]))
  // the wrong media type, whatever the body
  for (const type of [undefined, '', 'text/plain', 'application/jsonx', 'application/json-patch+json', 'application/x-json', 'json', 'text/json', 'multipart/form-data; boundary=x', '*/*', 'application/x-www-form-urlencoded', 'application/ json']) {
    for (const path of ['/pins', '/auth/challenge', '/auth/token']) {
      out.push({ category: cat, label: `POST ${path} with content-type ${JSON.stringify(type)}`, method: 'POST', path, headers: type != null ? { 'content-type': type } : {}, body: valid, expect: [415] })
    }
  }
  // too large: refused on the declared length and on the bytes received
  out.push(jsonCase(cat, 'POST /pins with 70 KB of JSON', '/pins', JSON.stringify({ cid: A.cid, name: 'x'.repeat(70_000) }), {}, [413]))
  out.push(jsonCase(cat, 'POST /auth/challenge with 5 KB of JSON', '/auth/challenge', JSON.stringify({ address: 'x'.repeat(5000) }), {}, [413]))
  out.push(jsonCase(cat, 'POST /auth/token with 20 KB of JSON', '/auth/token', JSON.stringify({ message: 'x'.repeat(20_000), signature: '0x00' }), {}, [413]))
  // (connection: close — the connection is left stuck after this 413 today: see KNOWN BUGS)
  out.push({ category: cat, label: 'POST /pins with 200 KB chunked (no Content-Length)', method: 'POST', path: '/pins', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', connection: 'close' }, body: '['.repeat(200_000), expect: [413] })
  return out
}

function headerCases (): Case[] {
  const cat = 'bad size/duration headers'
  const out: Case[] = []
  const months = ['-1', '0', '1.5', '1e30', '1e400', '0x10', '', '25', '999', '1000', '00000000000000001', '1 2', '1,2', '+1', '١', 'NaN', 'Infinity', 'abc', '2147483648', '9007199254740993', '0.0', '24.0', '1;', '1e1', '٣']
  const writes: Array<[string, string, Record<string, string>, string]> = [
    ['POST /upload', '/upload', { 'x-upload-size': '1000', 'content-type': 'multipart/form-data; boundary=x' }, '--x--\r\n'],
    ['POST /pins', '/pins', { 'content-type': 'application/json' }, JSON.stringify({ cid: A.cid })],
    ['POST /pins/{A}/renew', `/pins/${A.requestid}/renew`, { authorization: bearer(A.token) }, ''],
    ['POST /pins/{A} (replace)', `/pins/${A.requestid}`, { 'content-type': 'application/json', authorization: bearer(A.token) }, JSON.stringify({ cid: A.cid })]
  ]
  const latin1 = (s: string): string => Buffer.from(s, 'utf8').toString('latin1') // what arrives when a client sends UTF-8 bytes
  for (const [name, path, headers, body] of writes) {
    for (const m of months) {
      out.push({ category: cat, label: `${name} X-Pin-Duration-Months: ${JSON.stringify(m)}`, method: 'POST', path, headers: { ...headers, 'x-pin-duration-months': latin1(m) }, body, expect: [400] })
    }
    out.push({ category: cat, label: `${name} X-Pin-Duration-Months twice`, method: 'POST', path, headers: { ...headers, 'x-pin-duration-months': ['1', '2'] }, body, expect: [400] })
    out.push({ category: cat, label: `${name} X-Pin-Duration-Months twice, the same`, method: 'POST', path, headers: { ...headers, 'x-pin-duration-months': ['3', '3'] }, body, expect: [400] })
  }
  const sizes = ['-1', '1.5', '1e30', '1e400', '0x10', '', 'abc', '99999999999999999', '9999999999999999', '104857601', '1 2', '+5', '１２', '1,000', '  ', 'NaN', '10e3', '0b101']
  for (const s of sizes) {
    out.push({ category: cat, label: `POST /upload X-Upload-Size: ${JSON.stringify(s)}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': latin1(s), 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n', expect: [400, 413] })
    if (s !== '104857601') out.push(jsonCase(cat, `POST /pins X-Pin-Size: ${JSON.stringify(s)}`, '/pins', JSON.stringify({ cid: A.cid }), { 'x-pin-size': latin1(s) }, [400, 413]))
  }
  out.push(jsonCase(cat, 'POST /pins X-Pin-Size over --pin-max-bytes', '/pins', JSON.stringify({ cid: A.cid }), { 'x-pin-size': '34359738369' }, [413]))
  out.push({ category: cat, label: 'POST /upload X-Upload-Size twice', method: 'POST', path: '/upload', headers: { 'x-upload-size': ['1000', '2000'], 'content-type': 'multipart/form-data; boundary=x' }, body: '--x--\r\n', expect: [400] })
  out.push({ category: cat, label: 'POST /pins X-Pin-Size twice', method: 'POST', path: '/pins', headers: { 'x-pin-size': ['1000', '2000'], 'content-type': 'application/json' }, body: JSON.stringify({ cid: A.cid }), expect: [400] })
  out.push({ category: cat, label: 'POST /upload without X-Upload-Size or Content-Length (chunked)', method: 'POST', path: '/upload', headers: { 'content-type': 'multipart/form-data; boundary=x', 'transfer-encoding': 'chunked' }, body: '--x--\r\n', expect: [411] })
  // months that buy beyond --max-months ahead of now
  out.push({ category: cat, label: 'POST /pins/{A}/renew 24 more months (beyond 24 ahead)', method: 'POST', path: `/pins/${A.requestid}/renew`, headers: { authorization: bearer(A.token), 'x-pin-duration-months': '24' }, expect: [400] })
  return out
}

function multipartCases (): { unpaid: Case[], paid: Case[][], replayed: Case[] } {
  const cat = 'multipart'
  // bodies that crash the service today are in the KNOWN BUGS block; bodies busboy reads leniently as a valid upload are left out
  const crashing = /truncated in the file|closing boundary misspelt/
  const lenient = /unterminated quoted boundary|30 part header lines|20 KB part header line/
  const all = badMultipart(rng, FRESH_SIZE)
  const unpaid: Case[] = all.map(m => ({ category: cat, label: `unpaid: ${m.label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': m.contentType }, body: m.body, expect: [402] }))
  const safe = all.filter(m => !crashing.test(m.label) && !lenient.test(m.label))
  // each lane uses its own payment, one request at a time (the same payment in parallel waits for itself)
  const paid: Case[][] = freshPayments.map(() => [])
  safe.forEach((m, i) => {
    const lane = i % freshPayments.length
    paid[lane]!.push({ category: cat, label: `paid: ${m.label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': m.contentType, 'payment-signature': freshPayments[lane]! }, body: m.body, expect: [400, 413] })
  })
  const replayed: Case[] = safe.map(m => ({ category: cat, label: `replayed settled payment: ${m.label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(A.size), 'content-type': m.contentType, 'payment-signature': A.settledPayment }, body: m.body, expect: [400, 402, 413] }))
  return { unpaid, paid, replayed }
}

function tokenCases (): Case[] {
  const cat = 'tokens'
  const out: Case[] = []
  const pinBody = JSON.stringify({ cid: A.cid })
  for (const t of forgedTokens(A.token, B.address, jwks, rng, 60)) {
    const h = { authorization: t.authorization }
    out.push({ category: cat, label: `GET /pins, ${t.label}`, path: '/pins', headers: h, expect: [401] })
    out.push({ category: cat, label: `GET /pins/{A}, ${t.label}`, path: `/pins/${A.requestid}`, headers: h, expect: [401] })
    out.push({ category: cat, label: `DELETE /pins/{A}, ${t.label}`, method: 'DELETE', path: `/pins/${A.requestid}`, headers: h, expect: [401] })
    out.push({ category: cat, label: `POST /pins/{A}/renew, ${t.label}`, method: 'POST', path: `/pins/${A.requestid}/renew`, headers: h, expect: [401] })
    out.push(jsonCase(cat, `POST /pins/{A} (replace), ${t.label}`, `/pins/${A.requestid}`, pinBody, h, [401]))
    out.push(jsonCase(cat, `POST /pins (operator path), ${t.label}`, '/pins', pinBody, h, [401]))
  }
  // another owner's real token on A's pin: 404, never 403; and A's on B's
  for (const [who, token, rid] of [['B on A', B.token, A.requestid], ['A on B', A.token, B.requestid]] as const) {
    out.push({ category: cat, label: `other owner (${who}): GET`, path: `/pins/${rid}`, headers: { authorization: bearer(token) }, expect: [404] })
    out.push({ category: cat, label: `other owner (${who}): DELETE`, method: 'DELETE', path: `/pins/${rid}`, headers: { authorization: bearer(token) }, expect: [404] })
    out.push({ category: cat, label: `other owner (${who}): renew`, method: 'POST', path: `/pins/${rid}/renew`, headers: { authorization: bearer(token) }, expect: [404] })
    out.push(jsonCase(cat, `other owner (${who}): replace`, `/pins/${rid}`, pinBody, { authorization: bearer(token) }, [404]))
  }
  // the owner's own token on requestids that are not theirs (or do not exist)
  for (const rid of ['00000000-0000-0000-0000-000000000000', 'x', A.requestid.toUpperCase(), 'a'.repeat(4000), '%00', '%2e%2e%2f', 'constructor', '__proto__', 'toString', 'hasOwnProperty', encodeURIComponent('../../etc/passwd'), encodeURIComponent('😀'), `${A.requestid}%00`, `${A.requestid}%20`]) {
    const h = { authorization: bearer(A.token) }
    out.push({ category: cat, label: `GET /pins/${rid.slice(0, 40)}`, path: `/pins/${rid}`, headers: h, expect: [404] })
    out.push({ category: cat, label: `DELETE /pins/${rid.slice(0, 40)}`, method: 'DELETE', path: `/pins/${rid}`, headers: h, expect: [404] })
    out.push({ category: cat, label: `renew /pins/${rid.slice(0, 40)}`, method: 'POST', path: `/pins/${rid}/renew`, headers: h, expect: [404] })
    out.push(jsonCase(cat, `replace /pins/${rid.slice(0, 40)}`, `/pins/${rid}`, pinBody, h, [404]))
  }
  // two Authorization headers: the first wins (B's): still nobody gets A's pin
  out.push({ category: cat, label: 'two Authorization headers, B first', path: `/pins/${A.requestid}`, headers: { authorization: [bearer(B.token), bearer(A.token)] as unknown as string }, expect: [404] })
  return out
}

function paymentCases (): Case[] {
  const cat = 'payments'
  const out: Case[] = []
  const upload = (label: string, payment: string | string[], expect: number[], extra: Record<string, string> = {}): HttpCase =>
    ({ category: cat, label: `POST /upload: ${label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': 'multipart/form-data; boundary=x', 'payment-signature': payment, ...extra }, body: '--x--\r\n', expect })
  const pin = (label: string, payment: string | string[], expect: number[], cid = A.cid): HttpCase =>
    jsonCase(cat, `POST /pins: ${label}`, '/pins', JSON.stringify({ cid }), { 'payment-signature': payment as string }, expect)
  const b64 = (v: unknown): string => Buffer.from(typeof v === 'string' ? v : JSON.stringify(v)).toString('base64')

  // garbage: not base64, not JSON, not a payload
  const garbage: Array<[string, string]> = [
    ['"x"', 'x'], ['"!!!"', '!!!'], ['"===="', '===='], ['a space', ' '], ['base64 of {}', 'e30='], ['unpadded base64 of null', 'bnVsbA'],
    ['base64 of null', b64('null')], ['base64 of []', b64('[]')], ['base64 of {}', b64('{}')], ['base64 of a string', b64('"s"')], ['base64 of 1e400', b64('1e400')],
    ['base64 of true', b64('true')], ['base64 of not JSON', b64('{not json')], ['base64url alphabet', b64url({ x402Version: 2 }) + '-_'],
    ['base64 of 5000 nested arrays', b64('['.repeat(5000) + ']'.repeat(5000))], ['base64 of 10 KB JSON', b64({ x402Version: 2, junk: 'j'.repeat(10_000) })],
    ['a JWT instead', A.token], ['hex', '0x' + 'ab'.repeat(100)]
  ]
  for (let i = 0; i < 40; i++) garbage.push([`random base64 #${i}`, Buffer.from(rng.bytes(1 + rng.int(300))).toString('base64')])
  for (const [label, value] of garbage) {
    out.push(upload(label, value, [402]))
    out.push(pin(label, value, [402]))
  }
  // payloads that do not match the terms
  const fresh = decodePaymentSignatureHeader(freshPayments[0]!) as unknown as Record<string, any>
  const accepted = fresh.accepted as Record<string, unknown>
  const other = chain.payers[0]!.address
  const mismatched: Array<[string, Record<string, unknown>]> = [
    ['x402Version 2 only', { x402Version: 2 }], ['x402Version 1', { ...fresh, x402Version: 1 }], ['x402Version 3', { ...fresh, x402Version: 3 }], ['x402Version "2"', { ...fresh, x402Version: '2' }],
    ['accepted an array', { ...fresh, accepted: [accepted] }], ['accepted null', { ...fresh, accepted: null }], ['accepted a string', { ...fresh, accepted: 'exact' }],
    ['accepted amount 1', { ...fresh, accepted: { ...accepted, amount: '1' } }], ['accepted amount -1000', { ...fresh, accepted: { ...accepted, amount: '-1000' } }],
    ['accepted amount 1e3', { ...fresh, accepted: { ...accepted, amount: '1e3' } }], ['accepted amount 0x3e8', { ...fresh, accepted: { ...accepted, amount: '0x3e8' } }],
    ['accepted amount a number', { ...fresh, accepted: { ...accepted, amount: 1000 } }], ['accepted amount 1000.0', { ...fresh, accepted: { ...accepted, amount: '1000.0' } }],
    ['accepted payTo another address', { ...fresh, accepted: { ...accepted, payTo: other } }], ['accepted asset another token', { ...fresh, accepted: { ...accepted, asset: other } }],
    ['accepted network eip155:1', { ...fresh, accepted: { ...accepted, network: 'eip155:1' } }], ['accepted scheme upto', { ...fresh, accepted: { ...accepted, scheme: 'upto' } }]
  ]
  for (const [label, v] of mismatched) {
    out.push(upload(label, encodePaymentSignatureHeader(v as any), [402]))
    out.push(pin(label, encodePaymentSignatureHeader(v as any), [402]))
  }
  // a real signed payment, tampered: the signature no longer covers it
  const auth = fresh.payload.authorization as Record<string, string>
  const sig = fresh.payload.signature as string
  const flip = (hex: string): string => hex.slice(0, -2) + (hex.slice(-2) === '00' ? '01' : '00')
  const tampered: Array<[string, Record<string, unknown>]> = [
    ['value 1', { authorization: { ...auth, value: '1' }, signature: sig }],
    ['value 999999999999', { authorization: { ...auth, value: '999999999999' }, signature: sig }],
    ['to another address', { authorization: { ...auth, to: other }, signature: sig }],
    ['from another payer', { authorization: { ...auth, from: other }, signature: sig }],
    ['nonce replaced', { authorization: { ...auth, nonce: '0x' + randomBytes(32).toString('hex') }, signature: sig }],
    ['nonce zero', { authorization: { ...auth, nonce: '0x' + '00'.repeat(32) }, signature: sig }],
    ['validBefore + 10 years', { authorization: { ...auth, validBefore: String(Math.floor(Date.now() / 1000) + 10 * 365 * 86400) }, signature: sig }],
    ['validAfter in the future', { authorization: { ...auth, validAfter: String(Math.floor(Date.now() / 1000) + 86400) }, signature: sig }],
    ['validBefore in the past', { authorization: { ...auth, validBefore: '1' }, signature: sig }],
    ['signature last byte changed', { authorization: auth, signature: flip(sig) }],
    ['signature truncated', { authorization: auth, signature: sig.slice(0, 100) }],
    ['signature 0x', { authorization: auth, signature: '0x' }],
    ['signature zeros', { authorization: auth, signature: '0x' + '00'.repeat(65) }]
  ]
  for (const [label, payload] of tampered) {
    const header = encodePaymentSignatureHeader({ ...fresh, payload } as any)
    out.push(upload(`tampered ${label}`, header, [402]))
    out.push(pin(`tampered ${label}`, header, [402]))
  }
  // amount lowered consistently (accepted + authorization): below the price
  const cheap = encodePaymentSignatureHeader({ ...fresh, accepted: { ...accepted, amount: '1' }, payload: { authorization: { ...auth, value: '1' }, signature: sig } } as any)
  out.push(upload('amount lowered to 1 in terms and authorization', cheap, [402]))
  out.push(pin('amount lowered to 1 in terms and authorization', cheap, [402]))
  // payment redirected to another receiver, consistently
  const redirected = encodePaymentSignatureHeader({ ...fresh, accepted: { ...accepted, payTo: other }, payload: { authorization: { ...auth, to: other }, signature: sig } } as any)
  out.push(upload('payTo redirected in terms and authorization', redirected, [402]))
  out.push(pin('payTo redirected in terms and authorization', redirected, [402]))
  // the settled payment, replayed on other content or another purpose
  const otherCid = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
  out.push({ category: cat, label: 'replayed settled payment: POST /upload of other content', method: 'POST', path: '/upload', headers: { 'x-upload-size': String(A.size), 'payment-signature': A.settledPayment, 'content-type': 'multipart/form-data; boundary=rep' }, body: `--rep\r\nContent-Disposition: form-data; name="file"; filename="r"\r\n\r\n${'r'.repeat(5000)}\r\n--rep--\r\n`, expect: [402] })
  out.push({ category: cat, label: 'replayed settled payment: POST /upload of other content, smaller declared size', method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'payment-signature': A.settledPayment, 'content-type': 'multipart/form-data; boundary=rep' }, body: `--rep\r\nContent-Disposition: form-data; name="file"; filename="r"\r\n\r\n${'q'.repeat(500)}\r\n--rep--\r\n`, expect: [402] })
  out.push(pin('replayed settled payment, the uploaded CID', A.settledPayment, [402]))
  out.push(pin('replayed settled payment, another CID', A.settledPayment, [402], otherCid))
  out.push({ category: cat, label: 'replayed settled payment: renew', method: 'POST', path: `/pins/${A.requestid}/renew`, headers: { authorization: bearer(A.token), 'payment-signature': A.settledPayment }, expect: [402] })
  out.push(jsonCase(cat, 'replayed settled payment: replace', `/pins/${A.requestid}`, JSON.stringify({ cid: otherCid }), { authorization: bearer(A.token), 'payment-signature': A.settledPayment }, [402]))
  // two payment headers (joined by node into one unreadable value), and the v1 header name
  out.push(upload('two PAYMENT-SIGNATURE headers', [freshPayments[0]!, freshPayments[1]!], [402]))
  out.push({ category: cat, label: 'POST /upload: garbage X-PAYMENT (v1) header only', method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': 'multipart/form-data; boundary=x', 'x-payment': 'garbage' }, body: '--x--\r\n', expect: [402] })
  return out
}

/** Fields outside the signed authorization: a verifier may ignore them, so the payment can still verify (then the empty form is a 400); never a write. */
function acceptedOnlyCases (): Case[] {
  const fresh = decodePaymentSignatureHeader(freshPayments[3]!) as unknown as Record<string, any>
  const variants: Array<[string, Record<string, unknown>]> = [
    ['maxTimeoutSeconds changed', { ...fresh, accepted: { ...fresh.accepted, maxTimeoutSeconds: 1 } }],
    ['extra.name changed', { ...fresh, accepted: { ...fresh.accepted, extra: { name: 'Evil', version: '9' } } }],
    ['resource url changed', { ...fresh, resource: { url: 'https://evil.example/' } }],
    ['unknown extension', { ...fresh, extensions: { evil: { x: 1 } } }]
  ]
  return variants.map(([label, v]) => ({ category: 'payments', label: `POST /upload (empty form): accepted-only tampering: ${label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': 'multipart/form-data; boundary=x', 'payment-signature': encodePaymentSignatureHeader(v as any) }, body: '--x--\r\n', expect: [400, 402] }))
}

const ROUTES: Array<[string, string[]]> = [
  ['/upload', ['POST']], ['/pins', ['GET', 'HEAD', 'POST']], ['/pins/{A}', ['GET', 'HEAD', 'POST', 'DELETE']], ['/pins/{A}/renew', ['POST']],
  ['/ipfs/{cid}', ['GET', 'HEAD']], ['/health', ['GET', 'HEAD']], ['/auth/challenge', ['POST']], ['/auth/token', ['POST']],
  ['/.well-known/jwks.json', ['GET', 'HEAD']], ['/openapi.json', ['GET', 'HEAD']], ['/.well-known/agent.json', ['GET', 'HEAD']],
  ['/.well-known/agent-card.json', ['GET', 'HEAD']], ['/', ['GET', 'HEAD']], ['/llms.txt', ['GET', 'HEAD']], ['/.well-known/x402', ['GET', 'HEAD']],
  ['/metrics', []], ['/nope', []]
]
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE', 'PROPFIND', 'PROPPATCH', 'MKCOL', 'COPY', 'MOVE', 'LOCK', 'UNLOCK', 'SEARCH', 'QUERY',
  'PURGE', 'REPORT', 'LINK', 'UNLINK', 'ACL', 'BIND', 'REBIND', 'UNBIND', 'MERGE', 'MKACTIVITY', 'MKCALENDAR', 'CHECKOUT', 'NOTIFY', 'SUBSCRIBE', 'UNSUBSCRIBE', 'M-SEARCH',
  'SOURCE', 'FOO', 'BREW', 'X'.repeat(200)] // (node's client upper-cases methods: lowercase ones are in the raw cases)

function methodCases (): Case[] {
  const out: Case[] = []
  for (const [route, allowed] of ROUTES) {
    const path = route.replace('{A}', A.requestid).replace('{cid}', A.cid)
    for (const method of METHODS) {
      if (allowed.includes(method)) continue
      out.push({ category: 'unknown methods', label: `${method.slice(0, 20)} ${route}`, method, path, headers: { authorization: bearer(A.token) } })
    }
  }
  return out
}

function queryCases (): Case[] {
  const qs = ['limit=0', 'limit=-1', 'limit=1001', 'limit=1e3', 'limit=1.5', 'limit=', 'limit=0x10', 'limit=99999999999999999999', 'limit=1&limit=2', 'limit=%00',
    'status=', 'status=done', 'status=pinned,,bogus', 'status=PINNED', 'status=pinned&status=failed', 'match=fuzzy', 'match=', 'match=exact&match=iexact', `name=${'a'.repeat(256)}`,
    'before=yesterday', 'before=', 'before=2026-13-01T00:00:00Z', 'before=2026-01-01', 'before=2026-01-01T25:00:00Z', 'before=1e400', 'after=-1', 'after=2026-01-01T00:00:00',
    'after=%2B275760-09-13T00:00:00.001Z', 'cid=', 'cid=,,,', 'cid=notacid', `cid=${Array(11).fill(A.cid).join(',')}`, `cid=${A.cid}&cid=${A.cid}`,
    'meta=%7Bbad', 'meta=[]', 'meta=null', 'meta=1', 'meta=%22s%22', 'meta=%7B%22a%22%3A1%7D', 'meta=%7B%22a%22%3Anull%7D', 'meta=%7B%22a%22%3A%7B%7D%7D', 'meta={}&meta={}']
  return qs.map(q => ({ category: 'owner API filters', label: `GET /pins?${q.slice(0, 60)}`, path: `/pins?${q}`, headers: { authorization: bearer(A.token) }, expect: [400] }))
}

function rawCases (host: string): RawCase[] {
  const cat = 'raw HTTP'
  const out: RawCase[] = []
  const add = (label: string, raw: string | Uint8Array, extra: Partial<RawCase> = {}): void => { out.push({ category: cat, label, raw, ...extra }) }
  const H = `Host: ${host}\r\n`
  // request lines
  for (const [label, line] of [
    ['HTTP/0.9 style', 'GET /nope\r\n\r\n'], ['no version', 'GET /nope \r\n' + H + '\r\n'], ['HTTP/9.9', 'GET /nope HTTP/9.9\r\n' + H + '\r\n'],
    ['HTTP/1.1x', 'GET /nope HTTP/1.1x\r\n' + H + '\r\n'], ['FTP/1.1', 'GET /nope FTP/1.1\r\n' + H + '\r\n'], ['double spaces', 'GET  /nope  HTTP/1.1\r\n' + H + '\r\n'],
    ['lowercase version', 'GET /nope http/1.1\r\n' + H + '\r\n'], ['NUL in the target', 'GET /\u0000 HTTP/1.1\r\n' + H + '\r\n'], ['space in the target', 'GET /a b HTTP/1.1\r\n' + H + '\r\n'],
    ['DEL in the target', 'GET /\u007f HTTP/1.1\r\n' + H + '\r\n'], ['raw UTF-8 in the target', 'GET /n\u00c3\u00a9 HTTP/1.1\r\n' + H + '\r\n'],
    ['absolute-form target', `GET http://evil.example/health HTTP/1.1\r\n${H}\r\n`], ['asterisk-form GET', `GET * HTTP/1.1\r\n${H}\r\n`],
    ['asterisk-form OPTIONS', `OPTIONS * HTTP/1.1\r\n${H}\r\n`], ['authority-form GET', `GET evil.example:443 HTTP/1.1\r\n${H}\r\n`],
    ['unknown method FOO', `FOO /health HTTP/1.1\r\n${H}\r\n`], ['method with a NUL', `GE\u0000T /health HTTP/1.1\r\n${H}\r\n`], ['lowercase method', `get /health HTTP/1.1\r\n${H}\r\n`],
    ['HTTP/2 preface', 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'], ['TLS ClientHello', Buffer.from('16030100a5010000a10303', 'hex').toString('latin1') + 'x'.repeat(40)],
    ['bare LF line ends', `GET /nope HTTP/1.1\nHost: ${host}\n\n`], ['CR only line ends', `GET /nope HTTP/1.1\rHost: ${host}\r\r`], ['empty line then garbage', '\r\n\r\nxyz\r\n\r\n'],
    ['a 20 KB request line', `GET /${'a'.repeat(20_000)} HTTP/1.1\r\n${H}\r\n`]
  ] as const) add(`request line: ${label}`, line, label === 'a 20 KB request line' ? { expect: [431] } : {})
  for (let i = 0; i < 30; i++) add(`random bytes #${i}`, rng.bytes(1 + rng.int(300)), { end: true })
  // header bytes
  for (const [label, header] of [
    ['space in a name', 'Bad Header: 1'], ['empty name', ': x'], ['no colon', 'NoColonHere'], ['NUL in a value', 'X-A: a\u0000b'], ['CR in a value', 'X-A: a\rb'],
    ['DEL in a value', 'X-A: \u007f'], ['obs-fold', 'X-A: a\r\n folded'], ['a 17 KB value', `X-Big: ${'a'.repeat(17 * 1024)}`],
    ['150 fields', Array.from({ length: 150 }, (_, i) => `X-H${i}: v`).join('\r\n')], ['a 10 KB name', `${'N'.repeat(10_000)}: v`],
    ['non-token name', 'X(A): v'], ['Transfer-Encoding gzip', 'Transfer-Encoding: gzip'], ['Transfer-Encoding chunked twice', 'Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked'],
    ['Content-Length -1', 'Content-Length: -1'], ['Content-Length 1e3', 'Content-Length: 1e3'], ['Content-Length 0x10', 'Content-Length: 0x10'],
    ['Content-Length 99999999999999999999', 'Content-Length: 99999999999999999999'], ['Content-Length twice, different', 'Content-Length: 1\r\nContent-Length: 2'],
    ['Content-Length twice, the same', 'Content-Length: 0\r\nContent-Length: 0'], ['Content-Length and Transfer-Encoding', 'Content-Length: 0\r\nTransfer-Encoding: chunked'],
    ['Content-Length list', 'Content-Length: 0, 0']
  ] as const) add(`header: ${label}`, `GET /nope HTTP/1.1\r\n${H}${header}\r\n\r\n`, /17 KB|150 fields/.test(label) ? { expect: [431] } : {})
  // bodies that are cut short or lie about their length
  const json = (len: number | string, body: string, extra = ''): string => `POST /pins HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: ${len}\r\n${extra}\r\n${body}`
  add('JSON body longer than Content-Length (the rest is garbage)', json(5, '{"cid":"x"}'))
  add('JSON Content-Length over the limit, no body', json(1_000_000, ''), { end: true })
  add('upload Content-Length over the limit, no body', `POST /upload HTTP/1.1\r\n${H}Content-Type: multipart/form-data; boundary=x\r\nContent-Length: ${104_857_600 + 64 * 1024 + 1}\r\n\r\n`, { expect: [413] })
  add('chunked JSON with a bad chunk size', `POST /pins HTTP/1.1\r\n${H}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`)
  add('chunked JSON with a chunk size of 2^64', `POST /pins HTTP/1.1\r\n${H}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n{}\r\n0\r\n\r\n`)
  add('chunked JSON, chunk data overruns its size', `POST /pins HTTP/1.1\r\n${H}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{}\r\n0\r\n\r\n`)
  add('multipart (unpaid) longer than its Content-Length', `POST /upload HTTP/1.1\r\n${H}X-Upload-Size: 10\r\nContent-Type: multipart/form-data; boundary=x\r\nContent-Length: 4\r\n\r\n--x--\r\nGARBAGE\r\n\r\n`)
  add('multipart (unpaid) chunked garbage', `POST /upload HTTP/1.1\r\n${H}X-Upload-Size: 10\r\nContent-Type: multipart/form-data; boundary=x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n--x--\r\nnope\r\n`)
  const paidHead = (extra: string): string => `POST /upload HTTP/1.1\r\n${H}X-Upload-Size: ${FRESH_SIZE}\r\nContent-Type: multipart/form-data; boundary=xyz\r\nPayment-Signature: ${freshPayments[2]!}\r\n${extra}\r\n`
  const filePart = '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\nhello'
  add('paid multipart, Content-Length larger than what is sent, then EOF', paidHead('Content-Length: 900\r\n') + filePart, { end: true })
  add('paid multipart, chunked garbage after a good chunk', paidHead('Transfer-Encoding: chunked\r\n') + `${filePart.length.toString(16)}\r\n${filePart}\r\nzz\r\nabc\r\n0\r\n\r\n`)
  add('paid multipart, chunk longer than announced, then EOF', paidHead('Transfer-Encoding: chunked\r\n') + `${(filePart.length + 50).toString(16)}\r\n${filePart}\r\n0\r\n\r\n`, { end: true })
  add('truncated request head, then EOF', `GET /health HTTP/1.1\r\n${H}X-A: `, { end: true })
  add('Expect: 100-continue on a bad body', json(2, '{}', 'Expect: 100-continue\r\n'))
  return out
}

// ---- the suite ----------------------------------------------------------------------------

describe('bad input: every malformed request is a 4xx with the spec error body', () => {
  const expectClean = (category: string): void => {
    const problems = client.report(category)
    expect(problems, problems.slice(0, 40).join('\n')).toEqual([])
    expect(client.report('health')).toEqual([])
  }

  it('bad CIDs of every kind on GET/HEAD /ipfs/{cid}, GET /pins?cid= and POST /pins', async () => {
    await client.runAll(cidCases())
    expectClean('bad CIDs')
    expectClean('warm-up')
  })

  it('path traversal and encoding tricks in /ipfs/ paths and gateway parameters', async () => {
    await client.runAll(traversalCases())
    expectClean('traversal & encoding')
  })

  it('invalid JSON, wrong types, huge numbers and wrong media types on POST /pins, /pins/{id}, /auth/challenge, /auth/token', async () => {
    await client.runAll(jsonCases())
    expectClean('invalid JSON & wrong types')
  })

  it('bad X-Pin-Duration-Months, X-Upload-Size and X-Pin-Size values', async () => {
    await client.runAll(headerCases())
    expectClean('bad size/duration headers')
  })

  it('multipart: no/two/misnamed file parts, foreign fields, truncated framing — unpaid, paid (never settled) and with a replayed payment', async () => {
    const { unpaid, paid, replayed } = multipartCases()
    await client.runAll(unpaid)
    await Promise.all(paid.map(async lane => { await client.runAll(lane, { concurrency: 1 }) }))
    await client.runAll(replayed, { concurrency: 4 })
    expectClean('multipart')
  })

  it('tokens: none, malformed, alg none, HS256 with the public key, tampered claims, foreign keys; another owner gets 404', async () => {
    await client.runAll(tokenCases())
    expectClean('tokens')
  })

  it('payments: garbage headers, payloads off the terms, tampered signed payments, replays on other content', async () => {
    await client.runAll(paymentCases(), { concurrency: 8 })
    await client.runAll(acceptedOnlyCases(), { concurrency: 1 })
    expectClean('payments')
  })

  it('unknown and unsupported methods on every route', async () => {
    await client.runAll(methodCases())
    expectClean('unknown methods')
  })

  it('owner API filters out of range', async () => {
    await client.runAll(queryCases())
    expectClean('owner API filters')
  })

  it('raw HTTP: broken request lines and header bytes, duplicated and lying lengths, oversized heads, cut bodies, garbage', async () => {
    const { host, port } = targetOf(pind.url)
    await client.runAll(rawCases(`${host}:${port}`), { concurrency: 16 })
    expectClean('raw HTTP')
  })

  it('the process stayed up, its RSS stayed flat, and nothing was written to the ledger', async () => {
    const h = await fetch(`${pind.url}/health`)
    expect(h.status).toBe(200)
    expect(pind.proc.exitCode).toBeNull()
    expect(pind.proc.signalCode).toBeNull()
    const rssAfter = rssKiB(pind.pid)
    const total = [...client.counts.values()].reduce((a, b) => a + b, 0)
    process.stdout.write(`\nbad-input: RSS ${(rssBefore / 1024).toFixed(1)} MiB after warm-up, ${(rssAfter / 1024).toFixed(1)} MiB after ${total} requests\n`)
    expect(rssAfter - rssBefore).toBeLessThan(80 * 1024)
    expect(await ledgerLines()).toEqual(ledgerBefore)
    // and no block was kept: refused uploads leave nothing in the blockstore or in staging
    expect(diskBlocks(join(pind.dataDir, 'blocks'))).toBe(blocksBefore)
    expect(countFiles(join(pind.dataDir, 'staging'))).toBe(0)
    expect(client.violations.map(v => `[${v.category}] ${v.label}: ${v.problem}`)).toEqual([])
    expect(total).toBeGreaterThan(3000)
  })
})

// ---- real bugs, fixed: each `it` asserts the correct behaviour (and failed on the code before its fix) ----

describe('bugs the bad-input suite found (fixed; kept as regression tests)', () => {
  it('BUG: a multipart body that ends inside the file part crashes the whole process (uncaught "error" on busboy\'s FileStream) — with a fresh payment, or with any settled payment replayed (no wallet needed)', async () => {
    const { args, env } = chainArgs(chain)
    const opts = { args: [...args, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0'], env }
    let victim = await startPind(opts)
    const problems: string[] = []
    const head = '--xyz\r\nContent-Disposition: form-data; name="file"; filename="a"\r\n\r\n'
    try {
      // a settled payment on this instance, to replay
      const challenge = await uploadChallenge(victim.url, 64)
      const settled = await signChallenge(chain, chain.payers[2]!.privateKey, challenge)
      const ok = await fetch(`${victim.url}/upload`, { method: 'POST', body: uploadForm(randomBytes(64)), headers: { 'x-upload-size': '64', 'payment-signature': settled } })
      expect(ok.status).toBe(201)
      const vectors: Array<[string, () => Promise<RawCase | HttpCase>]> = [
        ['replayed settled payment (public on chain), body ends in the file part', async () => ({ category: 'bug', label: '', method: 'POST', path: '/upload', headers: { 'x-upload-size': '64', 'content-type': 'multipart/form-data; boundary=xyz', 'payment-signature': settled }, body: `${head}hello wor`, expect: [400, 402] })],
        ['fresh payment, body ends in the file part', async () => ({ category: 'bug', label: '', method: 'POST', path: '/upload', headers: { 'x-upload-size': '1000', 'content-type': 'multipart/form-data; boundary=xyz', 'payment-signature': await signChallenge(chain, chain.payers[2]!.privateKey, await uploadChallenge(victim.url, 1000)) }, body: `${head}hello wor`, expect: [400] })],
        ['fresh payment, closing boundary misspelt', async () => ({ category: 'bug', label: '', method: 'POST', path: '/upload', headers: { 'x-upload-size': '1000', 'content-type': 'multipart/form-data; boundary=xyz', 'payment-signature': await signChallenge(chain, chain.payers[2]!.privateKey, await uploadChallenge(victim.url, 1000)) }, body: `${head}hello\r\n--xzy--\r\n`, expect: [400] })],
        ['fresh payment, chunked body that ends (0-chunk) inside the file part', async () => {
          const payment = await signChallenge(chain, chain.payers[2]!.privateKey, await uploadChallenge(victim.url, 1000))
          const { host, port } = targetOf(victim.url)
          const part = `${head}hello`
          return { category: 'bug', label: '', raw: `POST /upload HTTP/1.1\r\nHost: ${host}:${port}\r\nX-Upload-Size: 1000\r\nContent-Type: multipart/form-data; boundary=xyz\r\nPayment-Signature: ${payment}\r\nTransfer-Encoding: chunked\r\n\r\n${part.length.toString(16)}\r\n${part}\r\n0\r\n\r\n`, expect: [400] }
        }]
      ]
      for (const [label, make] of vectors) {
        const c = await make()
        const vc = new BadInputClient(targetOf(victim.url), 5000)
        const answer = 'raw' in c ? await vc.sendRaw(c) : await vc.send(c)
        vc.close()
        const problem = problemWith(c, answer)
        await new Promise(resolve => setTimeout(resolve, 300))
        const alive = victim.proc.exitCode == null && victim.proc.signalCode == null
        if (problem != null || !alive) problems.push(`${label}: ${problem ?? 'answered'}${alive ? '' : `; the process DIED (exit ${String(victim.proc.exitCode)}): ${/Unhandled 'error' event[\s\S]{0,200}/.exec(victim.stderr())?.[0] ?? victim.stderr().slice(-300)}`}`)
        if (!alive) victim = await startPind({ ...opts, dataDir: victim.dataDir }) // same ledger: the settled payment stays known
      }
    } finally {
      await victim.stop()
    }
    expect(problems, problems.join('\n\n')).toEqual([])
  })

  it('BUG: a paid upload whose client goes away while its payment is being verified hangs for ever, and every later request with that payment waits for it (no answer)', async () => {
    // the verifier answers only once the first client has gone: on a loaded machine a verification
    // (RPC calls to the chain) can outlast a client's patience; here it is made to, every time
    let verifying: () => void = () => {}
    const seen = new Promise<void>(resolve => { verifying = resolve })
    let release: () => void = () => {}
    const held = new Promise<void>(resolve => { release = resolve })
    let first = true
    const standIn = await startFacilitatorStandIn(chain, 0, {
      beforeVerify: async () => {
        if (!first) return
        first = false
        verifying()
        await held
      }
    })
    const victim = await startPind({ args: ['--facilitator-url', standIn.url, '--asset', chain.usdc, '--pay-to', chain.payTo, '--rate-limit-unpaid', '0', '--rate-limit-reads', '0'] })
    try {
      const payment = await signChallenge(chain, chain.payers[2]!.privateKey, await uploadChallenge(victim.url, FRESH_SIZE))
      const { host, port } = targetOf(victim.url)
      // the whole request (an empty form) is sent; the client leaves while the payment is verified
      const socket = connect(port, host)
      socket.on('error', () => {})
      await new Promise<void>(resolve => socket.once('connect', resolve))
      socket.write(`POST /upload HTTP/1.1\r\nHost: ${host}:${port}\r\nX-Upload-Size: ${FRESH_SIZE}\r\nContent-Type: multipart/form-data; boundary=x\r\nPayment-Signature: ${payment}\r\nContent-Length: 7\r\n\r\n--x--\r\n`)
      await seen
      socket.destroy()
      await new Promise(resolve => setTimeout(resolve, 200)) // the server sees the connection close
      release()
      // the same payment again, as the payer's retry would: the empty form is a 400, at once
      const c: HttpCase = { category: 'bug', label: 'POST /upload (empty form) with the payment of a request whose client left', method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': 'multipart/form-data; boundary=x', 'payment-signature': payment }, body: '--x--\r\n', expect: [400] }
      const vc = new BadInputClient(targetOf(victim.url), 10_000)
      const t0 = performance.now()
      const answer = await vc.send(c)
      vc.close()
      const ms = performance.now() - t0
      expect(problemWith(c, answer), `after ${ms.toFixed(0)} ms: ${answer.body.toString().slice(0, 400)}`).toBeUndefined()
    } finally {
      release()
      await victim.stop()
      await standIn.close()
    }
  })

  it('BUG: a payment payload that matches the terms but has no "payload" (or null) is a 500, not a 402', async () => {
    const problems: string[] = []
    for (const [label, v] of [['no payload', { x402Version: 2, accepted: terms }], ['payload null', { x402Version: 2, accepted: terms, payload: null }]] as const) {
      const header = Buffer.from(JSON.stringify(v)).toString('base64')
      for (const c of [
        { category: 'bug', label: `POST /upload, ${label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': 'multipart/form-data; boundary=x', 'payment-signature': header }, body: '--x--\r\n', expect: [402] },
        jsonCase('bug', `POST /pins, ${label}`, '/pins', JSON.stringify({ cid: A.cid }), { 'payment-signature': header }, [402])
      ]) {
        const problem = problemWith(c, await client.send(c))
        if (problem != null) problems.push(`${c.label}: ${problem}`)
      }
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('BUG: an EIP-3009 authorization with missing or non-numeric value/validAfter/validBefore is a 503 "retry shortly" (the verifier throws), not a 402', async () => {
    const problems: string[] = []
    const from = '0x' + '11'.repeat(20)
    const payloads: Array<[string, unknown]> = [
      ['from and nonce only', { authorization: { from, nonce: '0x01' } }],
      ['value "abc"', { signature: '0x' + '00'.repeat(65), authorization: { from, to: terms.payTo, value: 'abc', validAfter: '0', validBefore: '99999999999', nonce: '0x' + '00'.repeat(32) } }],
      ['value "1e400"', { signature: '0x' + '00'.repeat(65), authorization: { from, to: terms.payTo, value: '1e400', validAfter: '0', validBefore: '99999999999', nonce: '0x' + '00'.repeat(32) } }],
      ['validBefore missing', { signature: '0x' + '00'.repeat(65), authorization: { from, to: terms.payTo, value: terms.amount, validAfter: '0', nonce: '0x' + '00'.repeat(32) } }]
    ]
    for (const [label, payload] of payloads) {
      const header = encodePaymentSignatureHeader({ x402Version: 2, accepted: terms, payload } as any)
      for (const c of [
        { category: 'bug', label: `POST /upload, ${label}`, method: 'POST', path: '/upload', headers: { 'x-upload-size': String(FRESH_SIZE), 'content-type': 'multipart/form-data; boundary=x', 'payment-signature': header }, body: '--x--\r\n', expect: [402] },
        jsonCase('bug', `POST /pins, ${label}`, '/pins', JSON.stringify({ cid: A.cid }), { 'payment-signature': header }, [402])
      ]) {
        const problem = problemWith(c, await client.send(c))
        if (problem != null) problems.push(`${c.label}: ${problem}`)
      }
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('BUG: requests node:http answers by itself bypass the error contract: no Host (400, empty body), two Host fields (accepted), Expect: foo (417, empty body), CONNECT (connection dropped, no answer)', async () => {
    const { host, port } = targetOf(pind.url)
    const H = `Host: ${host}:${port}\r\n`
    const cases: RawCase[] = [
      { category: 'bug', label: 'HTTP/1.1 without Host', raw: 'GET /health HTTP/1.1\r\n\r\n', expect: [400] },
      { category: 'bug', label: 'two Host fields (RFC 9112 §3.2: 400)', raw: `GET /health HTTP/1.1\r\n${H}Host: evil.example\r\n\r\n`, expect: [400] },
      { category: 'bug', label: 'Expect: foo', raw: `POST /pins HTTP/1.1\r\n${H}Expect: foo\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}` },
      { category: 'bug', label: 'CONNECT', raw: `CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n` }
    ]
    const problems: string[] = []
    for (const c of cases) {
      const problem = problemWith(c, await rawExchange(targetOf(pind.url), c.raw, { timeoutMs: 5000 }))
      if (problem != null) problems.push(`${c.label}: ${problem}`)
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('BUG: a JSON body cut short (client sends less than Content-Length, or an unfinished chunked body, then EOF) is logged as an "internal error" (readJson does not map the client abort)', async () => {
    const { host, port } = targetOf(pind.url)
    const H = `Host: ${host}:${port}\r\n`
    const before = (pind.stderr().match(/"msg":"internal error"/g) ?? []).length
    for (const raw of [
      `POST /pins HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"cid":`,
      `POST /auth/challenge HTTP/1.1\r\n${H}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"address":`,
      `POST /pins HTTP/1.1\r\n${H}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{"cid`
    ]) {
      const a = await rawExchange(targetOf(pind.url), raw, { halfClose: true, timeoutMs: 5000 })
      expect(a.status).toBe(400) // what the client sees is right…
    }
    await new Promise(resolve => setTimeout(resolve, 300))
    const lines = (pind.stderr().match(/.*"msg":"internal error".*/g) ?? []).slice(before)
    expect(lines, lines.join('\n')).toEqual([]) // …but the server logs each as an internal error
  })

  it('BUG: OPTIONS (without a CORS preflight) answers 405 with an Allow header that lists OPTIONS', async () => {
    const problems: string[] = []
    for (const path of ['/pins', '/upload', '/health', `/ipfs/${A.cid}`, '/auth/token']) {
      const a = await client.send({ method: 'OPTIONS', path })
      if (a.status === 405 && /\bOPTIONS\b/.test(String(a.headers.allow))) problems.push(`OPTIONS ${path}: 405 with Allow: ${String(a.headers.allow)}`)
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('BUG: GET /pins?before= accepts dates that do not exist (2026-02-31), rolling them over instead of a 400', async () => {
    const problems: string[] = []
    for (const q of ['before=2026-02-31T00:00:00Z', 'after=2026-04-31T00:00:00Z', 'before=2026-02-30T12:00:00.000Z']) {
      const c: HttpCase = { category: 'bug', label: q, path: `/pins?${q}`, headers: { authorization: bearer(A.token) }, expect: [400] }
      const problem = problemWith(c, await client.send(c))
      if (problem != null) problems.push(`GET /pins?${q}: ${problem}`)
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('BUG: a requestid longer than ~4 KB is a 500 (the LMDB key does not fit: "RangeError: String does not fit in target buffer"), not a 404', async () => {
    const problems: string[] = []
    const rid = 'a'.repeat(5000)
    const h = { authorization: bearer(A.token) }
    for (const c of [
      { category: 'bug', label: 'GET', path: `/pins/${rid}`, headers: h, expect: [404] },
      { category: 'bug', label: 'DELETE', method: 'DELETE', path: `/pins/${rid}`, headers: h, expect: [404] },
      { category: 'bug', label: 'renew', method: 'POST', path: `/pins/${rid}/renew`, headers: h, expect: [404] },
      jsonCase('bug', 'replace', `/pins/${rid}`, JSON.stringify({ cid: A.cid }), h, [404])
    ] satisfies HttpCase[]) {
      const problem = problemWith(c, await client.send(c))
      if (problem != null) problems.push(`${c.label} /pins/{5000 × "a"}: ${problem}`)
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  it('BUG (low): a real token with "==" appended still authenticates (non-canonical base64url accepted: tokens are malleable)', async () => {
    const a = await client.send({ path: '/pins', headers: { authorization: `${bearer(A.token)}==` } })
    expect(a.status).toBe(401)
  })

  it('BUG: after a 413 for a chunked JSON body over the limit, the kept-alive connection is stuck: the next request on it gets no answer, then a reset ~6 s later', async () => {
    // one socket, so the second request reuses the connection of the first
    const one = new BadInputClient(targetOf(pind.url), 15_000, 1)
    try {
      const first = await one.sendOnceForTest({ method: 'POST', path: '/pins', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' }, body: '['.repeat(200_000) })
      expect(first.status).toBe(413)
      const t0 = performance.now()
      const next = await one.sendOnceForTest({ path: '/health' })
      const ms = performance.now() - t0
      expect(`${next.status} ${next.error ?? ''} after ${ms.toFixed(0)} ms`).toMatch(/^200 /)
      expect(ms).toBeLessThan(2000)
    } finally {
      one.close()
    }
  })

  it('BUG: a meta filter on the key "__proto__" is silently dropped: GET /pins?meta[__proto__]=x lists pins that have no such meta', async () => {
    const problems: string[] = []
    for (const q of ['meta[__proto__]=x', `meta=${encodeURIComponent('{"__proto__":"x"}')}`]) {
      const a = await client.send({ path: `/pins?${q}`, headers: { authorization: bearer(A.token) } })
      const count = a.status === 200 ? (JSON.parse(a.body.toString()) as { count: number }).count : undefined
      if (!(a.status === 400 || count === 0)) problems.push(`GET /pins?${q}: ${a.status}, count ${String(count)} (A's pin has meta {})`)
    }
    expect(problems, problems.join('\n')).toEqual([])
  })
})
