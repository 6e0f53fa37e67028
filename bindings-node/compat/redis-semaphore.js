'use strict'
// fencelock/compat/redis-semaphore: redis-semaphore 5.8's API (Mutex, Semaphore,
// MultiSemaphore and their Redlock forms) over fencelock. Change `from 'redis-semaphore'` to
// `from 'fencelock/compat/redis-semaphore'` and keep the rest.
//
// Every acquisition, wait, limit, extension and release is fencelock's (its core); this module
// translates: ioredis clients into server URLs (ioredis-servers.js), redis-semaphore's options
// into acquire options, and a lost lease into `onLockLost`. The clients carry no lock traffic.
//
// Keys: a Mutex is fencelock's lock on redis-semaphore's own key, `mutex:<key>`, holding the
// identifier (`SET NX PX` both sides), so a process still on redis-semaphore and one on the
// drop-in exclude each other during a rolling migration. A semaphore is fencelock's, under
// `semaphore:<key>`: a hash where redis-semaphore keeps a sorted set, so an old process and a
// new one on the same name refuse each other with an error instead of sharing the limit
// (docs/migrating.md: stop the old processes first, or move to a new name).
// docs/migrating.md ("Node: from redis-semaphore") lists every difference.

const { randomUUID } = require('node:crypto')

const { LockError } = require('../index.js')
const { newManager, serversOf } = require('./ioredis-servers.js')

const defaultTimeoutOptions = {
  lockTimeout: 10000,
  acquireTimeout: 10000,
  acquireAttemptsLimit: Number.POSITIVE_INFINITY,
  retryInterval: 10,
}

const REFRESH_INTERVAL_COEF = 0.8

class LostLockError extends Error {}
class TimeoutError extends Error {}

function defaultOnLockLost(err) {
  throw err
}

// One LockManager per set of servers and key prefix (the clients' keyPrefix, then `mutex:` or
// `semaphore:`), shared by every lock object over them for the life of the process, as the
// clients they stand for are.
// A lock object over one client finds its manager through the client itself: reading the
// client's options and naming its servers again for every object (the way redis-semaphore's
// users make one object per acquisition) cost about a fiftieth of an uncontended cycle.
const managers = new Map()
const byClient = new WeakMap()

function managerFor(clients, prefix, what) {
  const mine = clients.length === 1 ? byClient.get(clients[0])?.get(prefix) : undefined
  if (mine !== undefined) return mine
  const servers = serversOf(clients, what)
  servers.keyPrefix += prefix
  const key = JSON.stringify([servers.urls, servers.keyPrefix, servers.tls])
  let manager = managers.get(key)
  if (manager === undefined) {
    manager = newManager(servers)
    managers.set(key, manager)
  }
  if (clients.length === 1) {
    if (!byClient.has(clients[0])) byClient.set(clients[0], new Map())
    byClient.get(clients[0]).set(prefix, manager)
  }
  return manager
}

/**
 * How long to wait, from redis-semaphore's timeouts: `acquireTimeout`, or less when
 * `acquireAttemptsLimit` would stop the retries (every `retryInterval`) before it.
 */
function waitOf({ acquireTimeout, acquireAttemptsLimit, retryInterval }) {
  if (!Number.isFinite(acquireAttemptsLimit)) return Math.max(acquireTimeout, 0)
  if (acquireAttemptsLimit < 1) return 0
  return Math.max(Math.min(acquireTimeout, (acquireAttemptsLimit - 1) * retryInterval), 0)
}

function checkKey(key) {
  if (!key) throw new Error('"key" is required')
  if (typeof key !== 'string') throw new Error('"key" must be a string')
}

function checkCount(value, what) {
  if (!value) throw new Error(`"${what}" is required`)
  if (typeof value !== 'number') throw new Error(`"${what}" must be a number`)
}

// The first 16 characters of the identifiers each manager gives its lock objects
// (identifierOf), by manager.
const idPrefixes = new WeakMap()

/**
 * A new identifier for a lock object over `manager` (`-suffix` after it, given one): a UUID v4
 * as redis-semaphore's, whose first 16 characters (52 random bits, with the version digit) are
 * the same for every object over that manager and the other 20 (70 random bits, with the
 * variant) its own. fencelock
 * wakes a waiter on a channel named by its token's first 16 characters: shared like this, the
 * manager's waiters of a name share one subscription, as fencelock's own tokens do, instead of
 * subscribing and unsubscribing for every object that waits.
 */
function identifierOf(manager, suffix) {
  let prefix = idPrefixes.get(manager)
  if (prefix === undefined) idPrefixes.set(manager, (prefix = randomUUID().slice(0, 16)))
  const uuid = prefix + randomUUID().slice(16)
  return suffix ? `${uuid}-${suffix}` : uuid
}

