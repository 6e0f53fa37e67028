// Every public method of LockManager and Lock against a real redis-server, and the error
// classes and argument checks.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { inspect } from 'node:util'

import * as esm from '../index.mjs'
import { RedisServer, freePort, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const cjs = require('../index.js')
const native = require('../native.js')
const {
  LockManager,
  Lock,
  LockError,
  InvalidArgumentError,
  NotAcquiredError,
  LockLostError,
  LockReleasedError,
  UnavailableError,
  ServerError,
  AbortError,
} = cjs

let server
let mgr
let other
before(async () => {
  server = await RedisServer.start()
  mgr = new LockManager(server.url)
  other = new LockManager([server.url])
})
after(async () => {
  await mgr.close()
  await other.close()
  await server.stop()
})

describe('module', () => {
  it('CommonJS and ESM export the same objects', () => {
    for (const name of Object.keys(cjs)) assert.equal(esm[name], cjs[name], name)
    assert.equal(esm.default, cjs)
    assert.equal(typeof LockManager, 'function')
  })

  it('every error kind of the core maps to a LockError subclass with its code', () => {
    const table = native.__errorTable()
    assert.equal(table.length, 8, 'seven core kinds plus the binding usage error')
    const codes = new Set()
    for (const row of table) {
      const cls = cjs[row.className]
      assert.equal(typeof cls, 'function', `${row.className} is exported`)
      const e = new cls('m')
      assert.ok(e instanceof LockError && e instanceof Error, row.className)
      assert.equal(e.code, row.code)
      assert.equal(cls.code, row.code)
      assert.equal(e.name, row.className)
      codes.add(row.code)
    }
    assert.deepEqual(
      [...codes].sort(),
      ['ABORT_ERR', 'ERR_INVALID_ARG', 'ERR_LOCK_LOST', 'ERR_LOCK_RELEASED', 'ERR_NOT_ACQUIRED', 'ERR_REDIS', 'ERR_UNAVAILABLE', 'ERR_WRONG_KIND'],
    )
    assert.equal(new AbortError('x').name, 'AbortError')
    assert.ok(!(new TypeError('x') instanceof LockError), 'only InvalidArgumentError among TypeErrors')
    assert.ok(!(new InvalidArgumentError('x') instanceof NotAcquiredError))
    const withCause = new LockLostError('m', { cause: 'why' })
    assert.equal(withCause.cause, 'why')
  })

  it('package.json has the workspace version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
    const cargo = readFileSync(new URL('../../Cargo.toml', import.meta.url), 'utf8')
    const workspace = cargo.slice(cargo.indexOf('[workspace.package]'))
    const version = workspace.match(/^version\s*=\s*"([^"]+)"/m)[1]
    assert.equal(pkg.version, version)
    assert.equal(pkg.name, 'fencelock')
  })

  it('Lock cannot be constructed from JavaScript', () => {
    assert.throws(() => new Lock())
  })
})

