// fencelock/compat/redlock, the node-redlock drop-in (issue 25), beyond node-redlock's own
// tests (test/redlock/run.mjs): the server URLs built from ioredis options (credentials,
// database, TLS, Sentinel, Cluster) without a password in any message, exclusion against the
// real node-redlock on the same keys, retryCount as a number of attempts woken by a release,
// `using` and its abort signal, Locks built from a value, quit(), and both module systems.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { inspect } from 'node:util'

import NodeRedlock from 'redlock'
import Redis from 'ioredis'

import { RedisServer, makeCerts, startServers, waitUntil } from './redis.mjs'
import { EXPECTED_FAILURES } from './redlock/expected.mjs'

const require = createRequire(import.meta.url)
const cjs = require('fencelock/compat/redlock')
const Redlock = cjs.default
const { Lock, ExecutionError, ResourceLockedError } = cjs
const { serverOf } = require('../compat/ioredis-servers.js')
const { LockManager } = require('../index.js')
const pkgDir = path.resolve(import.meta.dirname, '..')

const lazy = (opts) => new Redis({ lazyConnect: true, ...opts })

describe('server URLs from ioredis options', () => {
  const SECRET = 'p@ss/w:rd%&?#'
  const cases = [
    [{ host: '10.1.2.3', port: 7000, db: 2, username: 'u:1', password: SECRET }, 'redis://u%3A1:p%40ss%2Fw%3Ard%25%26%3F%23@10.1.2.3:7000/2', '10.1.2.3:7000/2'],
    [{ host: '::1', port: 7001, tls: { ca: 'CA PEM', rejectUnauthorized: false } }, 'rediss://[::1]:7001', '[::1]:7001'],
    [{ port: 7003, username: 'nobody' }, 'redis://localhost:7003', 'localhost:7003'],
    [{ path: '/tmp/r.sock', password: SECRET }, 'redis+unix:///tmp/r.sock?db=0&pass=p%40ss%2Fw%3Ard%25%26%3F%23', '/tmp/r.sock'],
    [
      { sentinels: [{ host: 's1', port: 26380 }, { host: 's2' }], name: 'mymaster', password: SECRET, sentinelPassword: SECRET, db: 1 },
      'redis+sentinel://:p%40ss%2Fw%3Ard%25%26%3F%23@s1:26380,s2:26379/mymaster/1?sentinel_password=p%40ss%2Fw%3Ard%25%26%3F%23',
      'sentinels s1:26380,s2:26379 (mymaster)',
    ],
  ]
  for (const [options, url, where] of cases) {
    it(`${JSON.stringify(options).replaceAll(SECRET, '***')} -> ${where}`, () => {
      const client = lazy(options)
      const s = serverOf(client)
      assert.equal(s.url, url)
      assert.equal(s.where, where)
      assert.ok(!s.where.includes('p@ss'))
      // The URL is one fencelock accepts (a manager is built without contacting anything).
      const tls = s.tls ? { tlsInsecure: true } : {}
      new LockManager(s.url, tls).close()
    })
  }

  it('a URL given to ioredis, TLS settings and a key prefix', () => {
    const s = serverOf(new Redis('rediss://:secret@example.invalid:7002/1', { lazyConnect: true, keyPrefix: 'app:', tls: { ca: ['A', 'B'], cert: 'C', key: 'K' } }))
    assert.equal(s.url, 'rediss://:secret@example.invalid:7002/1')
    assert.deepEqual(s.tls, { ca: 'A\nB', cert: 'C', key: 'K', insecure: false })
    assert.equal(s.keyPrefix, 'app:')
  })

  it('a Cluster is one redis+cluster:// entry naming its startup nodes', () => {
    const cluster = new Redis.Cluster([{ host: 'n1', port: 7000 }, 'redis://n2:7001', 7002], { lazyConnect: true, redisOptions: { username: 'u', password: SECRET } })
    const s = serverOf(cluster)
    assert.equal(s.url, 'redis+cluster://u:p%40ss%2Fw%3Ard%25%26%3F%23@n1:7000,n2:7001,127.0.0.1:7002')
    assert.equal(s.where, 'cluster n1:7000,n2:7001,127.0.0.1:7002')
    const tls = serverOf(new Redis.Cluster([{ host: 'n1', port: 7000 }], { lazyConnect: true, redisOptions: { tls: {} } }))
    assert.equal(tls.url, 'rediss+cluster://n1:7000')
  })

  it('what fencelock cannot follow is refused, naming the server and never the password', () => {
    const natted = new Redis.Cluster([{ host: 'n1', port: 7000 }], { lazyConnect: true, natMap: { 'a:1': { host: 'b', port: 2 } }, redisOptions: { password: SECRET } })
    assert.throws(() => new Redlock([natted]), (e) => e instanceof TypeError && /natMap/.test(e.message) && /n1:7000/.test(e.message) && !e.message.includes(SECRET))
    const a = lazy({ port: 7000, keyPrefix: 'a:', password: SECRET })
    const b = lazy({ port: 7001, keyPrefix: 'b:', password: SECRET })
    assert.throws(() => new Redlock([a, b]), (e) => /keyPrefix/.test(e.message) && !e.message.includes(SECRET) && !inspect(e).includes(SECRET))
    assert.throws(() => new Redlock([{}]), TypeError)
    // Two clients of one server are one vote: fencelock refuses them, as it refuses two equal URLs.
    assert.throws(() => new Redlock([lazy({ port: 7000, password: SECRET }), lazy({ port: 7000, password: SECRET })]), (e) => /given twice/.test(e.message) && !e.message.includes(SECRET))
  })
})

