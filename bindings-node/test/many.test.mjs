// Locks on several names at once (acquireMany): all or none on each server, one token, one
// fencing token per name, waiting without holding any of them, bad input refused before any
// call.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startServers, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager } = require('../index.js')

let servers
let mgr
before(async () => {
  servers = await startServers(3)
  mgr = new LockManager(servers.map((s) => s.url), { serverTimeout: 500, retryDelay: 100 })
})
after(async () => {
  await mgr.close()
  await Promise.all(servers.map((s) => s.stop()))
})

describe('acquireMany', () => {
  it('takes every name with one token and a fencing token each, and releases them as one', async () => {
    const lock = await mgr.acquireMany(['m-a', Buffer.from('m-b')], { ttl: 10_000, wait: 0 })
    assert.deepEqual(lock.names, ['m-a', 'm-b'])
    assert.equal(lock.name, 'm-a')
    assert.equal(lock.fencingTokens.length, 2)
    assert.equal(typeof lock.fencingTokens[1], 'bigint')
    assert.equal(lock.fencingTokens[0], lock.fencingToken)
    for (const s of servers) {
      assert.equal(await s.get('m-a'), lock.token)
      assert.equal(await s.get('m-b'), lock.token)
    }
    await lock.extend(20_000)
    assert.ok((await servers[0].pttl('m-b')) > 15_000)
    assert.equal(await lock.isHeld(), true)
    await lock.release()
    for (const s of servers) assert.equal(await s.get('m-b'), null)
  })

  it('takes none while one is held by another owner, and waits without holding any', async () => {
    for (const s of servers) await s.client().set('m-held', 'another-owner', 'PX', 60_000)
    const e = await mgr.acquireMany(['m-free', 'm-held'], { wait: 0 }).catch((x) => x)
    assert.equal(e.code, 'ERR_NOT_ACQUIRED')
    assert.deepEqual(e.servers.map((r) => r.outcome), ['held', 'held', 'held'])
    for (const s of servers) assert.equal(await s.get('m-free'), null, 'no part of it was taken')

    const holder = await mgr.acquire('m-y', { ttl: 30_000 })
    const waiting = mgr.acquireMany(['m-x', 'm-y'], { ttl: 10_000, wait: 10_000 })
    // Queued and listening everywhere: a waiter not subscribed yet may be passed (SAFETY.md).
    const ready = async (s) => (await s.queued('m-x')) === 1 && (await s.listening('m-x'))
    await waitUntil(async () => (await Promise.all(servers.map(ready))).every(Boolean), 'the waiter queued and listening')
    assert.equal(await servers[0].get('m-x'), null, 'it holds nothing while it waits')
    const other = new LockManager(servers.map((s) => s.url))
    assert.equal(await other.tryAcquire('m-x'), null, 'and nobody passes it')
    await holder.release()
    const lock = await waiting
    assert.deepEqual(lock.names, ['m-x', 'm-y'])
    await lock.release()
    await other.close()
  })

  it('an AbortSignal stops the wait and leaves nothing behind', async () => {
    const holder = await mgr.acquire('m-q', { ttl: 30_000 })
    const controller = new AbortController()
    const waiting = mgr.acquireMany(['m-p', 'm-q'], { signal: controller.signal })
    await waitUntil(async () => (await servers[0].queued('m-p')) === 1, 'the waiter queued')
    controller.abort()
    await assert.rejects(waiting, { name: 'AbortError' })
    await waitUntil(async () => (await servers[0].queued('m-p')) === 0, 'its places were given up')
    await holder.release()
  })

  it('refuses bad name lists before any call', async () => {
    const dead = new LockManager('redis://127.0.0.1:1')
    for (const [names, message] of [
      ['m-a', /array/],
      [[], /1 to 64 names/],
      [['m-a', 'm-a'], /given twice/],
      [['m-a', 7], /names\[1\]/],
      [Array.from({ length: 65 }, (_, i) => `n${i}`), /1 to 64 names/]
    ]) {
      await assert.rejects(dead.acquireMany(names, { wait: 0 }), { code: 'ERR_INVALID_ARG', message })
    }
    await assert.rejects(dead.acquireMany(['m-a'], { bogus: 1 }), { code: 'ERR_INVALID_ARG' })
    await dead.close()
  })
})
