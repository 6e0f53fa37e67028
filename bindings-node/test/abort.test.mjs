// AbortSignal cancellation of a waiting acquire, and the event loop staying free while a
// call waits on the network.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'

import { RedisServer } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, AbortError, LockError } = require('../index.js')

let server
let mgr
let waiter
before(async () => {
  server = await RedisServer.start()
  mgr = new LockManager(server.url)
  waiter = new LockManager(server.url)
})
after(async () => {
  await mgr.close()
  await waiter.close()
  await server.stop()
})

describe('AbortSignal', () => {
  it('aborting a waiting acquire rejects with AbortError and leaves no lock behind', async () => {
    const held = await mgr.acquire('abort-wait', { ttl: 60_000 })
    const controller = new AbortController()
    const pending = waiter.acquire('abort-wait', { ttl: 60_000, signal: controller.signal })
    setTimeout(() => controller.abort(new Error('user gave up')), 100)
    const t0 = Date.now()
    await assert.rejects(pending, (e) => {
      assert.ok(e instanceof AbortError && e instanceof LockError)
      assert.equal(e.name, 'AbortError')
      assert.equal(e.code, 'ABORT_ERR')
      assert.equal(e.cause.message, 'user gave up')
      return true
    })
    assert.ok(Date.now() - t0 < 2000, 'stopped waiting at once')
    await held.release()
    // The aborted waiter must not take the lock afterwards.
    assert.equal(await server.get('abort-wait'), null)
    const next = await mgr.tryAcquire('abort-wait')
    assert.ok(next, 'free after the holder released')
    await next.release()
  })

  it('a process that aborts its wait, closes its manager and exits leaves no place in line', async () => {
    // Issue 51 item 4: the withdrawal runs in the background; close() settles after it, so a
    // program that closes its manager and exits at once leaves nothing for others to wait out.
    const held = await mgr.acquire('abort-exit', { ttl: 60_000 })
    const script = `
      const { LockManager } = require(${JSON.stringify(require.resolve('../index.js'))})
      const m = new LockManager(process.argv[1])
      const controller = new AbortController()
      m.acquire('abort-exit', { ttl: 60_000, signal: controller.signal }).catch(async (e) => {
        await m.close()
        process.exit(e.name === 'AbortError' ? 0 : 1)
      })
      process.stdin.once('data', () => controller.abort())
    `
    for (let i = 0; i < 3; i++) {
      const child = spawn(process.execPath, ['-e', script, server.url], { stdio: ['pipe', 'inherit', 'inherit'] })
      const exited = new Promise((resolve) => child.once('exit', resolve))
      while ((await server.queued('abort-exit')) === 0) await new Promise((r) => setTimeout(r, 5))
      child.stdin.write('abort\n')
      assert.equal(await exited, 0)
      assert.equal(await server.queued('abort-exit'), 0, 'a place was left behind')
    }
    await held.release()
  })

  it('aborts racing with acquisitions leave no lock behind', async () => {
    // Each acquire is aborted at a different moment: before, during or after its attempt.
    // Whatever it had won is released; a lock left behind would block the final acquire
    // for its 60 s TTL.
    const attempts = []
    for (let i = 0; i < 30; i++) {
      const controller = new AbortController()
      attempts.push(waiter.acquire('abort-race', { ttl: 60_000, signal: controller.signal }).then((lock) => lock.release(), () => {}))
      setTimeout(() => controller.abort(), i % 5)
    }
    await Promise.all(attempts)
    const lock = await mgr.acquire('abort-race', { wait: 5000 })
    await lock.release()
  })

  it('an already aborted signal rejects before any network call', async () => {
    const dead = new LockManager('redis://127.0.0.1:1')
    const reason = new Error('already')
    await assert.rejects(dead.acquire('n', { signal: AbortSignal.abort(reason) }), (e) => e.code === 'ABORT_ERR' && e.cause === reason)
    await assert.rejects(dead.tryAcquire('n', { signal: AbortSignal.abort() }), { name: 'AbortError' })
  })

  it('AbortSignal.timeout bounds a wait', async () => {
    const held = await mgr.acquire('abort-timeout', { ttl: 60_000 })
    await assert.rejects(waiter.acquire('abort-timeout', { signal: AbortSignal.timeout(150) }), (e) => {
      assert.equal(e.code, 'ABORT_ERR')
      assert.equal(e.cause.name, 'TimeoutError')
      return true
    })
    await held.release()
  })

  it('a signal that never aborts does not disturb the acquisition', async () => {
    const controller = new AbortController()
    const lock = await waiter.acquire('abort-unused', { signal: controller.signal })
    controller.abort() // too late: the lock is held and stays held
    assert.equal(await server.get('abort-unused'), lock.token)
    await lock.release()
  })
})

describe('the event loop', () => {
  it('keeps ticking while an acquire waits', async () => {
    const held = await mgr.acquire('loop', { ttl: 60_000 })
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    await assert.rejects(waiter.acquire('loop', { wait: 600 }), { code: 'ERR_NOT_ACQUIRED' })
    clearInterval(timer)
    assert.ok(ticks >= 20, `only ${ticks} ticks of 10 ms in a 600 ms wait`)
    await held.release()
  })

  it('keeps ticking while calls wait on a stopped server', async () => {
    const s = await RedisServer.start()
    const m = new LockManager(s.url, { serverTimeout: 300 })
    s.proc.kill('SIGSTOP')
    let ticks = 0
    const timer = setInterval(() => ticks++, 10)
    await assert.rejects(m.acquire('paused', { wait: 0 }), { code: 'ERR_UNAVAILABLE' })
    clearInterval(timer)
    s.proc.kill('SIGCONT')
    assert.ok(ticks >= 10, `only ${ticks} ticks during a 300 ms server timeout`)
    await m.close()
    await s.stop()
  })
})

describe('a shared AbortSignal', () => {
  it('serves many acquisitions with one listener and aborts them all', async () => {
    const warnings = []
    const onWarning = (w) => warnings.push(w)
    process.on('warning', onWarning)
    const held = await mgr.acquire('shared-signal', { ttl: 60_000 })
    const controller = new AbortController()
    const waiting = Array.from({ length: 25 }, () =>
      mgr.acquire('shared-signal', { ttl: 1000, signal: controller.signal }),
    )
    await new Promise((r) => setImmediate(r))
    controller.abort(new Error('all of them'))
    for (const p of waiting) await assert.rejects(p, { name: 'AbortError', code: 'ABORT_ERR' })
    await new Promise((r) => setImmediate(r))
    process.off('warning', onWarning)
    assert.deepEqual(warnings.filter((w) => w.name === 'MaxListenersExceededWarning'), [])
    await held.release()
  })
})

