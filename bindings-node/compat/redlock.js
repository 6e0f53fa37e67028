'use strict'
// fencelock/compat/redlock: node-redlock 5's API (v5.0.0-beta.2) over fencelock. Change
// `from 'redlock'` to `from 'fencelock/compat/redlock'` and keep the rest.
//
// The lock itself is fencelock's (its core does every attempt, wait, quorum count, validity
// rule and extension); this module translates: ioredis clients into server URLs
// (ioredis-servers.js), node-redlock's settings into acquire options, fencelock's errors and
// per-server outcomes into node-redlock's ExecutionError, ExecutionStats and votes. The ioredis
// clients carry no lock traffic: fencelock opens its own connections to the servers they are
// configured for. docs/migrating.md ("Node: from node-redlock") lists every difference.

const { createHash } = require('node:crypto')
const { EventEmitter } = require('node:events')

const { LockError } = require('../index.js')
const { newManager, serversOf } = require('./ioredis-servers.js')

const defaultSettings = Object.freeze({
  driftFactor: 0.01,
  retryCount: 10,
  retryDelay: 200,
  retryJitter: 100,
  automaticExtensionThreshold: 500,
})

const QUORUM_FAILED = 'The operation was unable to achieve a quorum during its retry window.'
const NOT_INTEGER = 'Duration must be an integer value in milliseconds.'

/** This error indicates a failure due to the existence of another lock for one or more of the requested resources. */
class ResourceLockedError extends Error {
  constructor(message) {
    super(message)
    this.name = 'ResourceLockedError'
  }
}

/** This error indicates a failure of an operation to pass with a quorum. */
class ExecutionError extends Error {
  constructor(message, attempts, options) {
    super(message, options)
    this.name = 'ExecutionError'
    this.attempts = attempts
  }
}

// A Lock's fencelock side: the fencelock Lock (null for a Lock built from a value by the
// caller, released and extended by name and token) and whether a newer Lock replaced it.
const held = new WeakMap()

/**
 * An object of this type is returned when a resource is successfully locked. It contains
 * convenience methods `release` and `extend` which perform the associated Redlock method on
 * itself.
 */
class Lock {
  constructor(redlock, resources, value, attempts, expiration) {
    this.redlock = redlock
    this.resources = resources
    this.value = value
    this.attempts = attempts
    this.expiration = expiration
  }

  /** The fencing token of this acquisition (a fencelock addition; undefined for a Lock built from a value). */
  get fencingToken() {
    const lock = held.get(this)?.lock
    return lock ? lock.fencingToken : undefined
  }

  async release() {
    return this.redlock.release(this)
  }

  async extend(duration) {
    return this.redlock.extend(this, duration)
  }
}

// One LockManager per set of servers and manager settings, shared by every Redlock over them
// and closed when the last of those quits. Keyed by a hash (the URLs may hold passwords).
const managers = new Map()

function managerKey(servers, m) {
  return createHash('sha256').update(JSON.stringify([servers.urls, servers.keyPrefix, servers.tls, m])).digest('hex')
}

function isInteger(duration) {
  return Math.floor(duration) === duration
}

/** The failures of an attempt that count as votes against (others, such as a bad argument, are thrown as they are). */
function isRefusal(err) {
  return err instanceof LockError && ['ERR_NOT_ACQUIRED', 'ERR_UNAVAILABLE', 'ERR_REDIS', 'ERR_LOCK_LOST', 'ERR_LOCK_RELEASED'].includes(err.code)
}

/** node-redlock's error for one server's vote against, from fencelock's outcome for it. */
function voteError(outcome, resources) {
  let e
  if (outcome.outcome === 'held') {
    e = new ResourceLockedError(`The operation was applied to: 0 of the ${resources} requested resources.`)
  } else if (outcome.outcome === 'unreachable') {
    // What an ioredis client says when it cannot reach its server; fencelock's reason is the cause.
    e = new Error('Connection is closed.', { cause: new Error(`${outcome.server}: ${outcome.detail}`) })
  } else {
    e = new Error(`${outcome.server}: ${outcome.detail}`)
  }
  e.server = outcome.server
  e.outcome = outcome.outcome
  return e
}

/**
 * A redlock object is instantiated with an array of at least one redis client and an optional
 * `options` object. Properties of the Redlock object should NOT be changed after it is first
 * used, as doing so could have unintended consequences for live locks.
 */
class Redlock extends EventEmitter {
  #servers
  #order
  #own = new Set()
  #quit = false

