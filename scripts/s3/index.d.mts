// Hand-written types for index.mjs.
import type { S3Client } from '@aws-sdk/client-s3'

export interface S3ServerInfo {
  endpoint: string
  accessKeyId: string
  secretAccessKey: string
  region: string
  forcePathStyle: true
  /** the cluster's folder (its pids, logs, config) */
  dir: string
  monPort: number
  rgwPort: number
  pids: Record<string, number>
  startSeconds: number
}

export interface S3Server extends S3ServerInfo {
  client: S3Client
  /** PIND_S3_ACCESS_KEY_ID and PIND_S3_SECRET_ACCESS_KEY */
  env(): Record<string, string>
  createBucket(name: string): Promise<string>
  keys(bucket: string, prefix?: string): Promise<string[]>
  deleteBucket(name: string): Promise<void>
  stopGateway(): Promise<void>
  startGateway(): Promise<void>
  stop(): Promise<void>
}

export declare const SCRIPT: string
export declare function runScript(args: string[], opts?: { env?: Record<string, string>, quiet?: boolean }): Promise<string>
export declare function s3Client(s3: Pick<S3ServerInfo, 'endpoint' | 'region' | 'accessKeyId' | 'secretAccessKey'>): S3Client
export interface Gateway {
  endpoint: string
  /** kill it: its endpoint refuses connections */
  stop(): Promise<void>
  /** start it again on the same port */
  start(): Promise<void>
}

export declare function extraGateway(dir: string, name: string): Promise<Gateway>
export declare function startS3(opts?: { dir?: string, storeSize?: number, quiet?: boolean }): Promise<S3Server>