/** A failure that means "not acquired in time" (false), not an error to throw. */
function isTimeout(err) {
  return err instanceof LockError && err.code === 'ERR_NOT_ACQUIRED'
}

/** A release that found the lease gone: redis-semaphore's release ignores it. */
function isGone(err) {
  return err instanceof LockError && (err.code === 'ERR_LOCK_LOST' || err.code === 'ERR_LOCK_RELEASED')
}

/** The base of every lock object: redis-semaphore's `Lock` over one fencelock lease at a time. */
class Lock {
  #lease = null
  #detached = false
  #taken = null

  constructor(kind, key, take, options = defaultTimeoutOptions) {
    const {
      lockTimeout = defaultTimeoutOptions.lockTimeout,
      acquireTimeout = defaultTimeoutOptions.acquireTimeout,
      acquireAttemptsLimit = defaultTimeoutOptions.acquireAttemptsLimit,
      retryInterval = defaultTimeoutOptions.retryInterval,
      refreshInterval = Math.round(lockTimeout * REFRESH_INTERVAL_COEF),
      onLockLost = defaultOnLockLost,
      externallyAcquiredIdentifier,
      identifierSuffix,
      identifier,
      acquiredExternally,
    } = options ?? defaultTimeoutOptions
    if (identifier !== undefined && (!identifier || typeof identifier !== 'string')) {
      throw new Error('identifier must be not empty random string')
    }
    if (acquiredExternally && !identifier) {
      throw new Error('acquiredExternally=true meanless without custom identifier')
    }
    if (externallyAcquiredIdentifier && (identifier || acquiredExternally)) {
      throw new Error('Invalid usage. Use custom identifier and acquiredExternally: true')
    }
    this._kind = kind
    this._key = key
    this._identifier = identifier || externallyAcquiredIdentifier || take.newIdentifier(identifierSuffix)
    this._acquiredExternally = !!acquiredExternally || !!externallyAcquiredIdentifier
    this._acquireOptions = { lockTimeout, acquireTimeout, acquireAttemptsLimit, retryInterval, identifier: this._identifier }
    this._refreshTimeInterval = refreshInterval
    this._onLockLost = onLockLost
    this._acquired = false
    this.#taken = take
  }

  get identifier() {
    return this._identifier
  }

  get isAcquired() {
    return this._acquired
  }

  /** Stops extending the lease; it stays held until its `lockTimeout` runs out or `release()`. */
  stopRefresh() {
    if (this.#lease !== null && !this.#detached) {
      this.#detached = true
      this.#lease.detach()
    }
  }

  async acquire(abortSignal) {
    if (!(await this.tryAcquire(abortSignal))) {
      throw new TimeoutError(`Acquire ${this._kind} ${this._key} timeout`)
    }
  }

