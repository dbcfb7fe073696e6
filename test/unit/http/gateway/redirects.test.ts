/**
 * The Web `_redirects` file (src/http/gateway/redirects.ts): the spec's test
 * fixtures (its appendix: the examples site and the query-parameter vector),
 * the files it must refuse, and the matching rules of the reference
 * (ipfs/go-ipfs-redirects-file with ucarion/urlpath, as boxo evaluates them).
 */
import { describe, expect, it } from 'vitest'
import { MAX_REDIRECTS_BYTES, REDIRECTS_CACHE_BYTES, RedirectsCache, RedirectsFileError, matchRedirect, parseRedirects, type RedirectRule } from '../../../../src/http/gateway/redirects.js'

/** the spec's "examples" site (QmYBhLYDwVFvxos9h8CGU2ibaY66QNgv8hpfewxaQrPiZj/_redirects) */
const EXAMPLES = `/redirect-one /one.html
/301-redirect-one /one.html 301
/302-redirect-two /two.html 302
/200-index /index.html 200
/posts/:year/:month/:day/:title /articles/:year/:month/:day/:title 301
/splat/* /redirected-splat/:splat 301
/not-found/* /404.html 404
/gone/* /410.html 410
/unavail/* /451.html 451
/* /index.html 200
`

/** the spec's query-parameter vector (bafybeiee3ltldvmfgsxiqazbatrkbvkl34eanbourajwnavhupb64nnbxa/_redirects) */
const QUERY_VECTOR = `# redirect to URL with some static query parameters
/source1/* /target-file?static-query1=static-val1&static-query2=static-val2 301

# redirect to URL where path segments are converted to query parameters
/source2/:code/:name /target-file?code=:code&name=:name 301

# catch-all redirect (test should make request with query parameters, and confirm response preserved them in returned Location header)
/source3/* https://example.net/target3/:splat 301
`

const NO_QUERY = new URLSearchParams()
const DYNAMIC = new URLSearchParams('dynamic-query1=dynamic-value1&dynamic-query2=dynamic-value2')

/** the status and Location for `path` (undefined when no rule matches) */
function answer (file: string | RedirectRule[], path: string, query = NO_QUERY): [number, string] | undefined {
  const rules = typeof file === 'string' ? parseRedirects(file) : file
  const m = matchRedirect(rules, path, query)
  return m == null ? undefined : [m.status, m.location]
}

/** the error parsing `file` throws */
function parseError (file: string): RedirectsFileError {
  try {
    parseRedirects(file)
  } catch (err) {
    expect(err).toBeInstanceOf(RedirectsFileError)
    return err as RedirectsFileError
  }
  throw new Error(`parsed: ${JSON.stringify(file)}`)
}