describe('arguments are checked before any network call', () => {
  // A manager whose server does not exist: a network call would give ERR_UNAVAILABLE.
  const dead = new LockManager('redis://127.0.0.1:1', { serverTimeout: 50 })
  const bad = [
    ['empty name', () => dead.acquire('')],
    ['number name', () => dead.acquire(42)],
    ['object name', () => dead.acquire({})],
    ['missing name', () => dead.acquire()],
    ['negative ttl', () => dead.acquire('n', { ttl: -1 })],
    ['NaN ttl', () => dead.acquire('n', { ttl: NaN })],
    ['zero ttl', () => dead.acquire('n', { ttl: 0 })],
    ['Infinity ttl', () => dead.acquire('n', { ttl: Infinity })],
    ['string ttl', () => dead.acquire('n', { ttl: '100' })],
    ['negative wait', () => dead.acquire('n', { wait: -5 })],
    ['string wait', () => dead.acquire('n', { wait: '5' })],
    ['empty token', () => dead.acquire('n', { token: '' })],
    ['number token', () => dead.acquire('n', { token: 7 })],
    ['oversized token', () => dead.acquire('n', { token: 'x'.repeat(513) })],
    ['oversized name', () => dead.acquire('x'.repeat(1025))],
    ['reserved name', () => dead.acquire('fencelock:{1}:fence')],
    ['non-boolean autoExtend', () => dead.acquire('n', { autoExtend: 'yes' })],
    ['non-object options', () => dead.acquire('n', 5)],
    ['non-signal signal', () => dead.acquire('n', { signal: {} })],
    ['tryAcquire with wait', () => dead.tryAcquire('n', { wait: 10 })],
    ['release with empty token', () => dead.release('n', '')],
    ['release with number token', () => dead.release('n', 1)],
    ['using without callback', () => dead.using('n', {})],
  ]
  for (const [what, call] of bad) {
    it(`rejects ${what} with ERR_INVALID_ARG`, async () => {
      const p = call()
      assert.ok(p instanceof Promise, 'async methods reject, they do not throw')
      await assert.rejects(p, (e) => {
        assert.ok(e instanceof InvalidArgumentError && e instanceof LockError, String(e))
        assert.ok(e instanceof TypeError, 'a TypeError, as Node argument errors are')
        assert.equal(e.name, 'InvalidArgumentError')
        assert.equal(e.code, 'ERR_INVALID_ARG')
        return true
      })
    })
  }

  it('the constructor throws for bad servers and options', () => {
    const cases = [
      [],
      [123],
      [[]],
      [['redis://127.0.0.1:1', 5]],
      ['localhost:6379'],
      ['http://x'],
      [['redis://127.0.0.1:1', 'redis://127.0.0.1:1']],
      ['redis://127.0.0.1:1', 'opts'],
      ['redis://127.0.0.1:1', { retryDelay: -1 }],
      ['redis://127.0.0.1:1', { retryDelay: 0 }],
      ['redis://127.0.0.1:1', { driftFactor: 0.7 }],
      ['redis://127.0.0.1:1', { driftFactor: 'a' }],
      ['redis://127.0.0.1:1', { retryDelay: 100, retryJitter: 200 }],
      ['redis://127.0.0.1:1', { serverTimeout: NaN }],
      ['redis://127.0.0.1:1', { keyPrefix: 3 }],
    ]
    for (const args of cases) {
      assert.throws(
        () => new LockManager(...args),
        (e) => e instanceof InvalidArgumentError && e.code === 'ERR_INVALID_ARG',
        JSON.stringify(args),
      )
    }
  })

  it('a misspelled option is refused, naming it and the options there are', async () => {
    assert.throws(
      () => new LockManager('redis://127.0.0.1:1', { retryDely: 100 }),
      (e) => e.code === 'ERR_INVALID_ARG' && e.message.includes('"retryDely"') && e.message.includes('retryDelay'),
    )
    await assert.rejects(mgr.acquire('n', { ttl: 1000, autoExtends: true }), (e) =>
      e.code === 'ERR_INVALID_ARG' && e.message.includes('"autoExtends"') && e.message.includes('autoExtend'),
    )
    await assert.rejects(mgr.tryAcquire('n', { ttl: 1000, timeout: 5 }), (e) =>
      e.code === 'ERR_INVALID_ARG' && e.message.includes('"timeout"'),
    )
    await assert.rejects(mgr.using('n', { tll: 1000 }, async () => 1), { code: 'ERR_INVALID_ARG' })
  })

  it('a name or token with a lone surrogate is refused, a real U+FFFD is not', async () => {
    await assert.rejects(mgr.tryAcquire('a\ud800b'), (e) => e.code === 'ERR_INVALID_ARG' && /name holds a lone surrogate/.test(e.message))
    await assert.rejects(mgr.tryAcquire('x', { token: 't\udfff' }), (e) => e.code === 'ERR_INVALID_ARG' && /token holds a lone surrogate/.test(e.message))
    const lock = await mgr.tryAcquire('replacement-\ufffd-char')
    assert.ok(lock)
    await lock.release()
  })

  it('a sparse servers array is refused before anything is allocated for it', () => {
    const sparse = []
    sparse.length = 2 ** 32 - 1
    assert.throws(() => new LockManager(sparse), (e) => e.code === 'ERR_INVALID_ARG' && e.message.includes('limit is 64'))
  })

  it('messages never contain a password', () => {
    assert.throws(
      () => new LockManager(['redis://:hunter2@127.0.0.1:99999']),
      (e) => e.code === 'ERR_INVALID_ARG' && !e.message.includes('hunter2'),
    )
  })

  it('a ttl the drift rule can never grant is refused naming the minimum', async () => {
    const m = new LockManager(`redis://127.0.0.1:${await freePort()}`)
    try {
      for (const ttl of [1, 2]) {
        await assert.rejects(m.acquire('x', { ttl }), (e) => e.code === 'ERR_INVALID_ARG' && /at least 3 ms/.test(e.message))
      }
    } finally {
      await m.close()
    }
  })

  it('an unreachable server is ERR_UNAVAILABLE, not a bad argument', async () => {
    await assert.rejects(dead.acquire('n', { wait: 0 }), (e) => e instanceof UnavailableError && e.code === 'ERR_UNAVAILABLE')
    await assert.rejects(dead.tryAcquire('n'), { code: 'ERR_UNAVAILABLE' })
  })
})