describe('fencelock/compat/redlock against real servers', () => {
  let servers
  let clients
  const made = []
  const client = (opts) => {
    const c = new Redis({ maxRetriesPerRequest: 1, ...opts })
    c.on('error', () => {})
    made.push(c)
    return c
  }
  before(async () => {
    servers = await startServers(3)
    clients = servers.map((s) => client({ host: '127.0.0.1', port: s.port }))
  })
  after(async () => {
    for (const c of made) c.disconnect()
    await Promise.all(servers.map((s) => s.stop()))
  })

  it('excludes node-redlock on the same key, and is excluded by it (one server, and three)', async () => {
    for (const set of [clients.slice(0, 1), clients]) {
      const theirs = new NodeRedlock(set, { retryCount: 0 })
      const ours = new Redlock(set, { retryCount: 0 })
      const key = `shared-${set.length}`
      const their = await theirs.acquire([key], 10_000)
      await assert.rejects(ours.acquire([key], 10_000), ExecutionError)
      // node-redlock's release resolves once a quorum deleted the key; its attempts resolve
      // once every server answered.
      await Promise.all((await their.release()).attempts)
      const our = await ours.acquire([key], 10_000)
      for (const c of set) assert.equal(await c.get(key), our.value)
      await assert.rejects(theirs.acquire([key], 10_000), (e) => e.name === 'ExecutionError' && !(e instanceof ExecutionError))
      await our.release()
      for (const c of set) assert.equal(await c.get(key), null)
    }
  })

  it('retryCount is a number of attempts; the error carries them and fencelock\'s cause', async () => {
    const theirs = new NodeRedlock([clients[0]], { retryCount: 0 })
    const their = await theirs.acquire(['counted'], 10_000)
    const ours = new Redlock([clients[0]], { retryCount: 2, retryDelay: 50, retryJitter: 10 })
    const errors = []
    ours.on('error', (e) => errors.push(e))
    await assert.rejects(ours.acquire(['counted'], 10_000), (e) => {
      assert.ok(e instanceof ExecutionError)
      assert.equal(e.attempts.length, 3)
      assert.equal(e.cause.code, 'ERR_NOT_ACQUIRED')
      return true
    })
    assert.equal((await ours.acquire(['counted'], 10_000, { retryCount: 0 }).catch((e) => e)).attempts.length, 1)
    assert.ok(errors.length >= 3, 'each attempt\'s votes against are emitted as error events')
    await their.release()
  })

  it('a waiting acquire is woken by the release, not by its next retry', async () => {
    const redlock = new Redlock([clients[0]])
    const holder = await redlock.acquire(['woken'], 30_000)
    // A retry delay far longer than the test: the waiter gets the lock only by being woken.
    const waiting = redlock.acquire(['woken'], 30_000, { retryCount: 3, retryDelay: 60_000 })
    await waitUntil(async () => (await servers[0].queued('woken')) >= 1, 'the waiter queued')
    const released = Date.now()
    await holder.release()
    const lock = await waiting
    assert.ok(Date.now() - released < 10_000, 'woken by the release')
    assert.equal(lock.attempts.length, 1)
    assert.equal(await clients[0].get('woken'), lock.value)
    assert.ok(lock.fencingToken > 0n)
    await lock.release()
  })

  it('extend replaces the Lock; the old one, and a released one, cannot be extended or released again', async () => {
    const redlock = new Redlock([clients[0]], { retryCount: 0 })
    const lock = await redlock.acquire(['ext'], 5_000)
    assert.ok(lock.expiration > Date.now() + 4_000 && lock.expiration <= Date.now() + 5_000)
    const longer = await lock.extend(60_000)
    assert.equal(lock.expiration, 0)
    assert.ok((await clients[0].pttl('ext')) > 50_000)
    await assert.rejects(lock.extend(10_000), { name: 'ExecutionError', message: 'Cannot extend an already-expired lock.' })
    await assert.rejects(redlock.extend(longer, 1.5), { message: 'Duration must be an integer value in milliseconds.' })
    await longer.release()
    assert.equal(longer.expiration, 0)
    await assert.rejects(longer.release(), ExecutionError)
    await assert.rejects(longer.extend(10_000), ExecutionError)
  })

  it('a Lock built from a value extends and releases by value (a lock handed over)', async () => {
    const a = new Redlock([clients[0]], { retryCount: 0 })
    const b = new Redlock([clients[0]], { retryCount: 0 })
    const lock = await a.acquire(['handed'], 10_000)
    const handed = new Lock(b, ['handed'], lock.value, [], Date.now() + 10_000)
    const extended = await handed.extend(60_000)
    assert.ok((await clients[0].pttl('handed')) > 50_000)
    assert.equal(extended.fencingToken, undefined)
    await extended.release()
    assert.equal(await clients[0].get('handed'), null)
    await assert.rejects(lock.release(), (e) => e instanceof ExecutionError && e.cause.code === 'ERR_LOCK_LOST')
    const stranger = new Lock(b, ['handed'], 'not-the-value', [], Date.now() + 10_000)
    await assert.rejects(stranger.release(), ExecutionError)
  })

  it('using resolves to the routine\'s result and keeps the lock past its duration', async () => {
    const redlock = new Redlock([clients[0]])
    const started = Date.now()
    // A duration of 1 s: extended every third of it, the lock outlives a stall of about 600 ms
    // (a busy machine), and the routine still outlives it three times over.
    const value = await redlock.using(['scoped'], 1000, { automaticExtensionThreshold: 500 }, async (signal) => {
      const held = await clients[0].get('scoped')
      // Outlive the duration three times over: only extensions keep the key.
      await waitUntil(() => Date.now() - started > 3000, 'three durations passed', 10_000)
      assert.equal(await clients[0].get('scoped'), held)
      assert.equal(signal.aborted, false)
      return held
    })
    assert.equal(typeof value, 'string')
    assert.equal(await clients[0].get('scoped'), null)
    await assert.rejects(redlock.using(['scoped'], 300, async () => {}), /at least 100ms greater than the `automaticExtensionThreshold`/)
  })

  it('using aborts its signal, with signal.error, when the lock is taken', async () => {
    const redlock = new Redlock([clients[0]])
    await assert.rejects(
      redlock.using(['stolen'], 1_000, { automaticExtensionThreshold: 100 }, async (signal) => {
        await clients[0].set('stolen', 'thief', 'PX', 60_000)
        await waitUntil(() => signal.aborted, 'the signal aborts', 5_000)
        assert.ok(signal.error instanceof ExecutionError)
        assert.equal(signal.reason, signal.error)
        assert.equal(signal.error.cause.code, 'ERR_LOCK_LOST')
        return 'finished'
      }),
      // The routine's work was not protected: the release at the end says so.
      ExecutionError,
    )
    assert.equal(await clients[0].get('stolen'), 'thief')
    await clients[0].del('stolen')
  })

  it('several resources are locked all or none (acquireMany), or refused clearly without it', async () => {
    const redlock = new Redlock([clients[0]], { retryCount: 0 })
    if (typeof LockManager.prototype.acquireMany !== 'function') {
      await assert.rejects(redlock.acquire(['m1', 'm2'], 10_000), (e) => e instanceof TypeError && /acquireMany/.test(e.message))
      assert.equal(await clients[0].exists('m1', 'm2'), 0)
      return
    }
    const lock = await redlock.acquire(['m1', 'm2'], 10_000)
    assert.equal(await clients[0].get('m1'), lock.value)
    assert.equal(await clients[0].get('m2'), lock.value)
    await assert.rejects(redlock.acquire(['m2', 'm3'], 10_000), ExecutionError)
    assert.equal(await clients[0].get('m3'), null)
    await lock.release()
    assert.equal(await clients[0].exists('m1', 'm2'), 0)
  })

  it('the node-redlock constructor checks: no clients, custom scripts, non-integer durations', async () => {
    assert.throws(() => new Redlock([]), { message: 'Redlock must be instantiated with at least one redis client.' })
    assert.throws(() => new Redlock([clients[0]], {}, { acquireScript: (s) => s }), /custom scripts \(acquireScript\)/)
    const redlock = new Redlock([clients[0]])
    await assert.rejects(redlock.acquire(['x'], 10.5), { message: 'Duration must be an integer value in milliseconds.' })
    assert.deepEqual(redlock.settings, { driftFactor: 0.01, retryCount: 10, retryDelay: 200, retryJitter: 100, automaticExtensionThreshold: 500 })
  })

  it('quit() quits the clients and ends the Redlock', async () => {
    const own = client({ host: '127.0.0.1', port: servers[1].port })
    await own.ping()
    const redlock = new Redlock([own], { retryCount: 0 })
    const lock = await redlock.acquire(['quitting'], 10_000)
    await lock.release()
    await redlock.quit()
    // ioredis's quit() resolves on the server's OK; the socket closes right after.
    await waitUntil(() => own.status === 'end', 'the client ended')
    await assert.rejects(redlock.acquire(['quitting'], 10_000), (e) => e instanceof ExecutionError && /quit/.test(e.message))
  })
})

