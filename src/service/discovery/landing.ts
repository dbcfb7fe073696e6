/**
 * GET /: the landing page for people. What the service is, what it costs,
 * how an agent pays, and links to the machine-readable documents. One
 * self-contained HTML page (no script, no external resource), built once at
 * start from the settings.
 */
import { formatUsdc } from '../../payment/pricing.js'
import { discoveryLinks, MCP_PATH, MCP_TOOLS, networksInWords, PAID_OPERATIONS, type DiscoveryInput } from './paid-operations.js'

const esc = (s: string): string => s.replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`)

export function landingPage (d: DiscoveryInput & { version: string }): string {
  const url = d.publicUrl
  const p = d.prices
  const links = discoveryLinks(url)
  const rows = PAID_OPERATIONS.map(op => `<tr><td><code>${op.method} ${esc(op.path)}</code></td><td>${esc(op.summary)}</td><td>${esc(op.priceModel)}</td></tr>`).join('\n')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pind: paid IPFS pinning</title>
<link rel="alternate" type="text/markdown" href="/llms.txt" title="llms.txt">
<link rel="service-desc" type="application/json" href="/openapi.json" title="OpenAPI">
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#1d2330}
h1{font-size:2rem;margin-bottom:.2rem}h2{margin-top:2rem;border-bottom:1px solid #dde;padding-bottom:.2rem}
code{background:#f2f3f7;padding:.1rem .3rem;border-radius:3px;font-size:.9em}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #eee;vertical-align:top}
.price{font-size:1.25rem}nav a{margin-right:1rem}small{color:#667}
</style>
</head>
<body>
<header>
<h1>pind</h1>
<p>Paid IPFS pinning for people and agents: pin a CID or upload a file, pay per request in USDC, read it back from the gateway. No account, no API key.</p>
<nav><a href="/openapi.json">OpenAPI</a><a href="/.well-known/agent-card.json">Agent card</a><a href="/llms.txt">llms.txt</a><a href="/.well-known/x402">x402 resources</a></nav>
</header>
<main>
<h2>Price</h2>
<p class="price"><strong>${formatUsdc(p.rate)} USDC</strong> per GB per month, at least <strong>${formatUsdc(p.minimum)} USDC</strong> per request.</p>
<p>Pins last 1 to ${p.maxMonths} months (<code>X-Pin-Duration-Months</code>). Uploads up to ${d.uploadMaxBytes} bytes. Paid in USDC: ${networksInWords(d, x => `<code>${esc(x)}</code>`)}.</p>
<table>
<thead><tr><th>Paid call</th><th>What it does</th><th>Priced on</th></tr></thead>
<tbody>
${rows}
</tbody>
</table>
<p>Reading content (<code>GET /ipfs/{cid}</code>), listing and deleting your pins are free.</p>
<h2>How an agent pays</h2>
<ol>
<li>Send the request without payment. The answer is <code>402</code>: the exact price in the <code>PAYMENT-REQUIRED</code> header (x402 v2) and in words in the JSON body.</li>
<li>Sign an EIP-3009 USDC authorization of that amount (the payer needs no gas) and send the same request again with <code>PAYMENT-SIGNATURE</code>. Any x402 v2 client, such as <code>@x402/fetch</code>, does both steps.</li>
<li>The payment settles once the work is done. The answer carries the settlement in <code>PAYMENT-RESPONSE</code> and a wallet token (<code>x-wallet-auth-token</code>) to manage your pins.</li>
</ol>
<h2>MCP</h2>
<p>AI agents can use the same calls as MCP tools at <code>${esc(url)}${MCP_PATH}</code> (streamable HTTP): ${MCP_TOOLS.map(t => `<code>${t.name}</code>`).join(', ')}. Paid tools are paid per call with x402 (the payment travels in <code>_meta["x402/payment"]</code>).</p>
<h2>For machines</h2>
<ul>
<li><a href="/openapi.json">OpenAPI 3.1</a>: every operation; paid ones are marked with <code>x-payment-info</code>.</li>
<li><a href="/.well-known/agent-card.json">A2A agent card</a>: skills and the x402 extension.</li>
<li><a href="/llms.txt">llms.txt</a>: the API for language models, in order.</li>
<li><a href="/.well-known/x402">/.well-known/x402</a>: the paid resources; each 402 carries the x402 <code>bazaar</code> discovery extension.</li>
</ul>
</main>
<footer><p><small>pind ${esc(d.version)} · <a href="${esc(links.landing)}">${esc(url)}</a></small></p></footer>
</body>
</html>
`
}