describe('LockManager and Lock', () => {
  it('acquire, getters, extend and release round trip', async () => {
    const lock = await mgr.acquire('round-trip', { ttl: 2000 })
    assert.ok(lock instanceof Lock)
    assert.equal(lock.name, 'round-trip')
    assert.match(lock.token, /^[0-9a-f]{16}\.[0-9a-f-]{36}$/)
    assert.equal(await server.get('round-trip'), lock.token, 'the key holds the token')
    assert.equal(typeof lock.fencingToken, 'bigint')
    assert.ok(lock.fencingToken >= 1n)
    assert.ok(lock.validity > 1500 && lock.validity <= 2000, `validity ${lock.validity}`)
    assert.equal(lock.lost, false)
    assert.equal(lock.signal.aborted, false)
    assert.equal(lock.signal, lock.signal, 'one signal per lock')

    await lock.extend(10_000)
    assert.ok((await server.pttl('round-trip')) > 9000)
    assert.ok(lock.validity > 9000)
    await lock.extend()
    assert.ok((await server.pttl('round-trip')) > 9000, 'extend() reuses the last ttl')

    await lock.release()
    assert.equal(await server.get('round-trip'), null)
    assert.equal(lock.validity, 0)
    assert.equal(lock.lost, false)
    assert.equal(lock.signal.aborted, false, 'a release is not a loss')
  })

  it('inspecting a lock shows its name and fencing token, never its token', async () => {
    const lock = await mgr.acquire('inspected')
    const shown = inspect(lock)
    assert.match(shown, /^Lock \{.*name: 'inspected'.*fencingToken: \d+n/s)
    assert.ok(!shown.includes(lock.token), shown)
    await lock.release()
  })

  it('tryAcquire with autoExtend keeps the lock alive', async () => {
    const lock = await mgr.tryAcquire('try-extend', { ttl: 300, autoExtend: true })
    await new Promise((r) => setTimeout(r, 700))
    assert.equal(await server.get('try-extend'), lock.token)
    assert.equal(lock.lost, false)
    await lock.release()
  })

  it('the default ttl is 30 s', async () => {
    const lock = await mgr.acquire('default-ttl')
    const pttl = await server.pttl('default-ttl')
    assert.ok(pttl > 29_000 && pttl <= 30_000, `pttl ${pttl}`)
    await lock.release()
  })

  it('fencing tokens grow with every acquisition of a name, across managers', async () => {
    const a = await mgr.acquire('fence-a')
    await a.release()
    const b = await other.acquire('fence-a')
    await b.release()
    const c = await mgr.acquire('fence-a')
    assert.ok(a.fencingToken < b.fencingToken && b.fencingToken < c.fencingToken)
    await c.release()
  })

  it('releasing or extending a released lock is ERR_LOCK_RELEASED; dispose is then a no-op', async () => {
    const lock = await mgr.acquire('twice')
    await lock.release()
    await assert.rejects(lock.release(), (e) => e instanceof LockReleasedError && e.code === 'ERR_LOCK_RELEASED')
    await assert.rejects(lock.extend(1000), { code: 'ERR_LOCK_RELEASED' })
    await lock[Symbol.asyncDispose]()
  })

  it('Symbol.asyncDispose releases a held lock', async () => {
    const lock = await mgr.acquire('dispose')
    await lock[Symbol.asyncDispose]()
    assert.equal(await server.get('dispose'), null)
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_RELEASED' })
  })

  it('concurrent release and extend settle cleanly', async () => {
    const lock = await mgr.acquire('race', { ttl: 5000 })
    const results = await Promise.allSettled([lock.extend(5000), lock.release(), lock.extend(5000), lock.release()])
    // Calls not awaited in between run in some order: exactly one release wins, every other
    // call either ran before it or finds the lock released.
    const releases = [results[1], results[3]]
    assert.equal(releases.filter((r) => r.status === 'fulfilled').length, 1)
    for (const r of results) {
      if (r.status === 'rejected') assert.equal(r.reason.code, 'ERR_LOCK_RELEASED', String(r.reason))
    }
    assert.equal(await server.get('race'), null)
  })

  it('tryAcquire resolves to null when held, and to a lock when free', async () => {
    const held = await mgr.acquire('try')
    assert.equal(await other.tryAcquire('try'), null)
    await held.release()
    const lock = await other.tryAcquire('try', { ttl: 1000 })
    assert.ok(lock instanceof Lock)
    await lock.release()
  })

  it('a wait limit gives NotAcquiredError', async () => {
    const held = await mgr.acquire('busy', { ttl: 10_000 })
    const t0 = Date.now()
    await assert.rejects(other.acquire('busy', { wait: 200 }), (e) => {
      assert.ok(e instanceof NotAcquiredError && e instanceof LockError)
      assert.equal(e.code, 'ERR_NOT_ACQUIRED')
      assert.match(e.message, /busy/)
      return true
    })
    assert.ok(Date.now() - t0 >= 190, 'waited about the limit')
    await assert.rejects(other.acquire('busy', { wait: 0 }), { code: 'ERR_NOT_ACQUIRED' })
    await held.release()
  })

  it('a waiter is woken by the release', async () => {
    const held = await mgr.acquire('wake', { ttl: 60_000 })
    const waiting = other.acquire('wake', { wait: 20_000 })
    await waitUntil(async () => (await server.queued('wake')) === 1, 'the waiter is queued')
    await held.release()
    const t0 = Date.now()
    const lock = await waiting
    assert.ok(Date.now() - t0 < 5000, 'not the 60 s ttl')
    await lock.release()
  })

  it('release(name, token) releases a lock held elsewhere, and reports a wrong token', async () => {
    const lock = await mgr.acquire('handed')
    await assert.rejects(other.release('handed', 'not-the-token'), (e) => e instanceof LockLostError && e.code === 'ERR_LOCK_LOST')
    await other.release('handed', lock.token)
    assert.equal(await server.get('handed'), null)
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_LOST' }, 'the holder learns it was not held')
    assert.equal(lock.lost, true)
  })

  it('detach gives up the object without releasing: the lock is released by name and token', async () => {
    const lock = await mgr.acquire('detached', { ttl: 10_000, autoExtend: true })
    const token = lock.token
    lock.detach()
    assert.equal(await server.get('detached'), token, 'still held on the server')
    assert.equal(lock.lost, false)
    assert.equal(lock.validity, 0)
    assert.throws(() => lock.detach(), { code: 'ERR_LOCK_RELEASED' })
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_RELEASED' })
    assert.ok((await server.pttl('detached')) <= 10_000, 'auto-extension stopped with it')
    await other.release('detached', token)
    assert.equal(await server.get('detached'), null)
  })

  it('a ttl as long as node-redlock tests use is accepted; a longer one is refused in ms', async () => {
    const years = 28_500 * 365 * 24 * 3600 * 1000
    const lock = await mgr.acquire('very-long', { ttl: years })
    assert.ok(lock.validity > years * 0.98)
    await lock.release()
    await assert.rejects(mgr.acquire('very-long', { ttl: 2 ** 53 }), (e) => e.code === 'ERR_INVALID_ARG' && /got 9007199254740992 ms/.test(e.message))
  })

  it('extendBy adds to the remaining time; extend replaces it', async () => {
    const lock = await mgr.acquire('added', { ttl: 10_000 })
    await server.client().pexpire('added', 4000)
    await lock.extendBy(20_000)
    const pttl = await server.pttl('added')
    assert.ok(pttl > 23_000 && pttl <= 24_000, String(pttl))
    assert.ok(lock.validity > 22_000 && lock.validity <= 24_000, String(lock.validity))
    await lock.extend(5000)
    assert.ok((await server.pttl('added')) <= 5000)
    await assert.rejects(lock.extendBy(), { code: 'ERR_INVALID_ARG' })
    await assert.rejects(lock.extendBy(-1), { code: 'ERR_INVALID_ARG' })
    await lock.release()
    await assert.rejects(lock.extendBy(1000), { code: 'ERR_LOCK_RELEASED' })
  })

  it('isHeld asks the servers; manager.extend extends a lock by name and token', async () => {
    const lock = await mgr.acquire('held-q', { ttl: 10_000 })
    assert.equal(await lock.isHeld(), true)
    await server.client().set('held-q', 'someone-else')
    assert.equal(lock.lost, false, 'the local view cannot know')
    assert.equal(await lock.isHeld(), false)
    assert.equal(lock.lostReason, 'taken')
    assert.equal(lock.signal.aborted, true)

    const handed = await mgr.acquire('ext-q', { ttl: 2000 })
    const token = handed.token
    handed.detach()
    const validity = await other.extend('ext-q', token, 30_000)
    assert.ok(validity > 29_000 && validity <= 30_000, String(validity))
    assert.ok((await server.pttl('ext-q')) > 29_000)
    await assert.rejects(other.extend('ext-q', 'not-the-token', 30_000), { code: 'ERR_LOCK_LOST' })
    await assert.rejects(other.extend('ext-q', token, 2), { code: 'ERR_INVALID_ARG' })
    await other.release('ext-q', token)

    const released = await mgr.acquire('rel-q', { ttl: 5000 })
    await released.release()
    assert.equal(await released.isHeld(), false)
  })

  it('names and tokens may be Buffers; a token is exclusive unless reentrant', async () => {
    const name = Buffer.from([0x66, 0x00, 0xff])
    const token = Buffer.from('my-token')
    const lock = await mgr.acquire(name, { token, ttl: 1000 })
    assert.equal(lock.token, 'my-token')
    const c = server.client()
    assert.equal((await c.getBuffer(name)).toString(), 'my-token')
    // Another process passing the same token is refused, as SET NX with a request id is.
    const refused = await other.acquire(name, { token: 'my-token', ttl: 20_000, wait: 0 }).catch((e) => e)
    assert.equal(refused.code, 'ERR_NOT_ACQUIRED')
    assert.match(refused.message, /reentrant/)
    assert.deepEqual(refused.servers.map((r) => r.outcome), ['held'])
    assert.match(refused.servers[0].detail, /this token/)
    assert.equal(await other.tryAcquire(name, { token: 'my-token', ttl: 20_000 }), null)
    assert.ok((await c.pttl(name)) <= 1000, 'the refused acquisitions changed nothing')
    await assert.rejects(other.acquire(name, { token, reentrant: 'yes' }), { code: 'ERR_INVALID_ARG' })
    const again = await other.acquire(name, { token: 'my-token', ttl: 20_000, wait: 0, reentrant: true })
    assert.ok((await c.pttl(name)) > 10_000, 'TTL reset by the re-entrant acquire')
    assert.ok(again.fencingToken > lock.fencingToken)
    await other.release(name, token)
    await assert.rejects(again.release(), { code: 'ERR_LOCK_LOST' })
    await assert.rejects(lock.release(), { code: 'ERR_LOCK_LOST' })
  })

  it('a failed acquire says what each server answered (error.servers)', async () => {
    const c = server.client()
    await c.set('servers-held', 'another-owner', 'PX', 60_000)
    const e = await mgr.acquire('servers-held', { wait: 0 }).catch((x) => x)
    assert.equal(e.code, 'ERR_NOT_ACQUIRED')
    assert.equal(e.servers.length, 1)
    assert.equal(e.servers[0].outcome, 'held')
    assert.match(e.servers[0].server, /127\.0\.0\.1:\d+/)
    assert.match(e.servers[0].detail, /another owner for \d+ ms/)
    const bad = await mgr.acquire('', {}).catch((x) => x)
    assert.equal(bad.code, 'ERR_INVALID_ARG')
    assert.deepEqual(bad.servers, [])
  })

  it('keyPrefix prefixes the key', async () => {
    const prefixed = new LockManager(server.url, { keyPrefix: 'app:', retryDelay: 50, retryJitter: 10, driftFactor: 0.02, serverTimeout: 500 })
    const lock = await prefixed.acquire('k')
    assert.equal(await server.get('app:k'), lock.token)
    await lock.release()
    await prefixed.close()
  })

  it('a key of the wrong type is ServerError (ERR_REDIS)', async () => {
    const c = server.client()
    await c.rpush('a-list', 'x')
    await assert.rejects(mgr.acquire('a-list', { wait: 0 }), (e) => e instanceof ServerError && e.code === 'ERR_REDIS')
    await c.del('a-list')
  })

  it('using resolves to the callback result and releases', async () => {
    let seen
    const out = await mgr.using('scoped', { ttl: 1000 }, async (lock, signal) => {
      seen = lock
      assert.equal(await server.get('scoped'), lock.token)
      assert.equal(signal, lock.signal)
      assert.equal(signal.aborted, false)
      return 42
    })
    assert.equal(out, 42)
    assert.equal(await server.get('scoped'), null)
    await assert.rejects(seen.release(), { code: 'ERR_LOCK_RELEASED' })
    assert.equal(await mgr.using('scoped', () => 'no options'), 'no options')
  })

  it('using releases and rethrows when the callback throws', async () => {
    await assert.rejects(
      mgr.using('scoped-throw', {}, async () => {
        throw new Error('boom')
      }),
      /boom/,
    )
    assert.equal(await server.get('scoped-throw'), null)
  })

  it('close makes later calls reject and keeps held locks usable', async () => {
    const m = new LockManager(server.url)
    const lock = await m.acquire('closing')
    await m.close()
    await assert.rejects(m.acquire('closing-2'), { code: 'ERR_INVALID_ARG' })
    await assert.rejects(m.release('closing', lock.token), { code: 'ERR_INVALID_ARG' })
    await lock.extend(5000)
    await lock.release()
    await m.close()
    const n = new LockManager(server.url)
    await n[Symbol.asyncDispose]()
    await assert.rejects(n.tryAcquire('x'), { code: 'ERR_INVALID_ARG' })
  })
})

describe('a hung server', () => {
  it('a wait limit holds: wait plus one server timeout, not three in a row', async () => {
    // Issue 20, item 3.
    const hung = await RedisServer.start()
    const m = new LockManager(hung.url, { serverTimeout: 2000 })
    try {
      await (await m.acquire('warm', { ttl: 5000 })).release()
      hung.pause()
      const t0 = Date.now()
      await assert.rejects(m.acquire('hung', { ttl: 60_000, wait: 300 }), { code: 'ERR_UNAVAILABLE' })
      const took = Date.now() - t0
      assert.ok(took < 300 + 2000 + 1500, `returned after ${took} ms`)
    } finally {
      hung.resume()
      await m.close()
      await hung.stop()
    }
  })
})

