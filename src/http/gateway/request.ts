/**
 * Parsing a gateway request: the content path, the response format (from
 * `?format=` or `Accept`, `format` winning) and the CAR/trustless parameters.
 * Everything malformed is a 400 here; well-formed but unsupported is a 406.
 */
import type { CID } from 'multiformats/cid'
import { z } from 'zod/v4'
import { InvalidInputError, NotAcceptableError } from '../../kernel/errors.js'
import { decodeCanonicalCid } from '../../ipfs/cid-text.js'
import type { DagScope, EntityBytes } from '../../ipfs/content-car.js'

/** deserialized (UnixFS files/dirs, typed blocks) or one of the verifiable/typed block formats */
export type ResponseFormat = 'deserialized' | 'raw' | 'car' | 'dag-json' | 'dag-cbor' | 'json' | 'cbor'

export const FORMAT_MEDIA_TYPES: Record<Exclude<ResponseFormat, 'deserialized'>, string> = {
  raw: 'application/vnd.ipld.raw',
  car: 'application/vnd.ipld.car',
  'dag-json': 'application/vnd.ipld.dag-json',
  'dag-cbor': 'application/vnd.ipld.dag-cbor',
  json: 'application/json',
  cbor: 'application/cbor'
}

const ENTITY_BYTES = /^(-?\d{1,19}):(-?\d{1,19}|\*)$/

/**
 * The gateway's query parameters: the request is checked against these
 * (which formats, scopes and CAR variants there are; what entity-bytes
 * looks like), and the OpenAPI document derives its parameters from them
 * (src/http/openapi.ts). What is malformed is a 400, what is well-formed
 * but not supported a 406 (parseGatewayRequest says which).
 */
export const GatewayQuery = z.object({
  format: z.enum(['raw', 'car', 'dag-json', 'dag-cbor', 'json', 'cbor']).meta({ description: 'Response format; wins over Accept. `tar` answers 406, `ipns-record` 400' }),
  'dag-scope': z.enum(['block', 'entity', 'all']).default('all').meta({ description: 'format=car: the terminal block only, the entity (a file, a directory, or the block), or the whole DAG' }),
  'entity-bytes': z.string().regex(ENTITY_BYTES).meta({ description: 'format=car: a byte range `from:to` of a UnixFS file (negative counts from the end, `to` may be `*`); implies dag-scope=entity' }),
  'car-version': z.enum(['1']).meta({ description: 'format=car: CAR version (also the Accept parameter `version`)' }),
  'car-order': z.enum(['dfs', 'unk']).meta({ description: 'format=car: block order; dfs is always produced, which satisfies unk (also the Accept parameter `order`)' }),
  'car-dups': z.enum(['y', 'n']).default('n').meta({ description: 'format=car: repeat duplicate blocks (also the Accept parameter `dups`)' }),
  filename: z.string().meta({ description: 'The file name in Content-Disposition' }),
  download: z.boolean().meta({ description: 'true: Content-Disposition attachment' })
})

/** is `value` one of the values a gateway query parameter takes? */
const takes = (name: keyof typeof GatewayQuery.shape, value: string): boolean => GatewayQuery.shape[name].safeParse(value).success

export interface CarParams {
  version: 1
  /** what the client asked for; we always produce dfs, which satisfies both */
  order: 'dfs' | 'unk'
  dups: boolean
  scope: DagScope
  /** `entity-bytes` as given (raw text kept for the ETag) */
  entityBytes?: EntityBytes
  entityBytesText?: string
}

export interface GatewayRequest {
  root: CID
  /** URL-decoded path segments after the CID */
  segments: string[]
  trailingSlash: boolean
  format: ResponseFormat
  /** the format came from Accept and not from ?format= (send Content-Location) */
  formatFromAccept: boolean
  /** ?format= is present and Accept asked for another well-known format */
  formatDisagrees: boolean
  car: CarParams
  /** car params that came from the Accept header (echoed in Content-Location) */
  carParamsFromAccept: Partial<Record<'car-version' | 'car-order' | 'car-dups', string>>
  filename?: string
  download: boolean
}

export function parseCid (text: string): CID {
  if (text === '') throw new InvalidInputError('the path must be /ipfs/{cid}[/{path}]')
  try {
    return decodeCanonicalCid(text)
  } catch {
    throw new InvalidInputError(`not a valid CID: ${truncate(text)} (a CID as its multibase encodes it: one case, no padding)`)
  }
}

