/**
 * The generated HTML index of a UnixFS directory without index.html. Our own
 * markup: every name, CID and path is HTML-escaped, links are percent-encoded,
 * no script, and the response carries a strict CSP (DIR_LISTING_CSP).
 * Sizes are the links' Tsize (DAG size): no child block is read, so a big
 * directory lists fast. Rows are streamed as the directory is enumerated.
 */
import type { CID } from 'multiformats/cid'
import type { DirectoryItem } from '../../ipfs/content.js'

/** bump when the markup changes: it is part of the listing's ETag */
export const DIR_LISTING_VERSION = 'pind-dirindex-1'

export const DIR_LISTING_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export function escapeHtml (s: string): string {
  return s.replace(/[&<>"']/g, c => ESCAPES[c] as string)
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

export function formatBytes (n: bigint): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']
  let v = Number(n)
  let u = 0
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++ }
  return u === 0 ? `${v} B` : `${v.toFixed(1)} ${units[u] as string}`
}

export interface ListingContext {
  /** the directory's content path as shown, e.g. /ipfs/bafy…/docs/ (decoded) */
  displayPath: string
  cid: CID
  /** show a link to the parent directory */
  hasParent: boolean
  /** where a CID links to; default its path on this gateway, /ipfs/{cid} */
  cidHref?: (cid: CID) => string
}

/** Streams the listing page, one chunk per row. */
export async function * renderListing (ctx: ListingContext, items: AsyncIterable<DirectoryItem>): AsyncGenerator<string, void, undefined> {
  const title = escapeHtml(ctx.displayPath)
  yield '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">' +
    `<title>${title}</title>` +
    '<style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}' +
    'td,th{padding:.25em .75em;text-align:left;border-bottom:1px solid #eee}td.s{text-align:right;white-space:nowrap}' +
    'code{font-size:.85em;color:#555}</style></head><body>\n' +
    `<h1>Index of ${title}</h1>\n<p>CID <code>${escapeHtml(ctx.cid.toString())}</code> · ` +
    `<a href="?format=car">CAR</a> · <a href="?format=raw">raw block</a></p>\n` +
    '<table><thead><tr><th>Name</th><th>CID</th><th>DAG size</th></tr></thead><tbody>\n'
  if (ctx.hasParent) yield '<tr><td><a href="../">..</a></td><td></td><td></td></tr>\n'
  for await (const item of items) {
    const cid = item.cid.toString()
    const href = ctx.cidHref?.(item.cid) ?? `/ipfs/${cid}`
    yield `<tr><td><a href="./${escapeHtml(encodeURIComponent(item.name))}">${escapeHtml(item.name)}</a></td>` +
      `<td><a href="${escapeHtml(href)}"><code>${escapeHtml(cid)}</code></a></td>` +
      `<td class="s" title="${item.size} bytes">${escapeHtml(formatBytes(item.size))}</td></tr>\n`
  }
  yield '</tbody></table></body></html>\n'
}