  constructor(clients, settings = {}, scripts = {}) {
    super()
    // Prevent crashes on error events (as node-redlock does): errors of a minority of
    // servers are emitted for observability only.
    this.on('error', () => {})
    this.clients = new Set(clients)
    if (this.clients.size === 0) {
      throw new Error('Redlock must be instantiated with at least one redis client.')
    }
    const pick = (k) => (typeof settings?.[k] === 'number' ? settings[k] : defaultSettings[k])
    this.settings = {
      driftFactor: pick('driftFactor'),
      retryCount: pick('retryCount'),
      retryDelay: pick('retryDelay'),
      retryJitter: pick('retryJitter'),
      automaticExtensionThreshold: pick('automaticExtensionThreshold'),
    }
    const custom = ['acquireScript', 'extendScript', 'releaseScript'].filter((k) => scripts?.[k] !== undefined)
    if (custom.length > 0) {
      throw new TypeError(`fencelock/compat/redlock runs fencelock's own scripts; custom scripts (${custom.join(', ')}) are not supported`)
    }
    this.#servers = serversOf([...this.clients])
    // Check the configuration now (a bad URL or setting throws here, as fencelock's constructor does).
    this.#manager(this.settings)
  }

  /** The manager for these clients and settings (driftFactor, retryDelay, retryJitter), shared and reference-counted. */
  #manager(s) {
    if (this.#quit) throw new ExecutionError('fencelock/compat/redlock: this Redlock has quit (quit() was called)', [])
    const delay = Math.min(Math.max(s.retryDelay, 1), 3_600_000)
    const m = { driftFactor: s.driftFactor, retryDelay: delay, retryJitter: Math.min(Math.max(s.retryJitter, 0), delay) }
    const key = managerKey(this.#servers, m)
    let entry = managers.get(key)
    if (entry === undefined) {
      entry = { manager: newManager(this.#servers, { driftFactor: m.driftFactor, retryDelay: m.retryDelay, retryJitter: m.retryJitter }), refs: 0 }
      managers.set(key, entry)
    }
    if (!this.#own.has(key)) {
      this.#own.add(key)
      entry.refs++
    }
    return entry.manager
  }

  #settings(settings) {
    return settings ? { ...this.settings, ...settings } : this.settings
  }

  /** The client a fencelock server label stands for. */
  #clientOf(manager, server, index) {
    const clients = [...this.clients]
    const i = manager.servers.indexOf(server)
    return clients[i >= 0 ? i : index]
  }

  /** ExecutionStats of an attempt that failed with `err`, from its per-server outcomes (`err.servers`) when the core gives them. */
  #refused(manager, err, resources) {
    const n = this.clients.size
    const stats = { membershipSize: n, quorumSize: Math.floor(n / 2) + 1, votesFor: new Set(), votesAgainst: new Map() }
    if (Array.isArray(err.servers)) {
      err.servers.forEach((outcome, i) => {
        const client = this.#clientOf(manager, outcome.server, i)
        if (outcome.outcome === 'granted') {
          stats.votesFor.add(client)
        } else {
          const e = voteError(outcome, resources)
          stats.votesAgainst.set(client, e)
          this.emit('error', e)
        }
      })
    } else {
      // Which server said what is unknown: every client is counted against, with fencelock's error.
      for (const client of this.clients) stats.votesAgainst.set(client, err)
      this.emit('error', err)
    }
    return Promise.resolve(stats)
  }