describe('parseRedirects', () => {
  it('reads every line of the spec\'s examples file, 301 by default', () => {
    const rules = parseRedirects(EXAMPLES)
    expect(rules.map(r => [r.from, r.to, r.status, r.line])).toEqual([
      ['/redirect-one', '/one.html', 301, 1],
      ['/301-redirect-one', '/one.html', 301, 2],
      ['/302-redirect-two', '/two.html', 302, 3],
      ['/200-index', '/index.html', 200, 4],
      ['/posts/:year/:month/:day/:title', '/articles/:year/:month/:day/:title', 301, 5],
      ['/splat/*', '/redirected-splat/:splat', 301, 6],
      ['/not-found/*', '/404.html', 404, 7],
      ['/gone/*', '/410.html', 410, 8],
      ['/unavail/*', '/451.html', 451, 9],
      ['/*', '/index.html', 200, 10]
    ])
  })

  it('skips comments and blank lines, ignores surrounding whitespace, counts lines as written', () => {
    const rules = parseRedirects('# a comment\n\n   \n\t# indented comment /x /y 302\n  \t/a \t /b   302\t \n#/c /d\n/e /f')
    expect(rules.map(r => [r.from, r.to, r.status, r.line])).toEqual([['/a', '/b', 302, 5], ['/e', '/f', 301, 7]])
  })

  it('takes \\r\\n as \\n (the spec\'s "newlines" fixture), with or without a last line end', () => {
    const crlf = '/redirect-one /one.html\r\n/200-index /index.html 200\r\n'
    expect(parseRedirects(crlf)).toEqual(parseRedirects(crlf.replaceAll('\r\n', '\n')))
    expect(parseRedirects(crlf).map(r => [r.from, r.to, r.status])).toEqual([['/redirect-one', '/one.html', 301], ['/200-index', '/index.html', 200]])
    expect(answer(crlf, '/redirect-one')).toEqual([301, '/one.html'])
    expect(parseRedirects('/a /b 302')).toHaveLength(1)
  })

  it('takes every supported status (the "good-codes" fixture)', () => {
    const codes = [200, 301, 302, 303, 307, 308, 404, 410, 451]
    const rules = parseRedirects(codes.map(c => `/a${c} /b${c} ${c}`).join('\n'))
    expect(rules.map(r => r.status)).toEqual(codes)
    expect(answer(rules, '/a301')).toEqual([301, '/b301'])
    expect(answer(rules, '/a410')).toEqual([410, '/b410'])
  })

  it('refuses any other status, and forced redirects ("301!"), naming the line', () => {
    for (const code of ['42', '300', '304', '305', '400', '500', '201', '0301', '+301', '3o1', 'permanent']) {
      const err = parseError(`/ok /fine\n/home / ${code}\n`)
      expect(err.line, code).toBe(2)
      expect(err.message, code).toContain(`status ${code} is not supported`)
    }
    const forced = parseError('/a /b\n\n/home / 301!')
    expect(forced.line).toBe(3)
    expect(forced.message).toMatch(/^line 3: .*forced redirects/)
  })

  it('refuses a file over 64 KiB, in UTF-8 bytes, and takes one of exactly 64 KiB', () => {
    expect(MAX_REDIRECTS_BYTES).toBe(65536)
    const line = '/from /to 301\n' // 14 bytes
    const exact = line.repeat(Math.floor(MAX_REDIRECTS_BYTES / line.length)) + '#'.repeat(MAX_REDIRECTS_BYTES % line.length)
    expect(Buffer.byteLength(exact)).toBe(MAX_REDIRECTS_BYTES)
    expect(parseRedirects(exact)).toHaveLength(Math.floor(MAX_REDIRECTS_BYTES / line.length))
    const over = parseError(exact + '\n')
    expect(over.message).toContain('redirects file size cannot exceed 65536 bytes')
    expect(over.line).toBeUndefined()
    // 2-byte characters: fewer code units than the limit, more bytes
    const wide = '#' + 'ą'.repeat(MAX_REDIRECTS_BYTES / 2)
    expect(wide.length).toBeLessThan(MAX_REDIRECTS_BYTES)
    expect(parseError(wide).message).toContain('cannot exceed')
    expect(parseRedirects(wide.slice(0, -1))).toEqual([])
  })

  it('refuses a line without a \'to\'', () => {
    const err = parseError('/a /b\n/lonely\n')
    expect(err.line).toBe(2)
    expect(err.message).toContain('missing \'to\'')
    expect(parseError('/lonely   \t').line).toBe(1)
  })

  it('refuses too many fields (a trailing comment too, as the reference)', () => {
    expect(parseError('/a /b 301 extra').message).toMatch(/^line 1: 4 fields/)
    expect(parseError('/a /b\n/c /d 302 # why').line).toBe(2)
  })

  it('refuses a placeholder used twice in \'from\', and allows it twice in \'to\'', () => {
    const err = parseError('/ok /x\n/posts/:id/:id /x')
    expect(err.line).toBe(2)
    expect(err.message).toContain('placeholder \':id\' appears more than once')
    expect(parseError('/:splat/* /x').message).toContain('\':splat\' appears more than once')
    expect(answer('/p/:id /q/:id/:id.html', '/p/7')).toEqual([301, '/q/7/7.html'])
  })

  it('refuses a placeholder without a name', () => {
    expect(parseError('/a/: /b').message).toContain('needs a name')
  })

  it('takes \'*\' only as the whole last segment of \'from\'', () => {
    for (const from of ['/a*', '/*/a', '/a/*/*', '/a/**', '/*/']) {
      expect(parseError(`${from} /b`).message, from).toContain('\'*\' may only be the whole last segment')
    }
    expect(parseRedirects('/a/* /b')).toHaveLength(1)
  })

  it('requires \'from\' to be a path starting with \'/\', without query or fragment', () => {
    for (const from of ['a', 'redirect-one', 'https://example.com/a', '*']) {
      expect(parseError(`${from} /b`).message, from).toContain('\'from\' must be a path starting with \'/\'')
    }
    expect(parseError('/a?x=1 /b').message).toContain('without \'?\' or \'#\'')
    expect(parseError('/a#top /b').message).toContain('without \'?\' or \'#\'')
  })

  it('requires \'to\' to be a path starting with \'/\' or an http(s), ipfs or ipns URL', () => {
    for (const to of ['one.html', 'ftp://example.com/x', 'javascript:alert(1)', 'data:text/html,x', 'https:example.com', 'https://', 'http://[::1']) {
      expect(parseError(`/a ${to}`).message, to).toContain('\'to\' must be a path starting with \'/\' or an http, https, ipfs or ipns URL')
    }
    expect(parseError('/a //evil.example/x').message).toContain('names another host')
    expect(parseRedirects('/a https://example.com/x\n/b http://example.com:8080/\n/c ipns://en.wikipedia-on-ipfs.org/\n/d ipfs://bafkqaaa 302')).toHaveLength(4)
  })

  it('refuses a URL \'to\' for a 200 or a 4xx: nothing is proxied', () => {
    for (const status of [200, 404, 410, 451]) {
      expect(parseError(`/a https://example.com/x ${status}`).message).toContain(`a ${status} rule serves a path of this site`)
    }
  })

  it('refuses malformed escapes, control characters and a placeholder in a URL\'s host', () => {
    expect(parseError('/a%zz /b').message).toContain('\'%\' not followed by two hex digits')
    expect(parseError('/a /b%4').message).toContain('\'%\' not followed by two hex digits')
    expect(parseError('/a\u0000 /b').message).toContain('control character')
    expect(parseError('/a /b\u007f').message).toContain('control character')
    expect(parseError('/:sub/* https://:sub.example.com/:splat').message).toContain('\'to\' must be')
  })
})