export function truncate (s: string, max = 100): string {
  return s.length > max ? `${s.slice(0, max)}…` : s
}

/** Splits `/ipfs/{cid}/a/b/` into the CID text and decoded segments. */
export function splitContentPath (pathname: string): { cidText: string, segments: string[], trailingSlash: boolean } {
  const rest = pathname.replace(/^\/ipfs\/?/, '')
  const [cidText = '', ...raw] = rest.split('/')
  const segments: string[] = []
  for (const part of raw) {
    if (part === '') continue
    let name: string
    try {
      name = decodeURIComponent(part)
    } catch {
      throw new InvalidInputError(`malformed percent-encoding in path segment: ${truncate(part)}`)
    }
    if (name === '.' || name === '..' || name.includes('/') || name.includes('\0')) {
      throw new InvalidInputError(`invalid path segment: ${truncate(part)}`)
    }
    segments.push(name)
  }
  return { cidText, segments, trailingSlash: pathname.endsWith('/') && raw.length > 0 }
}

interface MediaRange { type: string, params: Record<string, string>, q: number, index: number }

/** Parses an Accept header into media ranges sorted by q (stable), q=0 dropped. */
export function parseAccept (header: string | undefined): MediaRange[] {
  if (header == null || header.trim() === '') return []
  const out: MediaRange[] = []
  header.split(',').forEach((part, index) => {
    const [type = '', ...rawParams] = part.split(';').map(s => s.trim())
    if (type === '') return
    const params: Record<string, string> = {}
    let q = 1
    for (const p of rawParams) {
      const eq = p.indexOf('=')
      if (eq < 0) continue
      const k = p.slice(0, eq).trim().toLowerCase()
      const v = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1')
      if (k === 'q') {
        const n = Number(v)
        q = Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 1
      } else {
        params[k] = v
      }
    }
    if (q > 0) out.push({ type: type.toLowerCase(), params, q, index })
  })
  return out.sort((a, b) => b.q - a.q || a.index - b.index)
}

interface Negotiated {
  format: ResponseFormat
  carParams?: Record<string, string>
}

/**
 * The format asked for by Accept: the highest-q media range that names a
 * gateway response type decides; anything else (text/html, *\/*, image/…)
 * means a deserialized response. CAR ranges with parameters we cannot honour
 * are skipped; if nothing acceptable is left, 406.
 */
export function negotiateAccept (header: string | undefined): Negotiated {
  let rejected: string | undefined
  for (const range of parseAccept(header)) {
    switch (range.type) {
      case 'application/vnd.ipld.raw':
        return { format: 'raw' }
      case 'application/vnd.ipld.car': {
        const bad = carVariantProblem(range.params.version, range.params.order, range.params.dups)
        if (bad != null) { rejected = bad; continue }
        return { format: 'car', carParams: range.params }
      }
      case 'application/vnd.ipld.dag-json':
        return { format: 'dag-json' }
      case 'application/vnd.ipld.dag-cbor':
        return { format: 'dag-cbor' }
      case 'application/x-tar':
        rejected = 'TAR responses are not supported'
        continue
      case 'application/vnd.ipfs.ipns-record':
        throw new InvalidInputError('IPNS records are only served for /ipns/ names, and this gateway serves /ipfs/ only')
      default:
        return { format: 'deserialized' }
    }
  }
  if (rejected != null) throw notAcceptable(rejected)
  return { format: 'deserialized' }
}

function carVariantProblem (version: string | undefined, order: string | undefined, dups: string | undefined): string | undefined {
  if (version != null && !takes('car-version', version)) return `CAR version ${truncate(version, 10)} is not supported (only version=1)`
  if (order != null && !takes('car-order', order)) return `CAR order ${truncate(order, 10)} is not supported (dfs or unk)`
  if (dups != null && !takes('car-dups', dups)) return `CAR dups must be y or n, not ${truncate(dups, 10)}`
  return undefined
}

export function notAcceptable (details: string): NotAcceptableError {
  return new NotAcceptableError(`${details}. Supported: deserialized UnixFS, ?format=raw, ?format=car (version=1; order=dfs|unk; dups=y|n), and ?format=dag-json|dag-cbor|json|cbor for blocks of that codec`)
}

