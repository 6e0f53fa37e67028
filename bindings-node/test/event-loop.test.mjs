// Calls run on the JavaScript thread (the default, or FENCELOCK_NODE_IO=loop), their
// connections driven by its event loop, while auto-extension keeps connections of the core's
// own threads: a busy event loop delays the calls, never a lock's extension. With
// FENCELOCK_NODE_IO=runtime calls run on the runtime's threads. This file runs its own calls
// with `loop` (read at the first call), and child processes in each mode.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { LockManager } from '../index.js'
import { RedisServer } from './redis.mjs'

const index = fileURLToPath(new URL('../index.js', import.meta.url))
process.env.FENCELOCK_NODE_IO = 'loop'

let server
before(async () => {
  server = await RedisServer.start()
})
after(async () => {
  await server.stop()
})

/** Keeps the JavaScript thread busy for `ms`, without giving the event loop a turn. */
function busy(ms) {
  const until = Date.now() + ms
  while (Date.now() < until) {
    // spin
  }
}

describe('the event loop', () => {
  it('a busy event loop does not stop auto-extension', async () => {
    const m = new LockManager(server.url)
    try {
      const lock = await m.acquire('busy-loop', { ttl: 300, autoExtend: true })
      // Three TTLs without a turn of the event loop: only extensions sent from another
      // thread keep the key.
      busy(900)
      assert.equal(await server.get('busy-loop'), lock.token)
      assert.equal(await lock.isHeld(), true)
      assert.equal(lock.lost, false)
      await lock.release()
      assert.equal(await server.get('busy-loop'), null)
    } finally {
      await m.close()
    }
  })

  it('calls started where a reply settled a call run before the loop waits again', async () => {
    // A reply read from a socket settles its call right there, and the Promise's reactions
    // run as that ends: what they start must not wait for the loop's next event. Here each
    // continuation starts a call that needs no server (a released lock's release), then one
    // that does; nothing else is pending, so a call left for the next poll would hang.
    const m = new LockManager(server.url)
    try {
      // A tick keeps the loop turning, so that a call left behind shows as time, not a hang.
      const tick = setInterval(() => {}, 1000)
      const started = Date.now()
      for (let i = 0; i < 20; i++) {
        const lock = await m.acquire(`settled-${i % 4}`, { ttl: 5000 })
        await lock.release()
        await assert.rejects(lock.release(), { code: 'ERR_LOCK_RELEASED' })
      }
      clearInterval(tick)
      // A hang, not a speed: 60 calls take well under a second here, and a call left for the
      // next tick would cost a second each time.
      assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`)
    } finally {
      await m.close()
    }
  })

  it('without autoExtend, the same busy spell loses the lock (the test above can fail)', async () => {
    const m = new LockManager(server.url)
    try {
      const lock = await m.acquire('busy-loop-2', { ttl: 300 })
      busy(900)
      assert.equal(await server.get('busy-loop-2'), null)
      assert.equal(await lock.isHeld(), false)
    } finally {
      await m.close()
    }
  })

  it('many calls at once from one thread all settle, in both modes', () => {
    const script = `
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      ;(async () => {
        const cycles = Array.from({ length: 200 }, async (_, i) => {
          const name = 'many-' + (i % 20)
          const lock = await m.acquire(name, { ttl: 5000 })
          const t = name + '/' + lock.fencingToken
          await lock.release()
          return t
        })
        const tokens = await Promise.all(cycles)
        await m.close()
        console.log(JSON.stringify({ n: tokens.length, distinct: new Set(tokens).size }))
      })()
    `
    for (const mode of ['loop', 'runtime', undefined]) {
      const r = child(script, mode)
      assert.equal(r.status, 0, `child (${mode ?? 'default'}) failed (signal ${r.signal}):\n${r.stdout}\n${r.stderr}`)
      // Every acquisition of a name gets a fencing token of its own: 200 pairs in all.
      assert.deepEqual(JSON.parse(r.stdout), { n: 200, distinct: 200 })
    }
  })

  it('calls run on the JavaScript thread by default and with loop, on the runtime with runtime', () => {
    // An acquire started just before the thread spins for 3 s: on the runtime its key is set
    // while the thread spins (about 7 s of the 10 s TTL left afterwards); on the event loop
    // nothing is sent until the spell ends (nearly all of it left).
    const script = `
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      ;(async () => {
        const name = 'mode-' + process.pid
        const pending = m.acquire(name, { ttl: 10000 })
        const until = Date.now() + 3000
        while (Date.now() < until) {}
        const lock = await pending
        const left = await m.remaining(name)
        await lock.release()
        await m.close()
        console.log(JSON.stringify({ left }))
      })()
    `
    for (const [mode, onLoop] of [[undefined, true], ['loop', true], ['runtime', false]]) {
      const r = child(script, mode)
      assert.equal(r.status, 0, `child (${mode ?? 'default'}) failed:\n${r.stdout}\n${r.stderr}`)
      const { left } = JSON.parse(r.stdout)
      assert.equal(left > 8500, onLoop, `${mode ?? 'default'}: ${left} ms of the TTL left after the spell`)
    }
  })

  it('an unknown FENCELOCK_NODE_IO is an InvalidArgumentError when a manager is made', () => {
    const script = `
      const { LockManager } = require(process.env.INDEX)
      try {
        new LockManager(process.env.URL)
        console.log('made')
      } catch (e) {
        console.log(JSON.stringify({ name: e.name, code: e.code, message: e.message }))
      }
    `
    const r = child(script, 'threads')
    assert.equal(r.status, 0, r.stderr)
    const e = JSON.parse(r.stdout)
    assert.equal(e.name, 'InvalidArgumentError')
    assert.equal(e.code, 'ERR_INVALID_ARG')
    assert.match(e.message, /FENCELOCK_NODE_IO must be "loop" \(the default\) or "runtime"/)
  })
})

/** Runs `script` in a child Node process with FENCELOCK_NODE_IO set to `mode` (unset: none). */
function child(script, mode) {
  const env = { ...process.env, URL: server.url, INDEX: index }
  if (mode) env.FENCELOCK_NODE_IO = mode
  else delete env.FENCELOCK_NODE_IO
  return spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', env, timeout: 30_000 })
}
