// Hand-written types for postgres.mjs.
export interface StartedPostgres { url: string, dir: string, port: number }
export function startPostgres (opts?: { dir?: string, port?: number, durable?: boolean, settings?: Record<string, string> }): Promise<StartedPostgres>
export function stopPostgres (opts: { dir: string, remove?: boolean, mode?: 'fast' | 'immediate' }): Promise<void>
