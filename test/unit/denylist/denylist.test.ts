/**
 * The compact denylist format (IPIP-383) as pind reads it, against the
 * spec's own example list and the behaviour its reference validator
 * (ipfs-shipyard/nopfs tester) expects: CID rules by multihash, path and
 * prefix rules, `!` exceptions (last match wins), /ipns/ rules read but never
 * matched, modern double hashes (sha2-256 and blake3), legacy Bad Bits
 * hashes, the empty block never blocked; bad lines skipped with their line
 * numbers; headers, long lines and CRLF.
 */
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { base58btc } from 'multiformats/bases/base58'
import { CID } from 'multiformats/cid'
import * as Digest from 'multiformats/hashes/digest'
import { describe, expect, it } from 'vitest'
import { CompiledList, Probe } from '../../../src/denylist/compiled.js'
import { DigestTable } from '../../../src/denylist/digest-table.js'
import { HeaderError, parseHeader } from '../../../src/denylist/header.js'
import { MAX_LINE_BYTES, readDenylistFile, type LineProblem } from '../../../src/denylist/read-file.js'
import { parseLine, parseRule, RuleError } from '../../../src/denylist/rule.js'
import { decodeCid } from '../../../src/ipfs/cid-text.js'
import { tempDir } from '../../helpers/pind.js'

/** The example of https://specs.ipfs.tech/compact-denylist-format/ (CC0), hints as written there. */
const SPEC_EXAMPLE = `version: 1
name: Example IPFSCorp blocking list
description: A collection of bad things we have found in the universe
author: abuse-ipfscorp@example.com
hints:
  hint: value
  hint2: value2
---
# Blocking by CID is codec-agnostic (blocks by multihash).
/ipfs/bafybeihvvulpp4evxj7x7armbqcyg6uezzuig6jp3lktpbovlqfkuqeuoq

# Blocking by subpath (equivalent rules)
/ipfs/Qmah2YDTfrox4watLCr3YgKyBwvjq8FJZEFdWY6WtJ3Xt2/test*
/ipfs/QmTuvSQbEDR3sarFAN9kAeXBpiBCyYYNxdxciazBba11eC/test/*

# Block some subpaths with exceptions: last-matching-rule wins (!)
/ipfs/QmUboz9UsQBDeS6Tug1U8jgoFkgYxyYood9NDyVURAY9pK/blocked*
!/ipfs/QmUboz9UsQBDeS6Tug1U8jgoFkgYxyYood9NDyVURAY9pK/blockednot
!/ipfs/QmUboz9UsQBDeS6Tug1U8jgoFkgYxyYood9NDyVURAY9pK/blocked/not
!/ipfs/QmUboz9UsQBDeS6Tug1U8jgoFkgYxyYood9NDyVURAY9pK/blocked/exceptions*

# Block DNSLink domain name
/ipns/domain.example

# Block DNSLink domain name and path
/ipns/domain2.example/path

# Block IPNS key - blocks wrapped multihash.
/ipns/k51qzi5uqu5dhmzyv3zac033i7rl9hkgczxyl81lwoukda2htteop7d3x0y1mf

# Double-hash CID block using sha2-256 hashing
//QmX9dhRcQcKUw3Ws8485T5a9dtjrSCQaUAHnG4iK9i4ceM

# Double-hash Path block using blake3 hashing
//gW813G35CnLsy7gRYYHuf63hrz71U1xoLFDVeV7actx6oX

# Legacy CID double-hash block
//d9d295bde21f422d471a90f2a37ec53049fdf3e5fa3ee2e8f20e10003da429e7

# Legacy DNSLink double-hash block
//c555c4de78827ba42527dd3dc5398db38d6c0a8c345a88e0158b2d100f317e50

# Legacy Path double-hash block
//3f8b9febd851873b3774b937cce126910699ceac56e72e64b866f8e258d09572
`

function compile (text: string): CompiledList {
  const list = new CompiledList()
  text.split('\n').forEach((line, i) => {
    const r = parseLine(line)
    if (r != null) list.add(r, i + 1)
  })
  return list
}

function body (text: string): string {
  return text.slice(text.indexOf('---\n') + 4)
}