describe('credentials, database and TLS of the ioredis clients', () => {
  const SECRET = 'Right/Pass@word%20:?'
  let secured
  let tlsServer
  let certs
  before(async () => {
    certs = makeCerts(mkdtempSync(path.join(os.tmpdir(), 'fencelock-node-redlock-tls-')))
    ;[secured, tlsServer] = await Promise.all([RedisServer.start(), RedisServer.start({ tls: { certs, clientAuth: true } })])
    await secured.client().call('ACL', 'SETUSER', 'locker', 'on', `>${SECRET}`, '~*', '&*', '+@all')
  })
  after(async () => {
    await Promise.all([secured.stop(), tlsServer.stop()])
    rmSync(certs, { recursive: true, force: true })
  })

  it('locks with the client\'s user, password and database', async () => {
    const c = new Redis({ host: '127.0.0.1', port: secured.port, username: 'locker', password: SECRET, db: 3 })
    try {
      const redlock = new Redlock([c], { retryCount: 0 })
      const lock = await redlock.acquire(['in-db-3'], 10_000)
      assert.equal(await c.get('in-db-3'), lock.value)
      assert.equal(await secured.get('in-db-3'), null, 'not in db 0')
      await lock.release()
    } finally {
      c.disconnect()
    }
  })

  it('a wrong password fails, and shows nowhere: message, stack, cause, votes, error events', async () => {
    const wrong = 'Wr0ng/P@ss%word'
    const c = new Redis({ host: '127.0.0.1', port: secured.port, username: 'locker', password: wrong, lazyConnect: true })
    const redlock = new Redlock([c], { retryCount: 1, retryDelay: 50 })
    const shown = []
    redlock.on('error', (e) => shown.push(inspect(e)))
    const err = await redlock.acquire(['denied'], 10_000).catch((e) => e)
    assert.ok(err instanceof ExecutionError, inspect(err))
    assert.match(err.cause.message, /authentication failed/)
    // (The stats hold the ioredis clients themselves, as node-redlock's do, and util.inspect
    // of an ioredis client shows its options, password included: that is ioredis's own.)
    for (const stats of await Promise.all(err.attempts)) {
      assert.equal(stats.votesAgainst.size, 1)
      for (const vote of stats.votesAgainst.values()) shown.push(vote.message, vote.stack, inspect(vote))
    }
    shown.push(err.message, err.stack, inspect(err.cause), JSON.stringify(err))
    for (const text of shown) assert.ok(!text.includes(wrong) && !text.includes(encodeURIComponent(wrong)), `password shown in ${text}`)
  })

  it('the client\'s TLS CA, certificate and key reach fencelock (mutual TLS), and leave no file behind', async () => {
    const before = readdirSync(os.tmpdir()).filter((f) => f.startsWith('fencelock-redlock-tls-'))
    const file = (name) => readFileSync(path.join(certs, name))
    const c = new Redis({ host: '127.0.0.1', port: tlsServer.tlsPort, lazyConnect: true, tls: { ca: file('ca.crt'), cert: file('client.crt'), key: file('client.key') } })
    const redlock = new Redlock([c], { retryCount: 0 })
    const lock = await redlock.acquire(['over-tls'], 10_000)
    assert.equal(await tlsServer.get('over-tls'), lock.value)
    await lock.release()
    assert.equal(await tlsServer.get('over-tls'), null)
    const left = readdirSync(os.tmpdir()).filter((f) => f.startsWith('fencelock-redlock-tls-') && !before.includes(f))
    assert.deepEqual(left, [])
    // Without the client certificate the server refuses: the settings did matter.
    const noCert = new Redis({ host: '127.0.0.1', port: tlsServer.tlsPort, lazyConnect: true, tls: { ca: file('ca.crt') } })
    await assert.rejects(new Redlock([noCert], { retryCount: 0 }).acquire(['over-tls'], 10_000), ExecutionError)
  })
})