describe('matchRedirect', () => {
  const rules = parseRedirects(EXAMPLES)

  it('answers the spec\'s examples site as the gateway conformance tests expect', () => {
    expect(answer(rules, '/redirect-one')).toEqual([301, '/one.html'])
    expect(answer(rules, '/301-redirect-one')).toEqual([301, '/one.html'])
    expect(answer(rules, '/302-redirect-two')).toEqual([302, '/two.html'])
    expect(answer(rules, '/200-index')).toEqual([200, '/index.html'])
    expect(answer(rules, '/posts/2022/01/01/hello-world')).toEqual([301, '/articles/2022/01/01/hello-world'])
    expect(answer(rules, '/splat/one.html')).toEqual([301, '/redirected-splat/one.html'])
    expect(answer(rules, '/splat/a/b/c.html')).toEqual([301, '/redirected-splat/a/b/c.html'])
    expect(answer(rules, '/not-found/has-no-redirects-entry')).toEqual([404, '/404.html'])
    expect(answer(rules, '/gone/has-no-redirects-entry')).toEqual([410, '/410.html'])
    expect(answer(rules, '/unavail/has-no-redirects-entry')).toEqual([451, '/451.html'])
    expect(answer(rules, '/catch-all')).toEqual([200, '/index.html'])
  })

  it('uses the first matching rule, and gives it back', () => {
    const m = matchRedirect(rules, '/302-redirect-two', NO_QUERY)
    expect(m?.rule).toBe(rules[2])
    // /not-found/x is matched by line 7 before the catch-all of line 10
    expect(matchRedirect(rules, '/not-found/x', NO_QUERY)?.rule.line).toBe(7)
    const swapped = parseRedirects('/* /index.html 200\n/redirect-one /one.html')
    expect(answer(swapped, '/redirect-one')).toEqual([200, '/index.html'])
  })

  it('matches a placeholder to exactly one segment', () => {
    expect(answer(rules, '/posts/2022/01/01')).toEqual([200, '/index.html']) // too few: the catch-all
    expect(answer(rules, '/posts/2022/01/01/hello/world')).toEqual([200, '/index.html']) // too many
    expect(answer('/p/:a/:b /q/:b/:a', '/p/x/y')).toEqual([301, '/q/y/x'])
    expect(answer('/p/:a /q/:a', '/p/x/y')).toBeUndefined()
    expect(answer('/p/:a /q/:a', '/p')).toBeUndefined()
  })

  it('wants at least the slash after the prefix for a splat: /a/* does not match /a', () => {
    expect(answer('/splat/* /s/:splat', '/splat')).toBeUndefined()
    expect(answer('/splat/* /s/:splat', '/splat/')).toBeUndefined() // one trailing slash dropped, as boxo
    expect(answer('/splat/* /s/:splat', '/splat/x')).toEqual([301, '/s/x'])
    expect(answer(rules, '/splat')).toEqual([200, '/index.html'])
  })

  it('drops one trailing slash from the request and from \'from\'', () => {
    expect(answer(rules, '/redirect-one/')).toEqual([301, '/one.html'])
    expect(answer('/dir/ /x', '/dir')).toEqual([301, '/x'])
    expect(answer('/dir/ /x', '/dir/')).toEqual([301, '/x'])
    expect(answer('/dir /x', '/dir//')).toBeUndefined()
    expect(answer('/splat/* /s/:splat', '/splat/a/b/')).toEqual([301, '/s/a/b'])
  })

  it('is case-sensitive', () => {
    expect(answer('/Redirect-One /one.html', '/redirect-one')).toBeUndefined()
    expect(answer('/redirect-one /one.html', '/REDIRECT-ONE')).toBeUndefined()
  })

  it('compares constant segments percent-decoded, and keeps the request\'s spelling of a value', () => {
    expect(answer('/ą /ę', '/%C4%85')).toEqual([301, '/%C4%99'])
    expect(answer('/%C4%85 /x', '/%c4%85')).toEqual([301, '/x'])
    expect(answer('/a%20b /x', '/a%20b')).toEqual([301, '/x'])
    expect(answer('/a%2Fb /x', '/a/b')).toBeUndefined() // an escaped slash is not a separator
    expect(answer('/p/:v /q/:v', '/p/a%20b')).toEqual([301, '/q/a%20b'])
    expect(answer('/p/* /q/:splat', '/p/%E2%9C%93/x')).toEqual([301, '/q/%E2%9C%93/x'])
  })

  it('replaces :splat with nothing when \'from\' has no \'*\', and keeps other words as written', () => {
    expect(answer('/a /b/:splat', '/a')).toEqual([301, '/b/'])
    expect(answer('/a/:x /b/:y/:x', '/a/1')).toEqual([301, '/b/:y/1'])
    // the longest name wins, and a value is never read again for placeholders
    expect(answer('/a/:id/:idx /b/:idx-:id', '/a/1/2')).toEqual([301, '/b/2-1'])
    expect(answer('/a/:x/:y /b/:x', '/a/:y/2')).toEqual([301, '/b/:y'])
  })

  it('keeps a Location on the site: no // from values, no dot segments above the root', () => {
    expect(answer('/* /:splat', '//evil.example/x')).toEqual([301, '/evil.example/x'])
    expect(answer('/r/:a/:b /:a/:b', '/r//evil.example')).toEqual([301, '/evil.example'])
    expect(answer('/r/:a/:b /x/:a/:b 200', '/r/../..')).toEqual([200, '/'])
    expect(answer('/r/* /x/:splat 200', '/r/%2e%2E/%2E./bafkqaaa')).toEqual([200, '/bafkqaaa'])
    expect(answer('/r/:a /x/:a', '/r/a\\b')).toEqual([301, '/x/a%5Cb'])
    expect(answer('/r/:a /x/:a', '/r/a?b#c')).toEqual([301, '/x/a%3Fb%23c'])
    // a URL target keeps its host whatever the value
    expect(answer('/r/* https://example.net/:splat', '/r//evil.example')).toEqual([301, 'https://example.net//evil.example'])
  })

  it('writes non-ASCII text of \'to\' percent-encoded (a Location is ASCII)', () => {
    expect(answer('/a /zażółć?q=ł#ś', '/a')).toEqual([301, '/za%C5%BC%C3%B3%C5%82%C4%87?q=%C5%82#%C5%9B'])
  })

  it('returns undefined when nothing matches, and for a path not starting with \'/\'', () => {
    const some = parseRedirects('/a /b\n/c/* /d')
    expect(matchRedirect(some, '/x', NO_QUERY)).toBeUndefined()
    expect(matchRedirect(some, 'a', NO_QUERY)).toBeUndefined()
    expect(matchRedirect([], '/a', NO_QUERY)).toBeUndefined()
  })

  it('checks a rule built by hand', () => {
    const rule: RedirectRule = { from: '/a', to: '/b', status: 418, line: 3 }
    expect(() => matchRedirect([rule], '/a', NO_QUERY)).toThrow(RedirectsFileError)
    expect(answer([{ from: '/a', to: '/b', status: 307, line: 1 }], '/a')).toEqual([307, '/b'])
  })

  it('answers hostile input (a 3,000-segment rule, a 30,000-segment path, a line of 60,000 blanks)', () => {
    // matching is linear per rule (no regex built from the file): the suite's own timeout bounds it
    const many = parseRedirects(`/:a/${'x/'.repeat(3000)}* /y/:a/:splat\n`)
    const hit = matchRedirect(many, '/q/' + 'x/'.repeat(30000), NO_QUERY)
    expect(hit?.location).toBe(`/y/q/${'x/'.repeat(27000).slice(0, -1)}`)
    expect(matchRedirect(many, '/' + 'x/'.repeat(30000), NO_QUERY)?.location).toBe(`/y/x/${'x/'.repeat(26999).slice(0, -1)}`)
    expect(parseRedirects(`/a ${' '.repeat(60000)}/b`)).toMatchObject([{ from: '/a', to: '/b', status: 301 }])
    expect(parseRedirects('/a' + ' \t'.repeat(30000) + '/b')).toMatchObject([{ from: '/a', to: '/b' }])
  })
})

