/**
 * The HTTP request counter and duration histogram, tallied in plain numbers
 * and shown in prom-client's format at scrape: prom-client hashes the label
 * set on every observation, a noticeable share of a cheap request's CPU.
 *
 *   pind_http_requests_total{method,route,status}
 *   pind_http_request_duration_seconds{method,route}   histogram
 */
import type client from 'prom-client'

interface Count { labels: { method: string, route: string, status: string }, n: number, time: Timing }
interface Timing { labels: { method: string, route: string }, counts: Float64Array, sum: number, n: number }
/** what prom-client's registry reads from a metric: its name, help, type and values */
interface Exported { name: string, help: string, type: 'counter' | 'histogram', aggregator: 'sum', get: () => Promise<{ name: string, help: string, type: string, aggregator: string, values: unknown[] }>, reset: () => void }

/** tallies kept at most; methods are the parser's known ones and routes the router's, so this is never reached in practice */
const MAX_KEYS = 1000

export class RequestTally {
  private readonly counts = new Map<string, Count>()
  private readonly timings = new Map<string, Timing>()

  constructor (private readonly bounds: readonly number[]) {}

  add (method: string, route: string, status: number, seconds: number): void {
    const key = `${method} ${route} ${status}`
    let c = this.counts.get(key)
    if (c == null) c = this.newCount(key, method, route === '' ? 'unmatched' : route, String(status))
    c.n++
    const t = c.time
    t.n++
    t.sum += seconds
    const b = this.bounds
    let i = 0
    while (i < b.length && seconds > (b[i] as number)) i++
    if (i < b.length) (t.counts[i] as number)++
  }

  private newCount (key: string, method: string, route: string, status: string): Count {
    if (this.counts.size >= MAX_KEYS) { this.counts.clear(); this.timings.clear() }
    const tkey = `${method} ${route}`
    let time = this.timings.get(tkey)
    if (time == null) {
      time = { labels: { method, route }, counts: new Float64Array(this.bounds.length), sum: 0, n: 0 }
      this.timings.set(tkey, time)
    }
    const c: Count = { labels: { method, route, status }, n: 0, time }
    this.counts.set(key, c)
    return c
  }

  /** the two metrics, for `registry.registerMetric` */
  metrics (): client.Metric[] {
    const counter: Exported = {
      name: 'pind_http_requests_total',
      help: 'HTTP requests by method, route pattern and status',
      type: 'counter',
      aggregator: 'sum',
      get: async () => ({ name: counter.name, help: counter.help, type: counter.type, aggregator: counter.aggregator, values: [...this.counts.values()].map(c => ({ labels: c.labels, value: c.n })) }),
      reset: () => { for (const c of this.counts.values()) c.n = 0 }
    }
    const name = 'pind_http_request_duration_seconds'
    const histogram: Exported = {
      name,
      help: 'HTTP request duration',
      type: 'histogram',
      aggregator: 'sum',
      get: async () => {
        const values: unknown[] = []
        for (const t of this.timings.values()) {
          let acc = 0
          this.bounds.forEach((le, i) => {
            acc += t.counts[i] as number
            values.push({ labels: { le }, sharedLabels: t.labels, value: acc, metricName: `${name}_bucket` })
          })
          values.push({ labels: { le: '+Inf' }, sharedLabels: t.labels, value: t.n, metricName: `${name}_bucket` },
            { labels: {}, sharedLabels: t.labels, value: t.sum, metricName: `${name}_sum` },
            { labels: {}, sharedLabels: t.labels, value: t.n, metricName: `${name}_count` })
        }
        return { name, help: histogram.help, type: histogram.type, aggregator: histogram.aggregator, values }
      },
      reset: () => { for (const t of this.timings.values()) { t.counts.fill(0); t.sum = 0; t.n = 0 } }
    }
    // prom-client's registry reads any object of this shape; its own metric classes are the declared type
    return [counter, histogram] as unknown as client.Metric[]
  }
}
