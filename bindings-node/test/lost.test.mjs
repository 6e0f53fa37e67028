// Lost-lock detection: `lock.signal` aborts, `lock.lost` turns true, and `using` reports the
// loss at the end of its scope. Also: `using` keeps a job longer than the TTL alive.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { RedisServer, serverWithManager } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, LockLostError } = require('../index.js')

/** Resolves with the signal's reason when it aborts; rejects after `ms` (the test then fails). */
function aborted(signal, ms = 5000) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(signal.reason)
    const timer = setTimeout(() => reject(new Error(`signal did not abort within ${ms} ms`)), ms)
    signal.addEventListener('abort', () => {
      clearTimeout(timer)
      resolve(signal.reason)
    })
  })
}

let server
let mgr
serverWithManager(LockManager, (s, m) => {
  server = s
  mgr = m
})

describe('lost locks', () => {
  it('signal aborts when the key is deleted behind an auto-extended holder', async () => {
    const lock = await mgr.acquire('stolen', { ttl: 600, autoExtend: true })
    const signal = lock.signal
    assert.equal(signal.aborted, false)
    await server.del('stolen')
    const reason = await aborted(signal)
    assert.ok(reason instanceof LockLostError, String(reason))
    assert.equal(reason.code, 'ERR_LOCK_LOST')
    assert.equal(reason.reason, 'expired', 'the event says why')
    assert.match(reason.message, /validity ran out/)
    assert.equal(lock.lost, true)
    assert.equal(lock.lostReason, 'expired')
    assert.equal(lock.validity, 0)
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_LOST' })
    assert.equal(lock.lost, true, 'stays lost after the release')
  })

  it('signal aborts when the key is taken by another owner', async () => {
    const lock = await mgr.acquire('taken', { ttl: 600, autoExtend: true })
    const c = server.client()
    await c.set('taken', 'someone-else', 'PX', 60_000)
    assert.equal(lock.lostReason, null, 'held so far')
    const reason = await aborted(lock.signal)
    assert.equal(reason.reason, 'taken')
    assert.equal(lock.lostReason, 'taken')
    assert.equal(await c.get('taken'), 'someone-else', 'the other owner keeps the key')
    await assert.rejects(lock.extend(1000), { code: 'ERR_LOCK_LOST' })
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_LOST' })
    assert.equal(lock.lostReason, 'taken', 'known after the release too')
  })

  it('signal aborts as unreachable when no server answers before the validity runs out', async () => {
    const frozen = await RedisServer.start()
    const m = new LockManager(frozen.url, { serverTimeout: 100 })
    try {
      const lock = await m.acquire('frozen', { ttl: 600, autoExtend: true })
      frozen.pause()
      const reason = await aborted(lock.signal)
      assert.equal(reason.reason, 'unreachable', reason.message)
      assert.equal(lock.lostReason, 'unreachable')
    } finally {
      frozen.resume()
      await m.close()
      await frozen.stop()
    }
  })

  it('without auto-extension the signal aborts when the validity runs out', async () => {
    const lock = await mgr.acquire('expires', { ttl: 300 })
    const t0 = Date.now()
    const signal = lock.signal
    await aborted(signal)
    assert.ok(Date.now() - t0 < 2000)
    assert.equal(lock.lost, true)
  })

  it('the signal of a lock that is already lost is aborted at first access', async () => {
    const lock = await mgr.acquire('late-signal', { ttl: 100 })
    await new Promise((r) => setTimeout(r, 150))
    assert.equal(lock.lost, true)
    // Aborted when first read, not a tick later.
    assert.equal(lock.signal.aborted, true)
    assert.equal(lock.signal.reason.code, 'ERR_LOCK_LOST')
    assert.equal(lock.signal.reason.reason, 'expired')
    await aborted(lock.signal)
  })

  it('a released lock ends its signal\'s watch: not aborted past its TTL, nothing left behind', async () => {
    const { __pendingWatches: watches } = require('../native.js')
    const before = watches()
    const locks = []
    for (let i = 0; i < 20; i++) locks.push(await mgr.acquire(`lost-watch-${i}`, { ttl: 300 }))
    const signals = locks.map((l) => l.signal)
    assert.equal(watches(), before + 20)
    await Promise.all(locks.map((l) => l.release()))
    await new Promise((r) => setTimeout(r, 450))
    assert.deepEqual(signals.filter((s) => s.aborted), [])
    assert.equal(watches(), before)
  })

  // The drop-ins' hook (compat/redis-semaphore.js's onLockLost): the signal's loss, without
  // an AbortController.
  it('__onLost calls back once with the LockLostError when the key is taken', async () => {
    const lock = await mgr.acquire('hooked', { ttl: 600, autoExtend: true })
    const calls = []
    const called = new Promise((resolve) => lock.__onLost((e) => resolve(calls.push(e))))
    await server.client().set('hooked', 'someone-else', 'PX', 60_000)
    await called
    assert.equal(calls.length, 1)
    assert.ok(calls[0] instanceof LockLostError, String(calls[0]))
    assert.equal(calls[0].code, 'ERR_LOCK_LOST')
    assert.equal(calls[0].reason, 'taken')
    assert.equal(lock.lostReason, 'taken')
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_LOST' })
    assert.equal(calls.length, 1, 'once')
  })

  it('__onLost on a lock already lost calls back before it returns', async () => {
    const lock = await mgr.acquire('hooked-late', { ttl: 100 })
    await new Promise((r) => setTimeout(r, 150))
    const calls = []
    lock.__onLost((e) => calls.push(e))
    assert.equal(calls.length, 1)
    assert.equal(calls[0].reason, 'expired')
  })

  it('__onLost of released locks: never called past their TTL, no watch left behind', async () => {
    const { __pendingWatches: watches } = require('../native.js')
    const before = watches()
    const calls = []
    const locks = []
    for (let i = 0; i < 20; i++) locks.push(await mgr.acquire(`hook-watch-${i}`, { ttl: 300 }))
    for (const l of locks) l.__onLost((e) => calls.push(e))
    assert.equal(watches(), before + 20)
    await Promise.all(locks.map((l) => l.release()))
    await new Promise((r) => setTimeout(r, 450))
    assert.deepEqual(calls, [])
    assert.equal(watches(), before)
  })

  it('using aborts its signal on loss and rejects with ERR_LOCK_LOST at the end', async () => {
    let sawAbort = false
    await assert.rejects(
      mgr.using('scoped-lost', { ttl: 600 }, async (lock, signal) => {
        await server.del('scoped-lost')
        await aborted(signal)
        sawAbort = true
        return 'finished anyway'
      }),
      (e) => e instanceof LockLostError && e.code === 'ERR_LOCK_LOST',
    )
    assert.ok(sawAbort)
  })

  it('using keeps a job that outlasts the TTL alive', async () => {
    const ttl = 900
    const out = await mgr.using('long-job', { ttl }, async (lock, signal) => {
      for (let i = 0; i < 4; i++) {
        await new Promise((r) => setTimeout(r, ttl / 2))
        assert.equal(await server.get('long-job'), lock.token, `still held after ${(i + 1) * (ttl / 2)} ms`)
      }
      assert.equal(signal.aborted, false)
      assert.equal(lock.lost, false)
      return 'done'
    })
    assert.equal(out, 'done')
    assert.equal(await server.get('long-job'), null)
  })

  it('maxHold stops auto-extension', async () => {
    const lock = await mgr.acquire('max-hold', { ttl: 300, autoExtend: true, maxHold: 400 })
    await aborted(lock.signal, 5000)
    assert.equal(lock.lost, true)
  })
})
