import type { ServerResponse } from 'node:http'
import { errorAnswer, errorBody } from '../../http/error-catalog.js'
import type { Maintenance } from '../../service/background/maintenance.js'

/**
 * Runs a long admin task as a stream of JSON lines: progress events (at most
 * 10 a second), then {"result": …} or {"error": …}. The task's signal aborts
 * when the caller goes away (Ctrl-C); with `maintenance`, the task waits for
 * no other and is refused while one runs.
 */
export async function streamTask<P> (res: ServerResponse, name: string, maintenance: Maintenance | undefined, task: (progress: (p: P) => void, signal: AbortSignal) => Promise<unknown>): Promise<void> {
  const abort = new AbortController()
  res.on('close', () => { if (!res.writableFinished) abort.abort(new Error('the admin client went away')) })
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
  let last = 0
  const progress = (p: P): void => {
    if (Date.now() - last < 100) return
    last = Date.now()
    res.write(JSON.stringify({ progress: p }) + '\n')
  }
  try {
    const run = async (): Promise<unknown> => await task(progress, abort.signal)
    const result = maintenance != null ? await maintenance.run(name, run) : await run()
    res.end(JSON.stringify({ result }) + '\n')
  } catch (err) {
    // the operator's own channel: a fault's message is shown too
    const a = errorAnswer(err)
    res.end(JSON.stringify(errorBody(a.reason, a.fault === true ? (err as Error).message : a.details)) + '\n')
  }
}
