// fencelock/compat/redis-semaphore, the redis-semaphore drop-in (issue 55): its surface and
// argument errors as the library's, the key a Mutex holds, timeouts, aborts, a lost lease's
// callback, stopRefresh, an externally acquired hold, the faults of redis-semaphore 5.8.0 it
// fixes (one object shared by concurrent acquires, callers with different lockTimeouts, a
// waiter for 3 permits starved by waiters for 1), the Redlock forms, and a rolling migration:
// the real redis-semaphore and the drop-in at once on the same names.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'
import { after, before, beforeEach, describe, it } from 'node:test'

import Redis from 'ioredis'
import * as old from 'redis-semaphore'

import * as esm from 'fencelock/compat/redis-semaphore'
import { RedisServer, startServers, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const cjs = require('fencelock/compat/redis-semaphore')
const { Mutex, Semaphore, MultiSemaphore, RedlockMutex, RedlockSemaphore, RedlockMultiSemaphore, LostLockError, TimeoutError, defaultTimeoutOptions } = cjs
const pkgDir = path.resolve(import.meta.dirname, '..')

const timeoutOptions = { lockTimeout: 300, acquireTimeout: 100, refreshInterval: 80, retryInterval: 10 }

let server
let client
before(async () => {
  server = await RedisServer.start()
  client = new Redis(server.url)
})
after(async () => {
  client.disconnect()
  await server.stop()
})
beforeEach(() => client.flushdb())

describe('the surface', () => {
  it('exports what redis-semaphore exports, the same objects from both module systems', () => {
    assert.deepEqual(Object.keys(esm).sort(), Object.keys(old).filter((k) => k !== 'default' && k !== '__esModule').sort())
    for (const k of Object.keys(esm)) assert.equal(esm[k], cjs[k], k)
    assert.deepEqual(defaultTimeoutOptions, old.defaultTimeoutOptions)
    // The ES module's types are the CommonJS ones, re-exported.
    assert.match(readFileSync(path.join(pkgDir, 'compat', 'redis-semaphore.d.mts'), 'utf8'), /^export \* from '\.\/redis-semaphore\.js'$/m)
  })

  it('refuses bad arguments with the library\'s messages, before any network call', () => {
    const cases = [
      [() => new Mutex(null, 'key'), '"client" is required'],
      [() => new Mutex(client, ''), '"key" is required'],
      [() => new Mutex(client, 1), '"key" must be a string'],
      [() => new Mutex(client, 'key', { identifier: '' }), 'identifier must be not empty random string'],
      [() => new Mutex(client, 'key', { acquiredExternally: true }), 'acquiredExternally=true meanless without custom identifier'],
      [() => new Mutex(client, 'key', { externallyAcquiredIdentifier: '1', identifier: '1' }), 'Invalid usage. Use custom identifier and acquiredExternally: true'],
      [() => new Semaphore(client, 'key'), '"limit" is required'],
      [() => new Semaphore(client, 'key', '2'), '"limit" must be a number'],
      [() => new MultiSemaphore(client, 'key', 3), '"permits" is required'],
      [() => new RedlockMutex(client, 'key'), '"clients" array is required'],
      [() => new RedlockSemaphore([client], 'key', 0), '"limit" is required'],
      [() => new RedlockMultiSemaphore([client], 'key', 3, '1'), '"permits" must be a number'],
      [() => new Mutex({}, 'key'), 'Mutex needs ioredis clients (Redis or Cluster instances)'],
    ]
    for (const [make, message] of cases) assert.throws(make, { message })
  })

  it('identifiers: a random UUID, a suffix, or the caller\'s', () => {
    assert.match(new Mutex(client, 'key').identifier, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    assert.match(new Mutex(client, 'key', { identifierSuffix: 'abc' }).identifier, /-abc$/)
    assert.equal(new Semaphore(client, 'key', 2, { identifier: 'job-7' }).identifier, 'job-7')
  })

  it('the objects over one client share their identifiers\' first 16 characters, so their waiters share one subscription', async () => {
    const ids = Array.from({ length: 50 }, () => new Semaphore(client, 'key', 1).identifier)
    assert.equal(new Set(ids).size, ids.length)
    assert.equal(new Set(ids.map((id) => id.slice(0, 16))).size, 1)
    assert.equal(new Mutex(client, 'key').identifier.slice(0, 16) === ids[0].slice(0, 16), false, 'a mutex is another manager')
    const subscribes = async () => Number((await client.info('commandstats')).match(/cmdstat_subscribe:calls=(\d+)/)?.[1] ?? 0)
    const before = await subscribes()
    // Six objects wait in turn on a semaphore of 1: each but the first is refused, waits in
    // line and is woken by the release before it.
    const holder = new Semaphore(client, 'waits', 1, timeoutOptions)
    await holder.acquire()
    const waiters = Array.from({ length: 6 }, () => new Semaphore(client, 'waits', 1, { ...timeoutOptions, acquireTimeout: 5000 }))
    const taken = waiters.map((w) => w.acquire().then(() => w.release()))
    const queued = async () => {
      const [queue] = await client.keys('semaphore:fencelock:*:queue:waits')
      return queue === undefined ? 0 : client.zcard(queue)
    }
    await waitUntil(async () => (await queued()) === 6, 'six objects in line')
    await holder.release()
    await Promise.all(taken)
    const sent = (await subscribes()) - before
    assert.ok(sent >= 1 && sent <= 2, `${sent} SUBSCRIBE for 6 waiting objects`)
  })
})

describe('Mutex', () => {
  it('holds redis-semaphore\'s key with its identifier, and releases it', async () => {
    const mutex = new Mutex(client, 'key')
    assert.equal(mutex.isAcquired, false)
    await mutex.acquire()
    assert.equal(mutex.isAcquired, true)
    assert.equal(await client.get('mutex:key'), mutex.identifier)
    await mutex.release()
    assert.equal(mutex.isAcquired, false)
    assert.equal(await client.get('mutex:key'), null)
  })

  it('times out with TimeoutError, tryAcquire with false, an abort with the signal\'s reason', async () => {
    const m1 = new Mutex(client, 'key', timeoutOptions)
    const m2 = new Mutex(client, 'key', timeoutOptions)
    await m1.acquire()
    await assert.rejects(m2.acquire(), (e) => e instanceof TimeoutError && e.message === 'Acquire mutex mutex:key timeout')
    assert.equal(await m2.tryAcquire(), false)
    const signal = AbortSignal.timeout(10)
    await assert.rejects(new Mutex(client, 'key', { ...timeoutOptions, acquireTimeout: 5000 }).acquire(signal), (e) => e === signal.reason)
    await m1.release()
    await waitUntil(async () => (await client.get('mutex:key')) === null, 'the key free after the release')
  })

  it('an aborted acquire leaves nothing held, even when a release hands it the lock as it stops', async () => {
    // The release right after the abort often reaches the server before the waiter's place
    // is given up, and hands the lock to it: the core gives it back at once (lockTimeout is a
    // minute here, the wait two seconds).
    for (let round = 0; round < 10; round++) {
      const holder = new Mutex(client, 'key', { lockTimeout: 60000 })
      await holder.acquire()
      const signal = AbortSignal.timeout(10)
      await assert.rejects(new Mutex(client, 'key', { lockTimeout: 60000, acquireTimeout: 60000 }).acquire(signal), (e) => e === signal.reason)
      await holder.release()
      await waitUntil(async () => (await client.get('mutex:key')) === null, `round ${round}: the key free after the release`, 2000)
    }
  })

  it('acquireAttemptsLimit: 1 tries once', async () => {
    const holder = new Mutex(client, 'key', timeoutOptions)
    await holder.acquire()
    const once = new Mutex(client, 'key', { ...timeoutOptions, acquireTimeout: 60000, acquireAttemptsLimit: 1 })
    const t0 = Date.now()
    assert.equal(await once.tryAcquire(), false)
    assert.ok(Date.now() - t0 < 5000, 'one attempt does not wait for acquireTimeout')
    await holder.release()
  })

  it('is extended while held, and not after stopRefresh', async () => {
    const mutex = new Mutex(client, 'key', timeoutOptions)
    await mutex.acquire()
    // Three lockTimeouts later the key is still there: extended in the background.
    await new Promise((r) => setTimeout(r, 900))
    assert.equal(await client.get('mutex:key'), mutex.identifier)
    mutex.stopRefresh()
    await waitUntil(async () => (await client.get('mutex:key')) === null, 'the key to expire after stopRefresh', 5000)
    await mutex.release()
  })

  it('a lost lease calls onLockLost with a LostLockError, the mutex as this', async () => {
    const calls = []
    const mutex = new Mutex(client, 'key', {
      ...timeoutOptions,
      onLockLost(err) {
        calls.push({ self: this, err, acquired: this.isAcquired })
      },
    })
    await mutex.acquire()
    await client.set('mutex:key', '222')
    await waitUntil(() => calls.length > 0, 'onLockLost to be called')
    assert.equal(calls[0].self, mutex)
    assert.ok(calls[0].err instanceof LostLockError)
    assert.equal(calls[0].err.message, 'Lost mutex for key mutex:key')
    assert.equal(calls[0].acquired, false)
    assert.equal(mutex.isAcquired, false)
    await mutex.release()
    assert.equal(await client.get('mutex:key'), '222', 'a release after the loss leaves the other holder alone')
  })

  it('adopts a hold taken elsewhere with the same identifier (acquiredExternally)', async () => {
    const scheduler = new Mutex(client, 'key', { ...timeoutOptions, refreshInterval: 0 })
    await scheduler.acquire()
    const handler = new Mutex(client, 'key', { ...timeoutOptions, identifier: scheduler.identifier, acquiredExternally: true })
    await handler.acquire()
    await new Promise((r) => setTimeout(r, 700))
    assert.equal(await client.get('mutex:key'), handler.identifier, 'the handler extends the adopted hold')
    await handler.release()
    assert.equal(await client.get('mutex:key'), null)
  })
})

describe('the faults of redis-semaphore 5.8.0, fixed', () => {
  async function maxHeld(name, limit, acquirers) {
    const probe = new (require('../index.js').LockManager)(server.url, { keyPrefix: 'semaphore:' }).semaphore(name, limit)
    let max = 0
    let running = true
    const watch = (async () => {
      while (running) {
        max = Math.max(max, (await probe.state()).held)
        await new Promise((r) => setTimeout(r, 5))
      }
    })()
    await Promise.allSettled(acquirers())
    running = false
    await watch
    return max
  }

  it('one Semaphore object shared by 8 concurrent acquires never holds more than its limit', async () => {
    const shared = new Semaphore(client, 'pool', 2, { ...timeoutOptions, acquireTimeout: 300 })
    const max = await maxHeld('pool', 2, () =>
      Array.from({ length: 8 }, async () => {
        await shared.acquire()
        await new Promise((r) => setTimeout(r, 100))
      }),
    )
    await shared.release()
    assert.ok(max <= 2, `held at most 2, saw ${max}`)
  })

  it('callers with different lockTimeouts on a limit of 1 never hold together', async () => {
    let holding = 0
    let most = 0
    await Promise.all(
      [200, 5000, 1000, 30000].map(async (lockTimeout) => {
        const s = new Semaphore(client, 'one', 1, { lockTimeout, acquireTimeout: 10000 })
        await s.acquire()
        most = Math.max(most, ++holding)
        await new Promise((r) => setTimeout(r, 50))
        holding--
        await s.release()
      }),
    )
    assert.equal(most, 1)
  })

  it('a waiter for 3 permits is served before later waiters for 1', async () => {
    const order = []
    const first = new MultiSemaphore(client, 'wide', 3, 1, { acquireTimeout: 10000 })
    await first.acquire()
    const three = new MultiSemaphore(client, 'wide', 3, 3, { acquireTimeout: 10000 })
    const waitsForThree = three.acquire().then(() => order.push('three'))
    await waitUntil(async () => (await client.keys('semaphore:*queue*')).length > 0, 'the waiter for 3 to queue')
    const ones = Array.from({ length: 3 }, () => new MultiSemaphore(client, 'wide', 3, 1, { acquireTimeout: 10000 }))
    const waitsForOnes = ones.map((s) => s.acquire().then(() => order.push('one')))
    await new Promise((r) => setTimeout(r, 100))
    assert.deepEqual(order, [], 'nobody passes the waiter for 3 while 2 permits are free')
    await first.release()
    await waitsForThree
    assert.deepEqual(order, ['three'])
    await three.release()
    await Promise.all(waitsForOnes)
    await Promise.all(ones.map((s) => s.release()))
  })
})

describe('Redlock forms', () => {
  let servers
  let clients
  before(async () => {
    servers = await startServers(3)
    clients = servers.map((s) => new Redis(s.url))
  })
  after(async () => {
    for (const c of clients) c.disconnect()
    await Promise.all(servers.map((s) => s.stop()))
  })

  it('RedlockMutex holds mutex:<key> on a majority and excludes a second holder', async () => {
    const m1 = new RedlockMutex(clients, 'key', timeoutOptions)
    const m2 = new RedlockMutex(clients, 'key', timeoutOptions)
    await m1.acquire()
    const held = await Promise.all(clients.map((c) => c.get('mutex:key')))
    assert.ok(held.filter((v) => v === m1.identifier).length >= 2)
    assert.equal(await m2.tryAcquire(), false)
    await m1.release()
    await m2.acquire()
    await m2.release()
  })

  it('RedlockSemaphore and RedlockMultiSemaphore share one limit', async () => {
    const a = new RedlockMultiSemaphore(clients, 'rs', 3, 2, timeoutOptions)
    const b = new RedlockSemaphore(clients, 'rs', 3, timeoutOptions)
    const c = new RedlockSemaphore(clients, 'rs', 3, timeoutOptions)
    await a.acquire()
    await b.acquire()
    assert.equal(await c.tryAcquire(), false)
    await a.release()
    await c.acquire()
    await Promise.all([b.release(), c.release()])
  })
})

describe('a rolling migration', () => {
  it('a Mutex on the drop-in and one on redis-semaphore exclude each other on the same key', async () => {
    const options = { lockTimeout: 5000, acquireTimeout: 200, retryInterval: 10 }
    const ours = new Mutex(client, 'shared', options)
    const theirs = new old.Mutex(client, 'shared', options)
    await ours.acquire()
    assert.equal(await theirs.tryAcquire(), false)
    await ours.release()
    await theirs.acquire()
    assert.equal(await ours.tryAcquire(), false)
    await theirs.release()
    await ours.acquire()
    await ours.release()
  })

  it('RedlockMutex against redis-semaphore\'s RedlockMutex, and both at once in turns', async () => {
    const options = { lockTimeout: 5000, acquireTimeout: 5000, retryInterval: 5 }
    let inside = 0
    let most = 0
    const run = async (lock) => {
      for (let i = 0; i < 10; i++) {
        await lock.acquire()
        most = Math.max(most, ++inside)
        await new Promise((r) => setTimeout(r, 2))
        inside--
        await lock.release()
      }
    }
    await Promise.all([run(new Mutex(client, 'turns', options)), run(new old.Mutex(client, 'turns', options)), run(new Mutex(client, 'turns', options)), run(new old.Mutex(client, 'turns', options))])
    assert.equal(most, 1)
  })

  it('a semaphore cannot be shared with the old library: each side refuses the other\'s name', async () => {
    const theirs = new old.Semaphore(client, 'sem', 2, timeoutOptions)
    await theirs.acquire()
    const ours = new Semaphore(client, 'sem', 2, timeoutOptions)
    await assert.rejects(ours.acquire(), /semaphore:sem holds another layout \(redis-semaphore's sorted set.*stop the old processes first, or move to a new name/)
    await theirs.release()
    await client.del('semaphore:sem')
    await ours.acquire()
    await assert.rejects(new old.Semaphore(client, 'sem', 2, timeoutOptions).acquire(), /WRONGTYPE/)
    await ours.release()
  })
})
