// Leader election in Node (issue 54): manager.election(name); a term is a Lock of the name
// whose fencing token is the term number; observe() is an async iterable ended by a signal,
// each change pushed (terms of 60 s: a change seen within the 10 s bounds was pushed, not found
// by a timer at the term's end).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startServers } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, Election, Term, InvalidArgumentError, WrongKindError, LockLostError, NotAcquiredError } =
  require('../index.js')

const TERM = 60_000

let servers
let mgr
before(async () => {
  servers = await startServers(1)
  mgr = new LockManager(servers[0].url, { serverTimeout: 500, retryDelay: 100 })
})
after(async () => {
  await mgr.close()
  await Promise.all(servers.map((s) => s.stop()))
})

/** The next value of an async iterator, within 10 s (more is a hang). */
async function next(it) {
  let timer
  const hang = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error('the observer hung')), 10_000)
  })
  try {
    const { value, done } = await Promise.race([it.next(), hang])
    assert.equal(done, false)
    return value
  } finally {
    clearTimeout(timer)
  }
}

describe('election', () => {
  it('onLeader calls back at each change until its signal aborts, and stops at a throw', async () => {
    const election = mgr.election('n-on-leader')
    const reports = []
    let wake
    const ac = new AbortController()
    const following = election.onLeader((leader) => {
      reports.push(leader === null ? null : leader.value)
      wake?.()
    }, { signal: ac.signal })
    const until = async (n) => {
      const limit = Date.now() + 10_000
      while (reports.length < n) {
        assert.ok(Date.now() < limit, `only ${reports.length} reports: ${reports}`)
        await new Promise((resolve) => { wake = resolve; setTimeout(resolve, 100) })
      }
    }
    await until(1)
    const term = await election.campaign({ value: 'a', ttl: TERM })
    await until(2)
    await term.proclaim('b')
    await until(3)
    await term.resign()
    await until(4)
    assert.deepEqual(reports, [null, 'a', 'b', null])
    ac.abort()
    await following
    await assert.rejects(election.onLeader(() => { throw new Error('broken callback') }), /broken callback/)
    await assert.rejects(election.onLeader('x'), InvalidArgumentError)
  })

  it('leads, proclaims and resigns; terms grow; observers follow each change', async () => {
    const election = mgr.election('n-sched')
    assert.ok(election instanceof Election)
    assert.equal(await election.leader(), null)
    const ac = new AbortController()
    const it = election.observe({ signal: ac.signal })[Symbol.asyncIterator]()
    assert.equal(await next(it), null, 'first the state now: nobody')

    const term = await election.campaign({ value: 'host-a:8080', ttl: TERM })
    assert.ok(term instanceof Term)
    assert.equal(term.value, 'host-a:8080')
    let seen = await next(it)
    assert.equal(seen.value, 'host-a:8080')
    assert.equal(seen.fencingToken, term.fencingToken)
    assert.ok(seen.since instanceof Date && seen.remaining > 0)
    const leader = await election.leader()
    assert.equal(leader.fencingToken, term.fencingToken)
    assert.equal(await election.tryCampaign({ value: 'b', ttl: TERM }), null, 'one leader at a time')

    await term.proclaim('host-a:9090')
    assert.equal(term.value, 'host-a:9090')
    seen = await next(it)
    assert.equal(seen.value, 'host-a:9090')
    assert.equal(seen.fencingToken, term.fencingToken, 'same term')

    const waiting = election.campaign({ value: 'b', ttl: TERM })
    await term.resign()
    const second = await waiting
    assert.ok(second.fencingToken > term.fencingToken, 'terms grow')
    seen = await next(it)
    if (seen === null) seen = await next(it) // nobody, briefly, between the two
    assert.equal(seen.value, 'b')
    await second[Symbol.asyncDispose]()
    assert.equal(await next(it), null)
    ac.abort()
    assert.deepEqual(await it.next(), { value: undefined, done: true }, 'the signal ends it')
  })

  it('run() leads while fn runs, and aborts its signal when the term is lost', async () => {
    const election = mgr.election('n-run')
    assert.equal(await election.run({ value: 'r', ttl: TERM }, async (term) => {
      assert.equal((await election.leader()).value, 'r')
      return term.value
    }), 'r')
    assert.equal(await election.leader(), null)
    await assert.rejects(
      election.run({ value: 'doomed', ttl: 600 }, async (term, signal) => {
        await servers[0].del('n-run')
        await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
        assert.ok(term.lost)
      }),
      LockLostError,
    )
  })

  it('checks its arguments before any call and keeps one kind per name', async () => {
    const nowhere = new LockManager('redis://127.0.0.1:1')
    assert.throws(() => nowhere.election(''), InvalidArgumentError)
    const e = nowhere.election('x')
    await assert.rejects(e.campaign({ value: 'v'.repeat(16385) }), /at most 16384 bytes/)
    await assert.rejects(e.campaign({ value: 42 }), InvalidArgumentError)
    await assert.rejects(e.campaign({ value: 'v', ttl: 0 }), InvalidArgumentError)
    await nowhere.close()
    const sem = mgr.semaphore('n-sem-elect', 2)
    const permit = await sem.acquire({ ttl: TERM, wait: 0 })
    await assert.rejects(mgr.election('n-sem-elect').campaign({ wait: 0 }), WrongKindError)
    await permit.release()
    const lock = await mgr.acquire('n-plain-elect', { ttl: TERM, wait: 0 })
    assert.equal(await mgr.election('n-plain-elect').leader(), null, 'a plain lock is no leader')
    await assert.rejects(mgr.election('n-plain-elect').campaign({ wait: 0 }), NotAcquiredError)
    await assert.rejects(lock.__proclaim('x'), /not an election's term/)
    await lock.release()
  })
})