describe('the package', () => {
  it('CommonJS and ES modules see the same classes', async () => {
    const esm = await import('fencelock/compat/redlock')
    assert.equal(esm.default, Redlock)
    assert.equal(esm.Lock, Lock)
    assert.equal(esm.ExecutionError, ExecutionError)
    assert.equal(esm.ResourceLockedError, ResourceLockedError)
    assert.equal(cjs.__esModule, true, 'TypeScript\'s CommonJS output reads `.default`')
  })

  it('neither the main entry nor the subpath loads ioredis', () => {
    for (const entry of ['fencelock', 'fencelock/compat/redlock']) {
      const out = execFileSync(process.execPath, ['-e', `require(${JSON.stringify(entry)}); console.log(Object.keys(require.cache).filter((k) => k.includes('/ioredis/')).length)`], { cwd: pkgDir, encoding: 'utf8' })
      assert.equal(out.trim(), '0', entry)
    }
  })

  it('the .d.mts (import) typings are the .d.ts (require) ones re-exported, with the default export', () => {
    const mts = readFileSync(path.join(pkgDir, 'compat', 'redlock.d.mts'), 'utf8')
    assert.match(mts, /^export \* from '\.\/redlock\.js'$/m)
    assert.match(mts, /^export default redlock\.default$/m)
  })

  it('docs/migrating.md lists every deliberate difference from node-redlock\'s tests', () => {
    const docs = readFileSync(path.join(pkgDir, '..', 'docs', 'migrating.md'), 'utf8')
    const section = docs.slice(docs.indexOf('## Node: from node-redlock'))
    assert.ok(section.includes("### node-redlock's own tests"))
    for (const e of EXPECTED_FAILURES) {
      assert.ok(section.includes(e.test.replace(/^(instance|cluster) - /, '')), e.test)
    }
  })
})