/** denied by this list? `/ipfs/CID[/path]` checked as pind does: the CID itself, then the path */
function denied (list: CompiledList, path: string): boolean {
  const [cidText = '', ...rest] = path.replace(/^\/ipfs\//, '').split('/')
  const probe = new Probe(decodeCid(cidText))
  const sub = rest.filter(s => s !== '').join('/')
  const self = list.match(probe, '')
  if (self != null) return !self.allow
  const m = sub === '' ? undefined : list.match(probe, sub)
  return m != null && !m.allow
}

/** the path alone (the nopfs tester's IsPathBlocked, without the CID's own rules) */
function pathRule (list: CompiledList, path: string): boolean {
  const [cidText = '', ...rest] = path.replace(/^\/ipfs\//, '').split('/')
  const m = list.match(new Probe(decodeCid(cidText)), rest.filter(s => s !== '').join('/'))
  return m != null && !m.allow
}

describe('the spec example list', () => {
  const list = compile(body(SPEC_EXAMPLE))

  it('reads the header: version, name, description, author, hints', () => {
    const lines = SPEC_EXAMPLE.slice(0, SPEC_EXAMPLE.indexOf('---\n')).split('\n')
    expect(parseHeader(lines)).toEqual({
      version: 1,
      name: 'Example IPFSCorp blocking list',
      description: 'A collection of bad things we have found in the universe',
      author: 'abuse-ipfscorp@example.com',
      hints: { hint: 'value', hint2: 'value2' }
    })
  })

  it('counts its rules: 3 /ipns/ read but never matched', () => {
    expect(list.counts).toEqual({ rules: 12, ipns: 3, harmless: 0 })
  })

  it('/ipfs/CID blocks the multihash, whatever the codec or CID version', () => {
    for (const c of ['bafybeihvvulpp4evxj7x7armbqcyg6uezzuig6jp3lktpbovlqfkuqeuoq', 'bafkreihvvulpp4evxj7x7armbqcyg6uezzuig6jp3lktpbovlqfkuqeuoq', 'QmesfgDQ3q6prBy2Kg2gKbW4MAGuWiRP2DVuGA5MZSERLo']) {
      expect(denied(list, `/ipfs/${c}`), c).toBe(true)
      // the rule names the CID, not its paths; pind still refuses them, as it cannot read the root (the spec's BlockService model)
      expect(pathRule(list, `/ipfs/${c}/sub2`), c).toBe(false)
      expect(denied(list, `/ipfs/${c}/sub2`), c).toBe(true)
    }
  })

  it('prefix rules: test* and test/* alike, not the CID itself or other paths', () => {
    for (const c of ['Qmah2YDTfrox4watLCr3YgKyBwvjq8FJZEFdWY6WtJ3Xt2', 'QmTuvSQbEDR3sarFAN9kAeXBpiBCyYYNxdxciazBba11eC']) {
      for (const p of ['test', 'test2', 'test/one']) expect(denied(list, `/ipfs/${c}/${p}`), `${c}/${p}`).toBe(true)
      for (const p of ['', 'tes', 'one/test']) expect(denied(list, `/ipfs/${c}/${p}`), `${c}/${p}`).toBe(false)
    }
  })

  it('exceptions: the last matching rule wins', () => {
    const c = 'QmUboz9UsQBDeS6Tug1U8jgoFkgYxyYood9NDyVURAY9pK'
    for (const p of ['blocked', 'blocked2']) expect(denied(list, `/ipfs/${c}/${p}`), p).toBe(true)
    for (const p of ['blockednot', 'blocked/not', 'blocked/exceptions', 'blocked/exceptions2', 'blocked/exceptions/one']) expect(denied(list, `/ipfs/${c}/${p}`), p).toBe(false)
  })

  it('modern double hash of a CID: every CID of that multihash', () => {
    expect(denied(list, '/ipfs/bafybeidjwik6im54nrpfg7osdvmx7zojl5oaxqel5cmsz46iuelwf5acja')).toBe(true)
    expect(denied(list, '/ipfs/QmVTF1yEejXd9iMgoRTFDxBv7HAz9kuZcQNBzHrceuK9HR')).toBe(true)
    expect(denied(list, '/ipfs/bafkreidjwik6im54nrpfg7osdvmx7zojl5oaxqel5cmsz46iuelwf5acja')).toBe(true)
  })

  it('modern double hash of a path, with blake3: that path only, in any multibase', () => {
    for (const c of ['bafyb4ieqht3b2rssdmc7sjv2cy2gfdilxkfh7623nvndziyqnawkmo266a', 'f01701e20903cf61d46521b05f926ba1634628d0bba8a7ffb5b6d5a3ca310682ca63b5ef0']) {
      expect(denied(list, `/ipfs/${c}/path`), c).toBe(true)
      expect(denied(list, `/ipfs/${c}/path/`), c).toBe(true)
      expect(denied(list, `/ipfs/${c}`), c).toBe(false)
      expect(denied(list, `/ipfs/${c}/path2`), c).toBe(false)
    }
  })

  it('legacy (Bad Bits) double hashes: sha256 of CIDv1-base32/ and CIDv1-base32/path', () => {
    const c = 'bafybeiefwqslmf6zyyrxodaxx4vwqircuxpza5ri45ws3y5a62ypxti42e'
    expect(denied(list, `/ipfs/${c}`)).toBe(true)
    expect(denied(list, `/ipfs/${CID.parse(c).toV0().toString()}`)).toBe(true) // the same CID in v0
    expect(pathRule(list, `/ipfs/${c}/path`)).toBe(true)
    expect(pathRule(list, `/ipfs/${c}/path2`)).toBe(false)
    // legacy hashes name the CID with its codec: the raw CID of the same multihash is another thing
    expect(denied(list, `/ipfs/${CID.createV1(0x55, CID.parse(c).multihash).toString()}`)).toBe(false)
  })

  it('a CID no rule names is not denied', () => {
    expect(denied(list, '/ipfs/bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba')).toBe(false)
  })
})

describe('rules', () => {
  it('an exception undoes an earlier rule, and a later rule undoes the exception', () => {
    const c = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
    expect(denied(compile(`/ipfs/${c}\n!/ipfs/${c}`), `/ipfs/${c}`)).toBe(false)
    expect(denied(compile(`!/ipfs/${c}\n/ipfs/${c}`), `/ipfs/${c}`)).toBe(true)
    expect(denied(compile(`/ipfs/${c}/*\n!/ipfs/${c}/ok`), `/ipfs/${c}/ok`)).toBe(true) // /* covers the CID itself
  })

  it('the empty block and empty directory are never blocked', () => {
    const list = compile(['/ipfs/QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn', '/ipfs/bafkqaaa', '/ipfs/bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku', '/ipfs/QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH'].join('\n'))
    expect(list.counts).toEqual({ rules: 0, ipns: 0, harmless: 4 })
    expect(denied(list, '/ipfs/QmUNLLsPACCz1vLxQVkXqqLX5R1X345qqfHbsf67hvA3Nn')).toBe(false)
  })

  it('hints after a rule are read past; %-encoded paths are compared decoded', () => {
    const c = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
    const list = compile(`/ipfs/${c}/a%20b/c gateway_status:451 reason=x`)
    expect(denied(list, `/ipfs/${c}/a b/c`)).toBe(true)
    expect(denied(list, `/ipfs/${c}/a%20b/c`)).toBe(false)
  })

  it('64 hex digits with no 0 (base58 digits too) are a legacy hash: no supported multihash is 64 base58 digits long', () => {
    const hex = '1'.repeat(64)
    const r = parseRule(`//${hex}`)
    expect(r.kind === 'double-hash' && r.digests.map(d => [d.code, Buffer.from(d.digest).toString('hex'), d.legacy])).toEqual([[0x12, hex, true]])
    // and a 46-digit base58 multihash is a modern one
    const modern = parseRule('//QmX9dhRcQcKUw3Ws8485T5a9dtjrSCQaUAHnG4iK9i4ceM')
    expect(modern.kind === 'double-hash' && modern.digests.map(d => [d.code, d.legacy])).toEqual([[0x12, undefined]])
  })

  it('what is not a rule says why', () => {
    for (const [line, why] of [
      ['/ipfs/notacid', /not a CID/],
      ['//xyz0', /neither/],
      ['//' + base58btc.baseEncode(Digest.create(0x12, new Uint8Array(20)).bytes), /truncated/],
      ['//' + base58btc.baseEncode(Digest.create(0x9999, new Uint8Array(32)).bytes), /not supported/],
      ['/ipfs/bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba/%zz', /%-encoding/],
      ['bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba', /starts with/],
      ['/ipns/', /needs a name/]
    ] as const) {
      expect(() => parseLine(line), line).toThrow(RuleError)
      expect(() => parseLine(line), line).toThrow(why)
    }
    expect(parseLine('   # a comment')).toBeUndefined()
    expect(parseLine('')).toBeUndefined()
  })
})

describe('reading a .deny file', () => {
  const write = (text: string | Buffer): string => {
    const f = join(tempDir('pind-deny-'), 'x.deny')
    writeFileSync(f, text)
    return f
  }

  it('the spec example, with its header', async () => {
    const r = await readDenylistFile(write(SPEC_EXAMPLE))
    expect(r.header?.name).toBe('Example IPFSCorp blocking list')
    expect(r.problems).toBe(0)
    expect(r.list.counts.rules).toBe(12)
  })

  it('skips bad lines, says which, and keeps the rest', async () => {
    const good = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
    const problems: LineProblem[] = []
    const r = await readDenylistFile(write(`name: t\n---\n/ipfs/nope\n# fine\n/ipfs/${good}\nrubbish\n`), p => { problems.push(p) })
    expect(problems.map(p => p.line)).toEqual([3, 6])
    expect(problems[0]?.problem).toMatch(/not a CID/)
    expect(r.problems).toBe(2)
    expect(denied(r.list, `/ipfs/${good}`)).toBe(true)
  })

  it('without a header every line is a rule; a lone --- is an empty header; CRLF is fine', async () => {
    const c = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
    const upperHex = createHash('sha256').update(`${CID.parse(c).toString()}/`).digest('hex').toUpperCase()
    for (const text of [`/ipfs/${c}\n`, `---\n/ipfs/${c}\n`, `version: 1\r\n---\r\n/ipfs/${c}\r\n`, `/ipfs/${c}`, `//${upperHex}\r\n`]) {
      const r = await readDenylistFile(write(text))
      expect(r.problems, JSON.stringify(text)).toBe(0)
      expect(denied(r.list, `/ipfs/${c}`), JSON.stringify(text)).toBe(true)
    }
  })

  it('refuses a list of another version, or a header that is not key: value', async () => {
    await expect(readDenylistFile(write('version: 2\n---\n'))).rejects.toThrow(HeaderError)
    await expect(readDenylistFile(write('version: 1\nnot yaml at all\n---\n'))).rejects.toThrow(/not "key: value"/)
  })

  it('a line over 2 MiB is an error for that line only', async () => {
    const c = 'bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba'
    const problems: LineProblem[] = []
    const r = await readDenylistFile(write(`/ipfs/${c}/${'a'.repeat(MAX_LINE_BYTES + 10)}\n/ipfs/${c}\n`), p => { problems.push(p) })
    expect(problems).toEqual([{ line: 1, problem: expect.stringMatching(/longer than/) }])
    expect(denied(r.list, `/ipfs/${c}`)).toBe(true)
  })

  it('Bad Bits-style legacy entries, many of them', async () => {
    const cids = Array.from({ length: 2000 }, (_, i) => CID.createV1(0x70, Digest.create(0x12, createHash('sha256').update(`block ${i}`).digest())))
    const lines = cids.map(c => '//' + createHash('sha256').update(`${c.toString()}/`).digest('hex'))
    const r = await readDenylistFile(write(`version: 1\nname: Badbits\nhints:\n  gateway_status: 410\n  double_hash_fn: sha256\n  double_hash_enc: hex\n---\n${lines.join('\n')}\n`))
    expect(r.list.counts.rules).toBe(2000)
    for (const c of cids) expect(denied(r.list, `/ipfs/${c}`)).toBe(true)
    expect(denied(r.list, '/ipfs/bafkreie7q3iidccmpvszul7kudcvvuavuo7u6gzlbobczuk5nqk3b4akba')).toBe(false)
  })
})

describe('DigestTable', () => {
  it('sets, replaces and finds digests through every growth, and finds nothing else', () => {
    const t = new DigestTable(32)
    const d = (i: number): Buffer => createHash('sha256').update(String(i)).digest()
    for (let i = 0; i < 50_000; i++) t.set(d(i), i)
    t.set(d(7), 70)
    expect(t.size).toBe(50_000)
    const wrong: number[] = []
    for (let i = 0; i < 50_000; i++) if (t.get(d(i)) !== (i === 7 ? 70 : i)) wrong.push(i)
    for (let i = 50_000; i < 51_000; i++) if (t.get(d(i)) !== undefined) wrong.push(i)
    expect(wrong).toEqual([])
    expect(t.get(Buffer.alloc(5))).toBeUndefined()
    // trimmed to its entries, it still finds them all and can grow again
    const before = t.byteSize
    t.trim()
    expect(t.byteSize).toBeLessThan(before)
    t.set(d(-1), 1)
    for (let i = -1; i < 50_000; i++) if (t.get(d(i)) !== (i === 7 ? 70 : i === -1 ? 1 : i)) wrong.push(i)
    expect(wrong).toEqual([])
  })
})