describe('query parameters (the spec\'s query-parameter vector)', () => {
  const rules = parseRedirects(QUERY_VECTOR)

  it('keeps the target\'s static query, and merges the request\'s into it (as boxo: keys sorted)', () => {
    expect(answer(rules, '/source1/source-file')).toEqual([301, '/target-file?static-query1=static-val1&static-query2=static-val2'])
    expect(answer(rules, '/source1/source-file', DYNAMIC))
      .toEqual([301, '/target-file?dynamic-query1=dynamic-value1&dynamic-query2=dynamic-value2&static-query1=static-val1&static-query2=static-val2'])
  })

  it('puts placeholders into the query', () => {
    expect(answer(rules, '/source2/codeA/nameA')).toEqual([301, '/target-file?code=codeA&name=nameA'])
    expect(answer(rules, '/source2/codeA/nameA', DYNAMIC))
      .toEqual([301, '/target-file?code=codeA&dynamic-query1=dynamic-value1&dynamic-query2=dynamic-value2&name=nameA'])
  })

  it('keeps the request\'s query for an absolute URL target, with the whole splat', () => {
    expect(answer(rules, '/source3/this/is/catch-all/splat-with', DYNAMIC))
      .toEqual([301, 'https://example.net/target3/this/is/catch-all/splat-with?dynamic-query1=dynamic-value1&dynamic-query2=dynamic-value2'])
    expect(answer(rules, '/source3/x')).toEqual([301, 'https://example.net/target3/x'])
  })

  it('lets the request\'s values win over static ones of the same name', () => {
    const query = new URLSearchParams('static-query1=mine&static-query1=again')
    expect(answer(rules, '/source1/f', query)).toEqual([301, '/target-file?static-query1=mine&static-query1=again&static-query2=static-val2'])
    expect(answer(rules, '/source2/c/n', new URLSearchParams('code=user'))).toEqual([301, '/target-file?code=user&name=n'])
  })

  it('cannot add a parameter through a placeholder\'s value', () => {
    expect(answer(rules, '/source2/a&admin=1/n')).toEqual([301, '/target-file?code=a%26admin%3D1&name=n'])
    const merged = answer(rules, '/source2/a&admin=1/n', new URLSearchParams('x=1'))
    expect(new URL(`https://h${merged?.[1] ?? ''}`).searchParams.get('code')).toBe('a&admin=1')
    expect(new URL(`https://h${merged?.[1] ?? ''}`).searchParams.has('admin')).toBe(false)
  })

  it('keeps the target\'s fragment after the merged query', () => {
    expect(answer('/a /b?s=1#top', '/a', new URLSearchParams('u=2'))).toEqual([301, '/b?s=1&u=2#top'])
    expect(answer('/a /b#top', '/a', new URLSearchParams('u=2'))).toEqual([301, '/b?u=2#top'])
  })

  it('merges only for a redirect: a rewrite or a 4xx names a path to serve', () => {
    expect(answer('/a /b?s=1 200', '/a', new URLSearchParams('u=2'))).toEqual([200, '/b?s=1'])
    expect(answer('/a /404.html 404', '/a', new URLSearchParams('u=2'))).toEqual([404, '/404.html'])
    expect(answer('/a /b 303', '/a', new URLSearchParams('u=2'))).toEqual([303, '/b?u=2'])
  })
})

