// The coordination family in Node (issue 34 item 5): manager.semaphore(name, limit) and
// manager.rwlock(name); leases are Locks (await using, signal), errors the same kinds.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startServers, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, Semaphore, RwLock, InvalidArgumentError, WrongKindError, LockLostError } = require('../index.js')

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

describe('semaphore', () => {
  it('holds at most its limit, counts all or none, and each lease is a Lock', async () => {
    const sem = mgr.semaphore('n-jobs', 3)
    assert.ok(sem instanceof Semaphore)
    assert.equal(sem.limit, 3)
    const two = await sem.acquire({ count: 2, ttl: 10_000, wait: 0 })
    assert.equal(two.kind, 'semaphore')
    assert.equal(two.permits, 2)
    assert.equal(await sem.tryAcquire({ count: 2, ttl: 10_000 }), null)
    const one = await sem.tryAcquire({ ttl: 10_000 })
    assert.ok(one.fencingToken > two.fencingToken)
    assert.deepEqual(await sem.state(), { limit: 3, held: 3, holders: 2, waiters: 0 })
    await one[Symbol.asyncDispose]()
    await two.release()
    assert.equal((await sem.state()).held, 0)
  })

  it('refuses bad arguments before any network call', async () => {
    const dead = new LockManager('redis://127.0.0.1:1')
    assert.throws(() => dead.semaphore('x', 0), InvalidArgumentError)
    assert.throws(() => dead.semaphore('x', 2.5), InvalidArgumentError)
    assert.throws(() => dead.semaphore('', 2), InvalidArgumentError)
    assert.throws(() => dead.rwlock(''), InvalidArgumentError)
    const sem = dead.semaphore('x', 2)
    await assert.rejects(sem.acquire({ count: 3 }), InvalidArgumentError)
    await assert.rejects(sem.acquire({ count: 1, bogus: 1 }), InvalidArgumentError)
    await dead.close()
  })

  it('caps a pool of workers at the limit and runs them all (using)', async () => {
    const sem = mgr.semaphore('n-pool', 2)
    let inside = 0
    let most = 0
    const done = await Promise.all(Array.from({ length: 6 }, (_, i) => sem.using({ ttl: 10_000 }, async (lease) => {
      assert.equal(lease.kind, 'semaphore')
      inside += 1
      most = Math.max(most, inside)
      await new Promise((resolve) => setTimeout(resolve, 30))
      inside -= 1
      return i
    })))
    assert.deepEqual(done, [0, 1, 2, 3, 4, 5])
    assert.equal(most, 2)
  })

  it('does not let a later waiter for 1 pass a waiter for 3', async () => {
    const sem = mgr.semaphore('n-fifo', 3)
    const holder = await sem.acquire({ ttl: 30_000 })
    const big = sem.acquire({ count: 3, ttl: 30_000 })
    await waitUntil(async () => (await sem.state()).waiters === 1, 'the waiter for 3 is in line')
    assert.equal(await sem.tryAcquire({ ttl: 30_000 }), null)
    await holder.release()
    const lease = await big
    assert.equal(lease.permits, 3)
    await lease.release()
  })

  it('stops a wait on abort', async () => {
    const sem = mgr.semaphore('n-abort', 1)
    const holder = await sem.acquire({ ttl: 30_000 })
    const ac = new AbortController()
    const waiting = sem.acquire({ ttl: 30_000, signal: ac.signal })
    setTimeout(() => ac.abort(), 50)
    await assert.rejects(waiting, { name: 'AbortError' })
    await holder.release()
  })

  it('refuses another limit and another kind', async () => {
    const lease = await mgr.semaphore('n-kind', 4).acquire({ ttl: 10_000 })
    await assert.rejects(mgr.semaphore('n-kind', 5).acquire({ wait: 0 }), (e) => e instanceof InvalidArgumentError && /limit 4/.test(e.message))
    await assert.rejects(mgr.acquire('n-kind', { wait: 0 }), (e) => e instanceof WrongKindError && e.code === 'ERR_WRONG_KIND' && /as a semaphore/.test(e.message))
    await assert.rejects(mgr.rwlock('n-kind').read({ wait: 0 }), WrongKindError)
    await lease.release()
  })

  it('releases and extends by token', async () => {
    const sem = mgr.semaphore('n-token', 2)
    const lease = await sem.acquire({ ttl: 5_000 })
    const token = lease.token
    lease.detach()
    const validity = await sem.extend(token, 10_000)
    assert.ok(validity > 9_000 && validity <= 10_000)
    await sem.release(token)
    await assert.rejects(sem.release(token), LockLostError)
  })
})

describe('rwlock', () => {
  it('shares reads, excludes a writer, and orders fencing tokens', async () => {
    const rw = mgr.rwlock('n-rw')
    assert.ok(rw instanceof RwLock)
    const r1 = await rw.read({ ttl: 10_000, wait: 0 })
    const r2 = await rw.read({ ttl: 10_000, wait: 0 })
    assert.equal(r1.kind, 'read')
    assert.equal(r1.permits, null)
    assert.deepEqual(await rw.state(), { readers: 2, writer: false, waiters: 0 })
    assert.equal(await rw.tryWrite({ ttl: 10_000 }), null)
    await r1.release()
    await r2.release()
    const fence = await rw.writing({ ttl: 10_000 }, async (w) => {
      assert.equal(w.kind, 'write')
      assert.equal((await rw.state()).writer, true)
      assert.equal(await rw.tryRead({ ttl: 10_000 }), null)
      return w.fencingToken
    })
    assert.ok(fence > r2.fencingToken)
    assert.equal(await rw.reading(async (share) => share.kind), 'read')
  })

  it('refuses a reader asking to write with its token at once', async () => {
    const rw = mgr.rwlock('n-upgrade')
    const share = await rw.read({ ttl: 10_000, token: 'worker-9' })
    await assert.rejects(rw.write({ ttl: 10_000, token: 'worker-9' }), (e) => e instanceof WrongKindError && /read share/.test(e.message))
    await share.release()
  })
})
