/// <reference types="node" />
// Types of fencelock/compat/redlock: node-redlock 5's (v5.0.0-beta.2) public surface. Read for
// `require`; redlock.d.mts re-exports it for `import`.
import { EventEmitter } from 'node:events'
import type { Redis as IORedisClient, Cluster as IORedisCluster } from 'ioredis'

type Client = IORedisClient | IORedisCluster

export type ClientExecutionResult =
  | { client: Client; vote: 'for'; value: number }
  | { client: Client; vote: 'against'; error: Error }

/** A summary of one attempt's votes. */
export type ExecutionStats = {
  readonly membershipSize: number
  readonly quorumSize: number
  readonly votesFor: Set<Client>
  readonly votesAgainst: Map<Client, Error>
}

/** The attempts of an operation, each resolving to its votes. */
export type ExecutionResult = {
  attempts: ReadonlyArray<Promise<ExecutionStats>>
}

export interface Settings {
  /** Clock drift allowance, a fraction of the duration; default 0.01 (fencelock accepts [0, 0.5)). */
  readonly driftFactor: number
  /** Attempts after the first (-1: until acquired); default 10. Each waits up to `retryDelay`, woken early by a release. */
  readonly retryCount: number
  /** Time between attempts, in ms; default 200. */
  readonly retryDelay: number
  /** Random spread of the time between tries, in ms (at most `retryDelay`); default 100. */
  readonly retryJitter: number
  /** `using()`: a duration must exceed it by at least 100 ms; default 500. */
  readonly automaticExtensionThreshold: number
}

/** A failure due to the existence of another lock for one or more of the requested resources (a vote against). */
export declare class ResourceLockedError extends Error {
  readonly message: string
  constructor(message: string)
}

/** A failure of an operation to pass with a quorum; `cause` is fencelock's error. */
export declare class ExecutionError extends Error {
  readonly message: string
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
  constructor(message: string, attempts: ReadonlyArray<Promise<ExecutionStats>>, options?: { cause?: unknown })
}

/** A held lock; `release` and `extend` perform the associated Redlock method on it. */
export declare class Lock {
  readonly redlock: Redlock
  readonly resources: string[]
  readonly value: string
  readonly attempts: ReadonlyArray<Promise<ExecutionStats>>
  expiration: number
  /** fencelock's fencing token of this acquisition; undefined for a Lock built from a value. */
  readonly fencingToken: bigint | undefined
  constructor(redlock: Redlock, resources: string[], value: string, attempts: ReadonlyArray<Promise<ExecutionStats>>, expiration: number)
  release(): Promise<ExecutionResult>
  extend(duration: number): Promise<Lock>
}

export type RedlockAbortSignal = AbortSignal & { error?: Error }

/**
 * node-redlock's Redlock over fencelock: the servers the given ioredis clients (or Clusters)
 * are configured for, locked with fencelock's connections. Extra to node-redlock: nothing;
 * custom scripts (the third argument) are refused.
 */
export default class Redlock extends EventEmitter {
  readonly clients: Set<Client>
  readonly settings: Settings
  constructor(
    clients: Iterable<Client>,
    settings?: Partial<Settings>,
    scripts?: {
      readonly acquireScript?: string | ((script: string) => string)
      readonly extendScript?: string | ((script: string) => string)
      readonly releaseScript?: string | ((script: string) => string)
    },
  )
  /** Quits every client and closes fencelock's connections. */
  quit(): Promise<void>
  acquire(resources: string[], duration: number, settings?: Partial<Settings>): Promise<Lock>
  release(lock: Lock, settings?: Partial<Settings>): Promise<ExecutionResult>
  extend(existing: Lock, duration: number, settings?: Partial<Settings>): Promise<Lock>
  using<T>(resources: string[], duration: number, settings: Partial<Settings>, routine?: (signal: RedlockAbortSignal) => Promise<T>): Promise<T>
  using<T>(resources: string[], duration: number, routine: (signal: RedlockAbortSignal) => Promise<T>): Promise<T>
}
