'use strict'
// The coordination family's classes, `Semaphore` and `RwLock` (made by
// `manager.semaphore(name, limit)` and `manager.rwlock(name)`). They hold no logic: each
// call names the lease's kind and goes to the manager's native calls, which run the core's
// semaphore and read-write lock. A lease is a `Lock` like any other (token, fencing token,
// `extend`, auto-extension, `signal`, `await using`).

const { withOwnSignal, runScoped, splitOption } = require('./scope.js')

/** `options` without `count` (which the native options do not take), and the count. */
const acquireLease = withOwnSignal(function acquireLease(name, options, kind, count, limit, mode) {
  return this.__acquireLease(name, kind, count, limit, options, mode)
})

module.exports = function family(invalid, holderOf) {
  /**
   * A counting semaphore: at most `limit` permits of `name` held at any instant, across every
   * process and language using the name. Each acquisition takes `count` permits (default 1),
   * all or none, as a `Lock` of its own. First come, first served; a release hands the freed
   * permits to every waiter at the head of the line they satisfy.
   */
  class Semaphore {
    #manager
    #name
    #limit

    constructor(manager, name, limit) {
      this.#manager = manager
      this.#name = name
      this.#limit = limit
    }

    get name() {
      return this.#name
    }

    get limit() {
      return this.#limit
    }

    #acquire(options, mode) {
      const [count, rest] = splitOption(options, 'count', 1)
      return acquireLease.call(this.#manager, this.#name, rest, 'semaphore', count, this.#limit, mode)
    }

    /** Takes `options.count` permits (default 1), waiting up to `options.wait` ms. */
    acquire(options) {
      return this.#acquire(options, 'acquire')
    }

    /** One try: the lease, or `null` when the permits are not free (or others wait ahead). */
    tryAcquire(options) {
      return this.#acquire(options, 'try')
    }

    /** Runs `fn(lease, signal)` holding the permits (auto-extended), then releases them. */
    using(options, fn) {
      if (fn === undefined && typeof options === 'function') [fn, options] = [options, undefined]
      return runScoped('using()', () => this.#acquire(options, 'scoped'), fn, invalid)
    }

    /** `{ limit, held, holders, waiters }`, changing nothing. */
    async state() {
      const [limit, held, holders, waiters] =
        await this.#manager.__leaseState(this.#name, 'semaphore', this.#limit)
      return { limit, held, holders, waiters }
    }

    /**
     * The holders that left a note (their managers have the `holder` option), as
     * `manager.holder(name)` gives one each, longest lease first; others are only counted.
     */
    async holders() {
      const hs = await this.#manager.__leaseHolders(this.#name, 'semaphore', this.#limit)
      return hs.map(holderOf)
    }

    /** Releases the lease held with `token` (one handed across processes). */
    release(token) {
      return this.#manager.__leaseRelease(this.#name, 'semaphore', this.#limit, token)
    }

    /** Extends the lease held with `token` to `ttl` ms from now; resolves to its validity. */
    extend(token, ttl) {
      return this.#manager.__leaseExtend(this.#name, 'semaphore', this.#limit, token, ttl)
    }
  }

  /**
   * A fair read-write lock: many readers or one writer on `name`. Each `read()` and
   * `write()` is a `Lock` of its own; a waiting writer stops new readers, and the readers that
   * queued before the next writer enter together when it releases.
   */
  class RwLock {
    #manager
    #name

    constructor(manager, name) {
      this.#manager = manager
      this.#name = name
    }

    get name() {
      return this.#name
    }

    #acquire(kind, options, mode) {
      return acquireLease.call(this.#manager, this.#name, options, kind, 1, 1, mode)
    }

    /** Takes a read share, waiting up to `options.wait` ms. */
    read(options) {
      return this.#acquire('read', options, 'acquire')
    }

    /** Takes the write hold, waiting up to `options.wait` ms. */
    write(options) {
      return this.#acquire('write', options, 'acquire')
    }

    /** One try to read: the share, or `null` while a writer holds it or waits. */
    tryRead(options) {
      return this.#acquire('read', options, 'try')
    }

    /** One try to write: the hold, or `null` while anyone holds it or waits. */
    tryWrite(options) {
      return this.#acquire('write', options, 'try')
    }

    /** Runs `fn(share, signal)` holding a read share (auto-extended), then releases it. */
    reading(options, fn) {
      if (fn === undefined && typeof options === 'function') [fn, options] = [options, undefined]
      return runScoped('reading()', () => this.#acquire('read', options, 'scoped'), fn, invalid)
    }

    /** Runs `fn(hold, signal)` holding the write hold (auto-extended), then releases it. */
    writing(options, fn) {
      if (fn === undefined && typeof options === 'function') [fn, options] = [options, undefined]
      return runScoped('writing()', () => this.#acquire('write', options, 'scoped'), fn, invalid)
    }

    /** `{ readers, writer, waiters }`, changing nothing. */
    async state() {
      const [readers, writer, waiters] = await this.#manager.__leaseState(this.#name, 'read', 0)
      return { readers, writer: writer === 1, waiters }
    }

    /** The readers or the writer that left a note (see `Semaphore.holders()`). */
    async holders() {
      const hs = await this.#manager.__leaseHolders(this.#name, 'read', 0)
      return hs.map(holderOf)
    }

    /** Releases the share or hold held with `token`. */
    release(token) {
      return this.#manager.__leaseRelease(this.#name, 'read', 0, token)
    }

    /** Extends the share or hold held with `token` to `ttl` ms from now. */
    extend(token, ttl) {
      return this.#manager.__leaseExtend(this.#name, 'read', 0, token, ttl)
    }
  }

  return { Semaphore, RwLock }
}