describe('RedirectsCache', () => {
  const rulesOf = (text: string): () => Promise<ReturnType<typeof parseRedirects>> => async () => parseRedirects(text)

  it('keeps parsed files within its byte limit, the least recently used going first, each file counted by its size', async () => {
    const cache = new RedirectsCache(100)
    let reads = 0
    const read = (text: string) => async () => { reads++; return await rulesOf(text)() }
    await cache.rules('a', 40, read('/a /x 301'))
    await cache.rules('b', 40, read('/b /y 301'))
    expect(cache.bytes).toBe(80)
    // a used again: b is now the least recently used
    expect((await cache.rules('a', 40, read('/a /x 301')))[0]?.from).toBe('/a')
    expect(reads).toBe(2)
    await cache.rules('c', 40, read('/c /z 301'))
    expect(cache.keys()).toEqual(['a', 'c'])
    expect(cache.bytes).toBe(80)
    // a file larger than the limit is read and answered, and not kept; what was kept stays
    expect((await cache.rules('big', 1000, read('/big /w 301')))[0]?.from).toBe('/big')
    expect(cache.keys()).toEqual(['a', 'c'])
    expect(cache.bytes).toBe(80)
  })

  it('counts a file at most MAX_REDIRECTS_BYTES and keeps a file that does not parse as its error', async () => {
    const cache = new RedirectsCache(REDIRECTS_CACHE_BYTES)
    await cache.rules('huge', 10 * MAX_REDIRECTS_BYTES, rulesOf('/a /b 301'))
    expect(cache.bytes).toBe(MAX_REDIRECTS_BYTES)
    let reads = 0
    const bad = async (): Promise<RedirectsFileError> => { reads++; return new RedirectsFileError('line 1: no status') }
    await expect(cache.rules('bad', 10, bad)).rejects.toThrow('line 1: no status')
    await expect(cache.rules('bad', 10, bad)).rejects.toThrow('line 1: no status')
    expect(reads).toBe(1)
  })

  it('two requests reading the same file at once leave one entry, counted once', async () => {
    const cache = new RedirectsCache(REDIRECTS_CACHE_BYTES)
    let release: () => void = () => {}
    const gate = new Promise<void>(resolve => { release = resolve })
    const slow = async (): Promise<ReturnType<typeof parseRedirects>> => { await gate; return parseRedirects('/a /b 301') }
    const both = Promise.all([cache.rules('f', 50, slow), cache.rules('f', 50, slow)])
    release()
    await both
    expect(cache.keys()).toEqual(['f'])
    expect(cache.bytes).toBe(50)
  })
})