function parseFormatParam (value: string): ResponseFormat {
  const format = GatewayQuery.shape.format.safeParse(value)
  if (format.success) return format.data
  switch (value) {
    case 'tar':
      throw notAcceptable('TAR responses are not supported')
    case 'ipns-record':
      throw new InvalidInputError('format=ipns-record is only valid for /ipns/ names')
    default:
      throw new InvalidInputError(`unknown format: ${truncate(value, 30)}`)
  }
}

export function parseEntityBytes (text: string): EntityBytes {
  const m = ENTITY_BYTES.exec(text)
  if (m == null) throw new InvalidInputError(`entity-bytes must be from:to (integers, to may be *), not ${truncate(text, 40)}`)
  const from = BigInt(m[1] as string)
  const to = m[2] === '*' ? '*' : BigInt(m[2] as string)
  if (from >= 0n && to !== '*' && to >= 0n && to < from) {
    throw new InvalidInputError(`entity-bytes ${text}: to is before from`)
  }
  return { from, to }
}

export function parseGatewayRequest (url: URL, acceptHeader: string | undefined): GatewayRequest {
  const { cidText, segments, trailingSlash } = splitContentPath(url.pathname)
  const root = parseCid(cidText)
  const q = url.searchParams

  const formatParam = q.get('format') ?? ''
  const fromAccept = negotiateAcceptLenient(acceptHeader, formatParam !== '')
  let format: ResponseFormat
  let formatFromAccept = false
  if (formatParam !== '') {
    format = parseFormatParam(formatParam)
  } else {
    format = fromAccept.format
    formatFromAccept = format !== 'deserialized'
  }
  const formatDisagrees = formatParam !== '' && fromAccept.format !== 'deserialized' && fromAccept.format !== format

  // CAR parameters: query wins over the Accept parameters
  const acceptCar = fromAccept.format === 'car' ? (fromAccept.carParams ?? {}) : {}
  const carParamsFromAccept: GatewayRequest['carParamsFromAccept'] = {}
  const pick = (name: 'car-version' | 'car-order' | 'car-dups', acceptName: string): string | undefined => {
    const v = q.get(name)
    if (v != null && v !== '') return v
    const a = acceptCar[acceptName]
    if (a != null) carParamsFromAccept[name] = a
    return a
  }
  const version = pick('car-version', 'version')
  const order = pick('car-order', 'order')
  const dups = pick('car-dups', 'dups')
  let car: CarParams = { version: 1, order: 'dfs', dups: false, scope: 'all' }
  if (format === 'car') {
    const bad = carVariantProblem(version, order, dups)
    if (bad != null) throw notAcceptable(bad)
    car = { version: 1, order: order === 'unk' ? 'unk' : 'dfs', dups: dups === 'y', scope: 'all' }
    const scope = q.get('dag-scope')
    if (scope != null && scope !== '') {
      const valid = GatewayQuery.shape['dag-scope'].safeParse(scope)
      if (!valid.success) throw new InvalidInputError(`dag-scope must be block, entity or all, not ${truncate(scope, 20)}`)
      car.scope = valid.data
    }
    const eb = q.get('entity-bytes')
    if (eb != null && eb !== '') {
      if (scope != null && scope !== '' && scope !== 'entity') {
        throw new InvalidInputError('entity-bytes implies dag-scope=entity; it cannot be combined with dag-scope=' + scope)
      }
      car.scope = 'entity'
      car.entityBytes = parseEntityBytes(eb)
      car.entityBytesText = eb
    }
  }

  const filename = q.get('filename') ?? undefined
  const download = q.get('download') === 'true'
  return {
    root,
    segments,
    trailingSlash,
    format,
    formatFromAccept,
    formatDisagrees,
    car,
    carParamsFromAccept,
    ...(filename != null && filename !== '' ? { filename } : {}),
    download
  }
}

/** When ?format= decides, an Accept we cannot satisfy must not fail the request. */
function negotiateAcceptLenient (header: string | undefined, formatParamPresent: boolean): Negotiated {
  if (!formatParamPresent) return negotiateAccept(header)
  try {
    return negotiateAccept(header)
  } catch {
    return { format: 'deserialized' }
  }
}
