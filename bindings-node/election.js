'use strict'
// Leader election's classes, `Election` and `Term` (made by `manager.election(name)`). They
// hold no logic: each call goes to the manager's native calls, which run the core's election.
// A term is a `Lock` of the election's name (its fencing token is the term number; kept alive
// in the background; `signal` aborts when it is lost).

const { withOwnSignal, runScoped, splitOption } = require('./scope.js')

const campaign = withOwnSignal(function campaign(name, options, value, mode) {
  return this.__campaign(name, value, options, mode)
})

/** `options` without `value` (which the native options do not take), and the value. */
function leaderOf(l) {
  return l === null
    ? null
    : { value: l.value, fencingToken: l.fencingToken, since: new Date(l.since), remaining: l.remaining }
}

module.exports = function election(invalid) {
  /**
   * This candidate's term as leader: kept alive until `resign()`; `signal` aborts if it is
   * lost. `await using term = await election.campaign(...)` resigns at the end of the block.
   */
  class Term {
    #lock
    #value

    constructor(lock, value) {
      this.#lock = lock
      this.#value = value
    }

    /** The term's lease: a `Lock` of the election's name. */
    get lock() {
      return this.#lock
    }

    /** The value this leader proclaims now. */
    get value() {
      const now = this.#lock.__termValue
      if (now !== null && now !== undefined) this.#value = now
      return this.#value
    }

    /** The term number: larger than every earlier term's (a `bigint`). */
    get fencingToken() {
      return this.#lock.fencingToken
    }

    /** Whether the term is known to be lost: stop acting as the leader. */
    get lost() {
      return this.#lock.lost
    }

    /** Aborts when the term is lost (its reason a `LockLostError`). */
    get signal() {
      return this.#lock.signal
    }

    /** Proclaims a new value in the same term, pushed to every observer. */
    async proclaim(value) {
      await this.#lock.__proclaim(value)
      this.#value = value
    }

    /** Resigns: the next candidate in line leads at once. */
    resign() {
      return this.#lock.release()
    }

    [Symbol.asyncDispose]() {
      return this.#lock[Symbol.asyncDispose]()
    }
  }

  /**
   * A leader election on one name (`manager.election(name)`): candidates campaign in line,
   * first come first served; the leader's value is read with `leader()` and followed with
   * `observe()`.
   */
  class Election {
    #manager
    #name

    constructor(manager, name) {
      this.#manager = manager
      this.#name = name
    }

    get name() {
      return this.#name
    }

    /** Campaigns with `options.value` until this candidate leads (`options.wait` ms at most). */
    async campaign(options) {
      const [value, rest] = splitOption(options, 'value', '')
      const lock = await campaign.call(this.#manager, this.#name, rest, value, 'acquire')
      return new Term(lock, value)
    }

    /** One try: the term, or `null` when someone else leads (or candidates wait ahead). */
    async tryCampaign(options) {
      const [value, rest] = splitOption(options, 'value', '')
      const lock = await campaign.call(this.#manager, this.#name, rest, value, 'try')
      return lock === null ? null : new Term(lock, value)
    }

    /** The leader now, or `null` when nobody leads. */
    async leader() {
      return leaderOf(await this.#manager.__leader(this.#name))
    }

    /**
     * The leader, then each change (a new term, a proclaimed value, nobody leading: `null`),
     * pushed by the servers; `for await (const leader of election.observe({ signal }))` ends
     * when `signal` aborts (or the loop breaks).
     */
    observe(options) {
      const signal = options?.signal
      if (signal !== undefined && !(signal instanceof AbortSignal)) {
        throw invalid('options.signal must be an AbortSignal')
      }
      const observer = this.#manager.__observe(this.#name)
      const close = () => observer.close()
      return {
        async * [Symbol.asyncIterator]() {
          if (signal?.aborted) return
          signal?.addEventListener('abort', close, { once: true })
          try {
            for (;;) {
              const report = await observer.next()
              if (report === null) return
              yield leaderOf(report.leader ?? null)
            }
          } finally {
            signal?.removeEventListener('abort', close)
            observer.close()
          }
        },
      }
    }

    /**
     * Calls `fn(leader)` with the leader now and then at each change (`null`: nobody leads),
     * as client-go's `OnNewLeader`, awaiting what it returns before the next; resolves when
     * `options.signal` aborts, rejects with `fn`'s error (and stops following) if it throws.
     */
    async onLeader(fn, options) {
      if (typeof fn !== 'function') throw invalid('onLeader(fn): fn must be a function')
      for await (const leader of this.observe(options)) await fn(leader)
    }

    /**
     * Campaigns, runs `fn(term, signal)` while leading (`signal` aborts when the term is lost),
     * resigns, and resolves to `fn`'s result; rejects with `LockLostError` if the term was lost
     * while `fn` ran (or with `fn`'s own error).
     */
    run(options, fn) {
      if (fn === undefined && typeof options === 'function') [fn, options] = [options, undefined]
      const [value, rest] = splitOption(options, 'value', '')
      const lead = typeof fn === 'function' ? (lock, signal) => fn(new Term(lock, value), signal) : fn
      return runScoped('run()', () => campaign.call(this.#manager, this.#name, rest, value, 'acquire'), lead, invalid)
    }
  }

  return { Election, Term }
}
