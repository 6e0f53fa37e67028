// What happens to locks the program lets go of: a collected Lock is not released (its key
// expires after its TTL), and neither a held lock nor its signal keeps Node running.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { RedisServer } from './redis.mjs'

const index = fileURLToPath(new URL('../index.js', import.meta.url))

let server
before(async () => {
  server = await RedisServer.start()
})
after(async () => {
  await server.stop()
})

function node(args, script) {
  const r = spawnSync(process.execPath, [...args, '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, URL: server.url, INDEX: index },
    timeout: 20_000,
  })
  assert.equal(r.status, 0, `child failed (signal ${r.signal}):\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

describe('worker threads', () => {
  it('each worker loads its own copy with its own error classes', async () => {
    const { Worker } = await import('node:worker_threads')
    const source = `
      const { parentPort } = require('node:worker_threads')
      const { LockManager, InvalidArgumentError } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      ;(async () => {
        const lock = await m.acquire('from-worker', { ttl: 5000 })
        const bad = await m.acquire('').catch((e) => e)
        await lock.release()
        parentPort.postMessage({ token: lock.token, invalid: bad instanceof InvalidArgumentError, code: bad.code })
      })()
    `
    const results = await Promise.all(
      [0, 1].map(
        () =>
          new Promise((resolve, reject) => {
            const w = new Worker(source, { eval: true, env: { ...process.env, URL: server.url, INDEX: index } })
            w.once('message', resolve)
            w.once('error', reject)
          }),
      ),
    )
    for (const r of results) {
      assert.match(r.token, /^[0-9a-f]{16}\.[0-9a-f-]{36}$/)
      assert.equal(r.invalid, true)
      assert.equal(r.code, 'ERR_INVALID_ARG')
    }
    assert.equal(await server.get('from-worker'), null)
  })
})

describe('settling calls', () => {
  // Every JavaScript thread settles its calls from one queue: each Promise must still get
  // its own call's outcome, whatever order the calls finish in.
  it('many calls in flight each settle with their own outcome', async () => {
    const { LockManager } = await import('../index.mjs')
    const m = new LockManager(server.url)
    try {
      const n = 300
      // Two tryAcquires per name (one wins, one gets null), a rejected call between them.
      const calls = []
      for (let i = 0; i < n; i++) {
        calls.push(m.tryAcquire(`settle-${i}`, { ttl: 10_000 }))
        calls.push(m.tryAcquire('', { ttl: 10_000 }).then(() => 'resolved', (e) => e.code))
        calls.push(m.tryAcquire(`settle-${i}`, { ttl: 10_000 }))
      }
      const out = await Promise.all(calls)
      for (let i = 0; i < n; i++) {
        const [a, bad, b] = out.slice(3 * i, 3 * i + 3)
        assert.equal(bad, 'ERR_INVALID_ARG', `call ${3 * i + 1}`)
        const won = [a, b].filter((l) => l !== null)
        assert.equal(won.length, 1, `exactly one of the pair on settle-${i} won`)
        assert.equal(won[0].name, `settle-${i}`, 'the lock of its own call')
        assert.equal(await server.get(`settle-${i}`), won[0].token)
      }
      await Promise.all(out.filter((l) => l && typeof l === 'object').map((l) => l.release()))
      assert.equal(await server.get('settle-0'), null)
    } finally {
      await m.close()
    }
  })

  it('a worker terminated with calls in flight leaves the process working', async () => {
    const { Worker } = await import('node:worker_threads')
    const source = `
      const { parentPort } = require('node:worker_threads')
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      for (let i = 0; i < 200; i++) m.acquire('worker-flight-' + (i % 20), { ttl: 2000, wait: 5000 }).catch(() => {})
      parentPort.postMessage('started')
    `
    for (let round = 0; round < 3; round++) {
      const w = new Worker(source, { eval: true, env: { ...process.env, URL: server.url, INDEX: index } })
      await new Promise((resolve, reject) => {
        w.once('message', resolve)
        w.once('error', reject)
      })
      await w.terminate()
    }
    const { LockManager } = await import('../index.mjs')
    const m = new LockManager(server.url)
    const lock = await m.acquire('after-workers', { ttl: 1000 })
    assert.equal(await server.get('after-workers'), lock.token)
    await lock.release()
    await m.close()
  })

  it('process.exit with calls in flight exits cleanly', () => {
    const out = node(
      [],
      `
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      for (let i = 0; i < 200; i++) m.tryAcquire('exit-flight-' + i, { ttl: 2000 }).catch(() => {})
      setImmediate(() => { console.log('exiting'); process.exit(0) })
      `,
    )
    assert.match(out, /exiting/)
  })
})

describe('lock lifetime', () => {
  it('a garbage-collected lock is not released: it expires after its TTL', async () => {
    const out = node(
      ['--expose-gc'],
      `
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      process.on('warning', (w) => console.log('warning', w.name, w.code, w.message))
      let collected = false
      const registry = new FinalizationRegistry(() => { collected = true })
      ;(async () => {
        await (async () => {
          const lock = await m.acquire('collected', { ttl: 60000, autoExtend: true })
          registry.register(lock, 'lock')
          console.log('token', lock.token)
        })()
        for (let i = 0; i < 50 && !collected; i++) {
          global.gc()
          await new Promise((r) => setTimeout(r, 20))
        }
        // Give a (wrong) release on collection ample time to happen.
        await new Promise((r) => setTimeout(r, 300))
        console.log('collected', collected)
      })()
      `,
    )
    assert.match(out, /collected true/)
    // It was auto-extended: the program is told, naming the lock.
    assert.match(out, /warning ResourceWarning FENCELOCK_ABANDONED fencelock lock "collected" \(fencing token \d+\) was garbage-collected while held and auto-extended/)
    const token = out.match(/token (\S+)/)[1]
    assert.equal(await server.get('collected'), token, 'still held after collection')
    const pttl = await server.pttl('collected')
    assert.ok(pttl > 50_000 && pttl <= 60_000, `expires on its own TTL (pttl ${pttl})`)
    await server.del('collected')
  })

  it('a lock whose last use is release() is released, however soon it is collected', async () => {
    // `await (await m.acquire(...)).release()` drops the last reference to the Lock while its
    // release is still queued for the tokio thread; collection in between must not abandon it.
    const out = node(
      ['--expose-gc'],
      `
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      let errors = 0, cycles = 0, running = true
      const collector = setInterval(() => global.gc(), 5)
      const task = async (i) => {
        while (running) {
          try {
            await (await m.acquire('gc-' + i, { ttl: 60000, wait: 0 })).release()
            cycles++
          } catch (e) {
            if (errors++ === 0) console.error(e)
          }
        }
      }
      setTimeout(() => { running = false }, 1500)
      Promise.all(Array.from({ length: 64 }, (_, i) => task(i))).then(async () => {
        clearInterval(collector)
        await m.close()
        console.log('cycles', cycles, 'errors', errors)
      })
      `,
    )
    const [, cycles, errors] = out.match(/cycles (\d+) errors (\d+)/).map(Number)
    assert.ok(cycles > 100, `the loop ran (${cycles} cycles)`)
    assert.equal(errors, 0, `every acquire and release succeeded (${cycles} cycles)`)
    const left = []
    for (let i = 0; i < 64; i++) if ((await server.get('gc-' + i)) !== null) left.push(i)
    assert.deepEqual(left, [], 'no lock left behind')
  })

  it('a held lock with a watched signal does not keep Node running', async () => {
    const t0 = Date.now()
    const out = node(
      [],
      `
      const { LockManager } = require(process.env.INDEX)
      const m = new LockManager(process.env.URL)
      m.acquire('held-at-exit', { ttl: 60000, autoExtend: true }).then((lock) => {
        lock.signal.addEventListener('abort', () => console.log('aborted'))
        console.log('holding', lock.token)
      })
      `,
    )
    assert.ok(Date.now() - t0 < 10_000, 'the child exited on its own')
    assert.match(out, /holding/)
    assert.doesNotMatch(out, /aborted/)
    await server.del('held-at-exit')
  })

  it('a waiting acquire keeps Node running until it settles', () => {
    const out = node(
      [],
      `
      const { LockManager } = require(process.env.INDEX)
      const a = new LockManager(process.env.URL)
      const b = new LockManager(process.env.URL)
      a.acquire('wait-at-exit', { ttl: 300 }).then(async () => {
        const lock = await b.acquire('wait-at-exit', { ttl: 1000 })
        console.log('got it after the first expired')
        await lock.release()
      })
      `,
    )
    assert.match(out, /got it after the first expired/)
  })
})
