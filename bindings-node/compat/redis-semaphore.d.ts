// Types of fencelock/compat/redis-semaphore: redis-semaphore 5.8's public surface, read for
// `require`; redis-semaphore.d.mts re-exports them for `import`.
import type { Redis as IORedisClient, Cluster as IORedisCluster } from 'ioredis'

/** An ioredis client (a `Redis` or a `Cluster`): the drop-in reads where it points, and sends nothing through it. */
export type RedisClient = IORedisClient | IORedisCluster

/** Called with the lock object as `this` when a held lock is lost (default: throws, an unhandled rejection). */
export interface LockLostCallback {
  (this: Lock, err: LostLockError): void
}

export interface TimeoutOptions {
  /** The lease's time to live in ms; default 10000. */
  lockTimeout?: number
  /** How long `acquire` waits in line, in ms; default 10000. */
  acquireTimeout?: number
  /** With `retryInterval`: caps the wait at (attempts - 1) x retryInterval ms; default Infinity. */
  acquireAttemptsLimit?: number
  /** Only bounds the wait with `acquireAttemptsLimit`: waiters are woken by the release, not polling; default 10. */
  retryInterval?: number
  /** Whether to extend the lease while held: > 0 extends it (fencelock's rhythm, every third of `lockTimeout`), 0 does not; default 0.8 x lockTimeout. */
  refreshInterval?: number
}

export interface LockOptions extends TimeoutOptions {
  /** @deprecated Use `identifier` + `acquiredExternally: true` instead. */
  externallyAcquiredIdentifier?: string
  /** @deprecated Provide a custom `identifier` instead. */
  identifierSuffix?: string
  /** The lease's token (the value of a mutex's key); default `crypto.randomUUID()`. Unique per holder. */
  identifier?: string
  /** With `identifier`: `acquire` adopts the hold another process took with it (and takes it anew if it ended). */
  acquiredExternally?: true
  onLockLost?: LockLostCallback
}

export declare const defaultTimeoutOptions: {
  readonly lockTimeout: number
  readonly acquireTimeout: number
  readonly acquireAttemptsLimit: number
  readonly retryInterval: number
}

/** The lock was lost while held (it expired, or another holder took it). */
export declare class LostLockError extends Error {}
/** `acquire` did not get the lock within `acquireTimeout`. */
export declare class TimeoutError extends Error {}

/** What every lock object shares: redis-semaphore's `Lock`. */
export declare abstract class Lock {
  /** The token this object holds its lease with. */
  get identifier(): string
  /** Whether this object holds its lease (false once released or lost). */
  get isAcquired(): boolean
  /** Waits in line up to `acquireTimeout`; rejects with `TimeoutError`, or the signal's reason when aborted. */
  acquire(abortSignal?: AbortSignal): Promise<void>
  /** As `acquire`, resolving to false instead of rejecting when the time runs out. */
  tryAcquire(abortSignal?: AbortSignal): Promise<boolean>
  /** Stops extending the lease; it ends at `lockTimeout` unless released first. */
  stopRefresh(): void
  /** Releases the lease; a lease already gone is not an error. */
  release(): Promise<void>
}

/** A lock on `mutex:<key>`; a process still on redis-semaphore's Mutex excludes it and the other way round. */
export declare class Mutex extends Lock {
  constructor(client: RedisClient, key: string, options?: LockOptions)
}
/** At most `limit` holders of `semaphore:<key>` at once, served first come, first served. */
export declare class Semaphore extends Lock {
  constructor(client: RedisClient, key: string, limit: number, options?: LockOptions)
}
/** `permits` of a semaphore's `limit` at once, all or none, first come, first served. */
export declare class MultiSemaphore extends Lock {
  constructor(client: RedisClient, key: string, limit: number, permits: number, options?: LockOptions)
}
/** A Mutex held on a majority of independent servers (Redlock). */
export declare class RedlockMutex extends Lock {
  constructor(clients: RedisClient[], key: string, options?: LockOptions)
}
/** A Semaphore over independent servers (Redlock). */
export declare class RedlockSemaphore extends Lock {
  constructor(clients: RedisClient[], key: string, limit: number, options?: LockOptions)
}
/** A MultiSemaphore over independent servers (Redlock). */
export declare class RedlockMultiSemaphore extends Lock {
  constructor(clients: RedisClient[], key: string, limit: number, permits: number, options?: LockOptions)
}