  /**
   * Acquires within the timeouts: false when they pass (redis-semaphore's `tryAcquire` waits
   * too). With `acquiredExternally`, adopts the hold of the identifier (acquiring it again if it
   * had ended).
   */
  async tryAcquire(abortSignal) {
    const o = this._acquireOptions
    const options = {
      ttl: o.lockTimeout,
      wait: waitOf(o),
      token: this._identifier,
      reentrant: this._acquiredExternally,
      autoExtend: this._refreshTimeInterval > 0,
    }
    if (abortSignal !== undefined) options.signal = abortSignal
    let lease
    try {
      lease = await this.#taken.acquire(options)
    } catch (err) {
      if (isTimeout(err)) return false
      if (err instanceof LockError && err.code === 'ABORT_ERR' && abortSignal?.aborted) throw abortSignal.reason
      throw err
    }
    this.#lease = lease
    this.#detached = false
    this._acquired = true
    this._acquiredExternally = false
    // As redis-semaphore, a loss is noticed by the refresh: without one it is not reported.
    // The lease's loss hook, not its `signal`: an AbortController and its listener per lease
    // cost about a tenth of an uncontended cycle (bench/notes.md, issue 55).
    if (options.autoExtend) lease.__onLost((cause) => this.#lost(lease, cause))
    return true
  }

  #lost(lease, cause) {
    if (this.#lease !== lease) return
    this.#lease = null
    this._acquired = false
    const err = new LostLockError(`Lost ${this._kind} for key ${this._key}`, { cause })
    // As redis-semaphore's refresh timer: what the callback throws is an unhandled rejection.
    Promise.resolve().then(() => this._onLockLost.call(this, err))
  }

  async release() {
    const lease = this.#lease
    const detached = this.#detached
    this.#lease = null
    this.#detached = false
    try {
      if (lease !== null && !detached) await lease.release()
      else if (this._acquired || this._acquiredExternally) await this.#taken.release(this._identifier)
    } catch (err) {
      if (!isGone(err)) throw err
    } finally {
      this._acquired = false
      this._acquiredExternally = false
    }
  }
}

/** How a mutex takes and gives back its lease: fencelock's lock on the name. */
function mutexOf(manager, name) {
  return {
    newIdentifier: (suffix) => identifierOf(manager, suffix),
    acquire: (options) => manager.acquire(name, options),
    release: (token) => manager.release(name, token),
  }
}

// The semaphore handles of each manager by name and limit, as managers by clients: making one
// checks its name and limit in the core, which cost about a twentieth of an uncontended cycle
// when every lock object made its own. At most HANDLES of them, forgotten all at once past that.
const handles = new WeakMap()
const HANDLES = 1024

function semaphoreHandle(manager, name, limit) {
  let mine = handles.get(manager)
  if (mine === undefined) handles.set(manager, (mine = new Map()))
  const key = `${limit}:${name}`
  let semaphore = mine.get(key)
  if (semaphore === undefined) {
    semaphore = manager.semaphore(name, limit)
    if (mine.size >= HANDLES) mine.clear()
    mine.set(key, semaphore)
  }
  return semaphore
}

/** How a semaphore takes and gives back `permits` of its limit: fencelock's semaphore. */
function semaphoreOf(manager, name, limit, permits) {
  const semaphore = semaphoreHandle(manager, name, limit)
  return {
    newIdentifier: (suffix) => identifierOf(manager, suffix),
    acquire: (options) => {
      options.count = permits
      return semaphore.acquire(options).catch((err) => Promise.reject(oldLayout(err, name)))
    },
    release: (token) => semaphore.release(token),
  }
}

/** A semaphore name still holding redis-semaphore's sorted set: say so instead of WRONGTYPE. */
function oldLayout(err, name) {
  if (!(err instanceof LockError) || err.code !== 'ERR_REDIS' || !/WRONGTYPE/.test(err.message)) return err
  return new Error(
    `semaphore:${name} holds another layout (redis-semaphore's sorted set, from a process not yet migrated): ` +
      'the drop-in cannot share a semaphore with the old library; stop the old processes first, or move to a new name (docs/migrating.md)',
    { cause: err },
  )
}

function checkClient(client) {
  if (!client) throw new Error('"client" is required')
}

function checkClients(clients) {
  if (!clients || !Array.isArray(clients)) throw new Error('"clients" array is required')
}

class Mutex extends Lock {
  constructor(client, key, options) {
    checkClient(client)
    checkKey(key)
    super('mutex', `mutex:${key}`, mutexOf(managerFor([client], 'mutex:', 'Mutex'), key), options)
  }
}

class Semaphore extends Lock {
  constructor(client, key, limit, options) {
    checkClient(client)
    checkKey(key)
    checkCount(limit, 'limit')
    super('semaphore', `semaphore:${key}`, semaphoreOf(managerFor([client], 'semaphore:', 'Semaphore'), key, limit, 1), options)
  }
}

class MultiSemaphore extends Lock {
  constructor(client, key, limit, permits, options) {
    checkClient(client)
    checkKey(key)
    checkCount(limit, 'limit')
    checkCount(permits, 'permits')
    super('multi-semaphore', `semaphore:${key}`, semaphoreOf(managerFor([client], 'semaphore:', 'MultiSemaphore'), key, limit, permits), options)
  }
}

class RedlockMutex extends Lock {
  constructor(clients, key, options = defaultTimeoutOptions) {
    checkClients(clients)
    checkKey(key)
    super('redlock-mutex', `mutex:${key}`, mutexOf(managerFor(clients, 'mutex:', 'RedlockMutex'), key), options)
  }
}

class RedlockSemaphore extends Lock {
  constructor(clients, key, limit, options) {
    checkClients(clients)
    checkKey(key)
    checkCount(limit, 'limit')
    super('redlock-semaphore', `semaphore:${key}`, semaphoreOf(managerFor(clients, 'semaphore:', 'RedlockSemaphore'), key, limit, 1), options)
  }
}

class RedlockMultiSemaphore extends Lock {
  constructor(clients, key, limit, permits, options) {
    checkClients(clients)
    checkKey(key)
    checkCount(limit, 'limit')
    checkCount(permits, 'permits')
    super('redlock-multi-semaphore', `semaphore:${key}`, semaphoreOf(managerFor(clients, 'semaphore:', 'RedlockMultiSemaphore'), key, limit, permits), options)
  }
}

module.exports = {
  Mutex,
  Semaphore,
  MultiSemaphore,
  RedlockMutex,
  RedlockSemaphore,
  RedlockMultiSemaphore,
  LostLockError,
  TimeoutError,
  defaultTimeoutOptions,
}
