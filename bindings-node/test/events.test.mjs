// The debug hook: onEvent listeners see the core's events (acquired, lock lost, ...) with the
// lock name and never the token; unsubscribing stops delivery; a registered listener does not
// keep the process alive; NODE_DEBUG=fencelock prints the events to stderr.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { serverWithManager, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, onEvent, InvalidArgumentError } = require('../index.js')
const entry = fileURLToPath(new URL('../index.js', import.meta.url))

let server
let mgr
serverWithManager(LockManager, (s, m) => {
  server = s
  mgr = m
})

/** Resolves once `events` holds an event matching `pred`; rejects after `ms`. */
/** The first of `events` that `pred` accepts, once one arrives. */
function eventually(events, pred, ms = 5000) {
  return waitUntil(() => events.find(pred), `such an event among ${events.length} seen`, ms)
}

/** Runs `node -e script` with `env`; resolves to { code, stdout, stderr, ms }. */
function node(script, env = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now()
    const child = spawn(process.execPath, ['-e', script], {
      env: { ...process.env, FENCELOCK_ENTRY: entry, FENCELOCK_URL: server.url, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
    child.on('error', reject)
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 })
    })
  })
}

describe('onEvent', () => {
  it('sees acquired and lock lost with the lock name, never the token', async () => {
    const events = []
    const off = onEvent((e) => events.push(e))
    try {
      const lock = await mgr.acquire('observed-lock', { ttl: 600, autoExtend: true })
      const token = lock.token
      const acquired = await eventually(events, (e) => e.message === 'acquired' && e.fields.lock?.includes('observed-lock'))
      assert.equal(acquired.level, 'debug')
      assert.equal(acquired.fields.fencing_token, String(lock.fencingToken))
      assert.ok(Number(acquired.fields.attempts) >= 1, JSON.stringify(acquired))
      await server.del('observed-lock')
      const lost = await eventually(events, (e) => e.message === 'lock lost')
      assert.equal(lost.level, 'warn')
      assert.match(lost.fields.lock, /observed-lock/)
      await assert.rejects(lock.release(), { code: 'ERR_LOCK_LOST' })
      for (const e of events) {
        assert.deepEqual(Object.keys(e).sort(), ['fields', 'level', 'message'])
        assert.ok(!JSON.stringify(e).includes(token), `token in ${JSON.stringify(e)}`)
        assert.notEqual(e.level, 'trace', 'the default level is debug')
      }
    } finally {
      off()
    }
  })

  it('trace level adds every acquire attempt; warn level only the losses', async () => {
    const trace = []
    const warn = []
    const offTrace = onEvent((e) => trace.push(e), { level: 'trace' })
    const offWarn = onEvent((e) => warn.push(e), { level: 'warn' })
    try {
      const lock = await mgr.acquire('levels', { ttl: 2000 })
      await lock.release()
      await eventually(trace, (e) => e.message === 'acquire attempt' && e.level === 'trace')
      await eventually(trace, (e) => e.message === 'release' && e.fields.lock.includes('levels'))
      assert.deepEqual(warn.filter((e) => e.fields.lock?.includes('levels')), [])
    } finally {
      assert.equal(offTrace(), true)
      assert.equal(offWarn(), true)
      assert.equal(offTrace(), false, 'a second unsubscribe does nothing')
    }
  })

  it('unsubscribing stops delivery', async () => {
    const kept = []
    const dropped = []
    const offKept = onEvent((e) => kept.push(e))
    const offDropped = onEvent((e) => dropped.push(e))
    try {
      await (await mgr.acquire('unsub-1', { ttl: 2000 })).release()
      await eventually(dropped, (e) => e.message === 'release' && e.fields.lock.includes('unsub-1'))
      offDropped()
      const before = dropped.length
      await (await mgr.acquire('unsub-2', { ttl: 2000 })).release()
      // The listener still subscribed sees the second lock; by then the other would have too.
      await eventually(kept, (e) => e.message === 'release' && e.fields.lock.includes('unsub-2'))
      await new Promise((r) => setTimeout(r, 50))
      assert.equal(dropped.length, before, JSON.stringify(dropped.slice(before)))
    } finally {
      offKept()
    }
  })

  it('rejects a bad listener or level', () => {
    for (const args of [[], [null], ['f'], [() => {}, 5], [() => {}, { level: 'verbose' }], [() => {}, { level: 3 }]]) {
      assert.throws(() => onEvent(...args), (e) => e instanceof InvalidArgumentError && e.code === 'ERR_INVALID_ARG', String(args))
    }
  })

  it('a registered listener does not keep the process alive', async () => {
    const script = `
      const { LockManager, onEvent } = require(process.env.FENCELOCK_ENTRY)
      let seen = 0
      onEvent(() => seen++)
      const m = new LockManager(process.env.FENCELOCK_URL)
      m.acquire('exit-test', { ttl: 60000 }).then(async (lock) => {
        await lock.release()
        await m.close()
        setTimeout(() => console.log('events', seen), 100)
      })
    `
    const r = await node(script)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^events [1-9]/)
    assert.ok(r.ms < 15_000, `exited after ${r.ms} ms`)
  })

  it('a worker thread that exits with a listener registered leaves the process working', async () => {
    const script = `
      const { Worker } = require('node:worker_threads')
      const { LockManager, onEvent } = require(process.env.FENCELOCK_ENTRY)
      const worker = new Worker(\`
        const { LockManager, onEvent } = require(process.env.FENCELOCK_ENTRY)
        onEvent(() => {})
        const m = new LockManager(process.env.FENCELOCK_URL)
        m.acquire('in-worker', { ttl: 5000 }).then((l) => l.release()).then(() => process.exit(0))
      \`, { eval: true })
      worker.on('exit', async (code) => {
        const seen = []
        const off = onEvent((e) => seen.push(e.message))
        const m = new LockManager(process.env.FENCELOCK_URL)
        for (let i = 0; i < 10; i++) await (await m.acquire('after-worker', { ttl: 5000 })).release()
        await m.close()
        setTimeout(() => { off(); console.log('worker', code, 'main saw', seen.length) }, 100)
      })
    `
    const r = await node(script)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^worker 0 main saw 20$/m)
  })

  it('a listener that throws raises an uncaught exception, as an EventEmitter listener does', async () => {
    const script = `
      const { LockManager, onEvent } = require(process.env.FENCELOCK_ENTRY)
      let caught = 0
      process.on('uncaughtException', (e) => { if (e.message === 'listener bug') caught++ })
      const off = onEvent(() => { throw new Error('listener bug') })
      const m = new LockManager(process.env.FENCELOCK_URL)
      m.acquire('throwing', { ttl: 5000 }).then(async (lock) => {
        await lock.release()
        await m.close()
        setTimeout(() => { off(); console.log('caught', caught) }, 100)
      })
    `
    const r = await node(script)
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stdout, /^caught 2$/m, 'acquired and release')
  })

  it('NODE_DEBUG=fencelock prints the events to stderr, without the token', async () => {
    const script = `
      const { LockManager } = require(process.env.FENCELOCK_ENTRY)
      const m = new LockManager(process.env.FENCELOCK_URL)
      m.acquire('debugged', { ttl: 60000 }).then(async (lock) => {
        console.log(lock.token)
        await lock.release()
        await m.close()
        setTimeout(() => {}, 100)
      })
    `
    const r = await node(script, { NODE_DEBUG: 'fencelock' })
    assert.equal(r.code, 0, r.stderr)
    const token = r.stdout.trim()
    assert.match(r.stderr, /^FENCELOCK \d+: debug acquired lock="debugged" .*fencing_token=\d+/m)
    assert.match(r.stderr, /^FENCELOCK \d+: debug release lock="debugged"/m)
    assert.ok(token.length > 0 && !r.stderr.includes(token), r.stderr)
    const quiet = await node(script)
    assert.equal(quiet.code, 0, quiet.stderr)
    assert.doesNotMatch(quiet.stderr, /FENCELOCK/)
  })
})