  /** ExecutionStats of an operation that passed: the votes a quorum gave (every client, unless the core says which). */
  #granted(manager, lock) {
    const n = this.clients.size
    const stats = { membershipSize: n, quorumSize: Math.floor(n / 2) + 1, votesFor: new Set(), votesAgainst: new Map() }
    if (lock && Array.isArray(lock.servers)) {
      lock.servers.forEach((outcome, i) => {
        const client = this.#clientOf(manager, outcome.server, i)
        if (outcome.outcome === 'granted') stats.votesFor.add(client)
        else stats.votesAgainst.set(client, voteError(outcome, lock.names?.length ?? 1))
      })
    } else {
      for (const client of this.clients) stats.votesFor.add(client)
    }
    return Promise.resolve(stats)
  }

  /** One acquire call of fencelock's: one name, or all of several names at once (`acquireMany`). */
  #acquireOnce(manager, resources, options) {
    if (resources.length === 1) return manager.acquire(resources[0], options)
    return manager.acquireMany(resources, options)
  }

  /** This method runs `.quit()` on all client connections, and closes fencelock's connections. */
  async quit() {
    this.#quit = true
    const results = []
    for (const client of this.clients) results.push(client.quit())
    for (const key of this.#own) {
      const entry = managers.get(key)
      if (entry && --entry.refs === 0) {
        managers.delete(key)
        results.push(entry.manager.close())
      }
    }
    this.#own.clear()
    await Promise.all(results)
  }

  /** This method acquires a lock on the resources for the duration specified by the `duration`. */
  async acquire(resources, duration, settings) {
    return this.#acquire(resources, duration, this.#settings(settings), false)
  }

  async #acquire(resources, duration, settings, autoExtend) {
    if (!isInteger(duration)) throw new Error(NOT_INTEGER)
    if (!Array.isArray(resources) || resources.length === 0) {
      throw new TypeError('resources must be a non-empty array of resource names')
    }
    const manager = this.#manager(settings)
    // retryCount retries after the first attempt (-1: without end). Each attempt is one
    // fencelock acquire that waits up to retryDelay, woken at once by a release; the last
    // makes one try.
    const forever = settings.retryCount === -1 || settings.retryCount === Infinity
    const tries = forever ? 1 : Math.max(0, Math.floor(settings.retryCount)) + 1
    const attempts = []
    for (let i = 1; ; i++) {
      const options = { ttl: duration, autoExtend }
      if (!forever) options.wait = i < tries ? Math.max(0, settings.retryDelay) : 0
      let lock
      try {
        lock = await this.#acquireOnce(manager, resources, options)
      } catch (err) {
        if (!isRefusal(err)) throw err
        attempts.push(this.#refused(manager, err, resources.length))
        if (i < tries) continue
        throw new ExecutionError(QUORUM_FAILED, attempts, { cause: err })
      }
      attempts.push(this.#granted(manager, lock))
      const result = new Lock(this, resources, lock.token, attempts, Date.now() + lock.validity)
      held.set(result, { lock, manager })
      return result
    }
  }

  /**
   * This method unlocks the provided lock from all servers still persisting it. It fails with
   * an ExecutionError if a quorum no longer held it (expired or taken) or too few servers
   * answered; the lock then expires after its timeout.
   */
  async release(lock, settings) {
    lock.expiration = 0
    const own = held.get(lock)
    const manager = own?.manager ?? this.#manager(this.#settings(settings))
    try {
      if (own?.lock) {
        await own.lock.release()
      } else {
        await Promise.all(lock.resources.map((r) => manager.release(r, lock.value)))
      }
    } catch (err) {
      if (!isRefusal(err)) throw err
      throw new ExecutionError(QUORUM_FAILED, [this.#refused(manager, err, lock.resources.length)], { cause: err })
    }
    return { attempts: [this.#granted(manager, own?.lock)] }
  }

  /** This method extends a valid lock by the provided `duration` (from now). */
  async extend(existing, duration, settings) {
    if (!isInteger(duration)) throw new Error(NOT_INTEGER)
    const own = held.get(existing)
    // A replaced, released, lost or expired lock (for a Lock built from a value: its expiration).
    const expired = own?.lock ? existing.expiration === 0 || own.lock.validity === 0 : existing.expiration < Date.now()
    if (expired) throw new ExecutionError('Cannot extend an already-expired lock.', [])
    const manager = own?.manager ?? this.#manager(this.#settings(settings))
    let validity
    try {
      if (own?.lock) {
        await own.lock.extend(duration)
        validity = own.lock.validity
      } else {
        const each = await Promise.all(existing.resources.map((r) => manager.extend(r, existing.value, duration)))
        validity = Math.min(...each)
      }
    } catch (err) {
      if (!isRefusal(err)) throw err
      throw new ExecutionError(QUORUM_FAILED, [this.#refused(manager, err, existing.resources.length)], { cause: err })
    }
    existing.expiration = 0
    const replacement = new Lock(this, existing.resources, existing.value, [this.#granted(manager, own?.lock)], Date.now() + validity)
    held.set(replacement, { lock: own?.lock ?? null, manager })
    return replacement
  }

  /**
   * Wrap and execute a routine in the context of an auto-extending lock, returning a promise
   * of the routine's value. If the lock is lost (an extension failed and it expired, or it
   * was taken), the AbortSignal given to the routine aborts, with the error at `signal.error`.
   */
  async using(resources, duration, settingsOrRoutine, optionalRoutine) {
    if (!isInteger(duration)) throw new Error(NOT_INTEGER)
    const settings = settingsOrRoutine && typeof settingsOrRoutine !== 'function' ? { ...this.settings, ...settingsOrRoutine } : this.settings
    const routine = optionalRoutine ?? settingsOrRoutine
    if (typeof routine !== 'function') throw new Error('INVARIANT: routine is not a function.')
    if (settings.automaticExtensionThreshold > duration - 100) {
      throw new Error('A lock `duration` must be at least 100ms greater than the `automaticExtensionThreshold` setting.')
    }
    const controller = new AbortController()
    const signal = controller.signal
    // fencelock extends the lock in the background (every duration / 3) and aborts its own
    // signal if the lock is lost: passed on as node-redlock's signal, with `error`.
    const lock = await this.#acquire(resources, duration, settings, true)
    const own = held.get(lock).lock
    const onLost = () => {
      const cause = own.signal.reason
      signal.error = new ExecutionError(`The lock on ${resources.join(', ')} was lost (${own.lostReason ?? 'expired'}) and could not be extended.`, [], { cause })
      controller.abort(signal.error)
    }
    if (own.signal.aborted) onLost()
    else own.signal.addEventListener('abort', onLost, { once: true })
    try {
      return await routine(signal)
    } finally {
      own.signal.removeEventListener('abort', onLost)
      await lock.release()
    }
  }
}

Object.defineProperty(exports, '__esModule', { value: true })
exports.default = Redlock
exports.Lock = Lock
exports.ExecutionError = ExecutionError
exports.ResourceLockedError = ResourceLockedError
