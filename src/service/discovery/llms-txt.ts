/**
 * GET /llms.txt (the llmstxt.org convention): the API for language models,
 * in Markdown — what to call, in what order, what it costs, how to pay.
 * Built once at start from the settings; the OpenAPI document stays the
 * reference.
 */
import { describeFormula, formatUsdc, priceFor } from '../../payment/pricing.js'
import { discoveryLinks, networksInWords, PAID_OPERATIONS, type DiscoveryInput } from './paid-operations.js'

const EXAMPLE_CID = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'

export function llmsTxt (d: DiscoveryInput): string {
  const url = d.publicUrl
  const p = d.prices
  const links = discoveryLinks(url)
  const mib = (n: number): string => `${(n / 1048576).toFixed(n % 1048576 === 0 ? 0 : 1)} MiB`
  const example = (bytes: number, months: number): string => {
    try { return `${formatUsdc(priceFor(BigInt(bytes), months, p))} USDC` } catch { return 'over the maximum price' }
  }
  return [
    '# pind',
    '',
    '> Paid IPFS pinning for agents: pin a CID or upload a file, pay per request in USDC over x402 v2 (no account, no API key, no gas), read the content back from the gateway. Pins follow the IPFS Pinning Service API v1.0.0.',
    '',
    `Service: ${url}`,
    `Payment: x402 v2, scheme \`exact\`, ${networksInWords(d)}.`,
    ...(d.accepts != null && d.accepts.length > 1 ? ['Several networks are accepted: the 402 lists each in `accepts` (the same `amount` in each asset\'s atomic units); sign for one of them and send that entry back as `accepted`. A payment settles on the chain it was signed for.'] : []),
    '',
    '## Prices',
    '',
    `- Formula: ${describeFormula(p)}.`,
    `- Rate: ${formatUsdc(p.rate)} USDC per GB per month; minimum ${formatUsdc(p.minimum)} USDC per paid request; largest price ${formatUsdc(p.maximum)} USDC.`,
    `- Examples: 1 MiB for 1 month: ${example(1048576, 1)}; 100 MiB for 12 months: ${example(104857600, Math.min(12, p.maxMonths))}.`,
    `- Duration: header \`X-Pin-Duration-Months\`, 1 to ${p.maxMonths}, default 1.`,
    '- The exact price of a request is in its 402 answer: ask first, it costs nothing.',
    '',
    '## How to pay (x402 v2)',
    '',
    '1. Send the request without payment. The answer is `402` with:',
    '   - header `PAYMENT-REQUIRED`: base64 of a JSON `PaymentRequired` (`accepts[0]` holds `amount` in atomic units, `asset`, `payTo`, `network`, `maxTimeoutSeconds`, and `extra` {name, version}: the token\'s EIP-712 domain); its `extensions.bazaar` describes the request (method, body schema, headers, output example);',
    '   - a JSON body: `{"error":{"reason":"PAYMENT_REQUIRED","details"}}` plus the terms in words (`price.usdc`, `size`, `months`, `formula`, `howToPay`).',
    '2. Sign an EIP-3009 `transferWithAuthorization` of exactly `amount` of `asset` to `payTo`, valid for `maxTimeoutSeconds`.',
    '3. Send the same request again with header `PAYMENT-SIGNATURE`: base64 of the JSON `PaymentPayload` (x402Version 2, `accepted` = the requirements you chose, `payload` = {authorization, signature}).',
    '4. The payment is verified before the work and settled after it. The success carries `PAYMENT-RESPONSE` (the settlement transaction) and `x-wallet-auth-token` (a JWT for your pins).',
    '',
    'Any x402 v2 client does steps 1-3, e.g. `wrapFetchWithPayment(fetch, client)` from `@x402/fetch` with `ExactEvmScheme` from `@x402/evm`.',
    'A payment pays for one request: sent again for the same request it answers the first result without charging twice; for another request it is refused (402).',
    'If settlement fails, nothing is kept: a 402 names the payer\'s problem, a 503 with `Retry-After` means the service\'s side failed (the payment was not used).',
    '',
    '## Paid calls',
    '',
    ...PAID_OPERATIONS.map(op => `- \`${op.method} ${url}${op.path}\`: ${op.summary}. Priced on ${op.priceModel}. Headers: ${op.headers.map(h => `\`${h}\``).join(', ')}.`),
    '',
    '## In order',
    '',
    '### Pin a CID',
    '',
    '```',
    `POST ${url}/pins`,
    'Content-Type: application/json',
    'X-Pin-Duration-Months: 6',
    '',
    `{"cid":"${EXAMPLE_CID}","name":"site","origins":["/ip4/<host>/tcp/4001/p2p/<peer id>"]}`,
    '```',
    '',
    '- `origins` (optional): multiaddrs that have the content; the node dials them first.',
    '- The price is set by the size the root block declares; send `X-Pin-Size` (bytes of the whole DAG) if the root may not be reachable within a few seconds, else the quote is the minimum and the pin may hold only what that covers (`info.max_bytes`).',
    '- Answer: `202` and a PinStatus (`requestid`, `status` queued, pinning, pinned or failed, `info.pinned_until`). Poll `GET /pins/{requestid}` with the wallet token until `pinned`.',
    '',
    '### Upload a file',
    '',
    '```',
    `POST ${url}/upload`,
    'Content-Type: multipart/form-data; boundary=...',
    'X-Pin-Duration-Months: 6',
    'X-Upload-Size: <file bytes>',
    '',
    '(one part named "file")',
    '```',
    '',
    `- At most ${d.uploadMaxBytes} bytes (${mib(d.uploadMaxBytes)}). The CID is CIDv1 with the IPIP-499 profile unixfs-v1-2025, so it can be computed before paying.`,
    '- A CAR: part type `application/vnd.ipld.car` or `?format=car`. A directory: `?format=directory`, one `file` part per file, each filename its path.',
    '- Answer: `201` with `cid`, `gateway_url`, `pinned_until`, `price` and a wallet token.',
    '- Large files: buy a ticket first (`POST /upload/tickets` with `X-Upload-Size`, settled at once), then `POST /upload` with `X-Upload-Ticket: <ticket>` and `Authorization: Bearer <wallet token>`: the body streams with no settlement in its way.',
    '',
    '### Manage your pins (free, with the wallet token)',
    '',
    '- `Authorization: Bearer <x-wallet-auth-token>`; no token yet or expired: Sign-In with Ethereum, `POST /auth/challenge` then `POST /auth/token` (free).',
    '- `GET /pins` (filters: cid, name, match, status, before, after, limit, meta), `GET /pins/{requestid}`, `DELETE /pins/{requestid}` (free).',
    '- `POST /pins/{requestid}` replaces a pin with another CID (paid, as a new pin); `POST /pins/{requestid}/renew` adds `X-Pin-Duration-Months` months (paid, on the pin\'s size).',
    '- Another owner\'s requestid answers 404.',
    '',
    '### Read the content (free)',
    '',
    `- \`GET ${url}/ipfs/{cid}[/path]\`: the file or a directory listing; Range and ETag work.`,
    '- `?format=raw` (a block) or `?format=car` (the DAG) for verifiable responses.',
    ...(d.siteOrigin != null ? [`- A directory as a website: \`${d.siteOrigin}\` (the CIDv1 in base32; an origin of its own: HTML runs there, \`index.html\` and \`_redirects\` are followed). An upload's answer gives it as \`site_url\`.`] : []),
    '',
    '## Errors',
    '',
    'Every error has the shape `{"error":{"reason":"<REASON>","details":"<what to fix>"}}`. `400` a bad request (the details name the field), `401` no or bad token, `402` payment needed or refused, `404` not found (or not yours), `413` too large, `429`/`503` retry after `Retry-After` seconds.',
    '',
    '## Links',
    '',
    `- [OpenAPI 3.1](${links.openapi}): every operation; paid ones carry \`x-payment-info\``,
    `- [Agent card](${links.agentCard}): A2A AgentCard with the x402 extension`,
    `- [Paid resources](${links.x402}): the /.well-known/x402 list`,
    `- [Home](${links.landing}): for people`,
    ''
  ].join('\n')
}
