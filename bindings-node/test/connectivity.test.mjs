// Production connectivity: TLS (custom CA, unknown CA, insecure mode, mutual TLS) against a
// redis-server with --tls-port and certificates made here with openssl; ACL users and a wrong
// password; the connect timeout option; Sentinel URLs accepted as they are.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { inspect } from 'node:util'

import { RedisServer, freePort, makeCerts } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, InvalidArgumentError, UnavailableError } = require('../index.js')

let certs
let server // TLS, client certificates not required
let mutual // TLS, client certificates required
before(async () => {
  certs = makeCerts(mkdtempSync(path.join(os.tmpdir(), 'fencelock-node-tls-')))
  ;[server, mutual] = await Promise.all([
    RedisServer.start({ tls: { certs, clientAuth: false } }),
    RedisServer.start({ tls: { certs, clientAuth: true } }),
  ])
})
after(async () => {
  await Promise.all([server?.stop(), mutual?.stop()])
  if (certs) rmSync(certs, { recursive: true, force: true })
})

const file = (name) => path.join(certs, name)

/** Acquires and releases one lock through `mgr`, checking the key on the server. */
async function roundTrip(mgr, srv, name) {
  const lock = await mgr.acquire(name, { ttl: 5000, wait: 0 })
  assert.equal(await srv.get(name), lock.token, 'the key holds the token')
  await lock.release()
  assert.equal(await srv.get(name), null)
  await mgr.close()
}

describe('TLS', () => {
  it('a custom CA verifies the server', async () => {
    await roundTrip(new LockManager(server.tlsUrl, { tlsCaFile: file('ca.crt') }), server, 'tls-ca')
  })

  it('a server certificate from an unknown CA is ERR_UNAVAILABLE saying why', async () => {
    for (const opts of [{}, { tlsCaFile: file('other-ca.crt') }]) {
      const mgr = new LockManager(server.tlsUrl, { ...opts, serverTimeout: 1000 })
      await assert.rejects(mgr.acquire('tls-unknown', { ttl: 5000, wait: 0 }), (e) => {
        assert.ok(e instanceof UnavailableError, String(e))
        assert.equal(e.code, 'ERR_UNAVAILABLE')
        assert.match(e.message, /certificate/i)
        return true
      })
      await mgr.close()
    }
    assert.equal(await server.get('tls-unknown'), null)
  })

  it('tlsInsecure accepts the certificate without the CA', async () => {
    await roundTrip(new LockManager(server.tlsUrl, { tlsInsecure: true }), server, 'tls-insecure')
  })

  it('mutual TLS works with the client certificate', async () => {
    const mgr = new LockManager(mutual.tlsUrl, {
      tlsCaFile: file('ca.crt'),
      tlsClientCert: file('client.crt'),
      tlsClientKey: file('client.key'),
    })
    await roundTrip(mgr, mutual, 'tls-mutual')
  })

  it('mutual TLS without the client certificate is ERR_UNAVAILABLE', async () => {
    const mgr = new LockManager(mutual.tlsUrl, { tlsCaFile: file('ca.crt'), serverTimeout: 1000 })
    await assert.rejects(mgr.acquire('tls-no-client', { ttl: 5000, wait: 0 }), { code: 'ERR_UNAVAILABLE' })
    await mgr.close()
  })

  it('mutual TLS and TLS-port mistakes fail at once, even without a wait limit', async () => {
    // Issue 20, item 2: no wait option, so only a permanent failure ends the call; the outer
    // bound catches a hang.
    const atOnce = (p) => Promise.race([
      p,
      new Promise((_, reject) => setTimeout(() => reject(new Error('retried forever')), 20_000).unref()),
    ])
    const noCert = new LockManager(mutual.tlsUrl, { tlsCaFile: file('ca.crt') })
    await assert.rejects(atOnce(noCert.acquire('tls-at-once', { ttl: 5000 })), (e) =>
      e.code === 'ERR_UNAVAILABLE' && /TLS handshake failed/.test(e.message) && /CertificateRequired/.test(e.message),
    )
    await noCert.close()
    const plain = new LockManager(server.tlsUrl.replace('rediss://', 'redis://'))
    await assert.rejects(atOnce(plain.acquire('tls-at-once', { ttl: 5000 })), (e) =>
      e.code === 'ERR_UNAVAILABLE' && /use a rediss:\/\/ URL/.test(e.message),
    )
    await plain.close()
  })

  it('TLS options are checked when the manager is made', () => {
    const cases = [
      [{ tlsCaFile: 5 }, /tlsCaFile must be a file path/],
      [{ tlsCaFile: '' }, /tlsCaFile must be a file path/],
      [{ tlsCaFile: file('missing.crt') }, /CA/],
      [{ tlsInsecure: 'yes' }, /tlsInsecure must be a boolean/],
      [{ tlsClientCert: file('client.crt') }, /tlsClientCert needs tlsClientKey/],
      [{ tlsClientKey: file('client.key') }, /tlsClientKey needs tlsClientCert/],
      [{ tlsClientCert: file('client.crt'), tlsClientKey: 1 }, /tlsClientKey must be a file path/],
    ]
    for (const [opts, message] of cases) {
      assert.throws(() => new LockManager(server.tlsUrl, opts), (e) => {
        assert.ok(e instanceof InvalidArgumentError, `${JSON.stringify(opts)}: ${e}`)
        assert.match(e.message, message)
        return true
      })
    }
    // TLS options without any rediss:// server are a mistake, not silently ignored.
    assert.throws(() => new LockManager(server.url, { tlsCaFile: file('ca.crt') }), { code: 'ERR_INVALID_ARG' })
    // A key file's contents never show up in a message.
    assert.throws(
      () => new LockManager(server.tlsUrl, { tlsClientCert: file('client.key'), tlsClientKey: file('client.crt') }),
      (e) => e.code === 'ERR_INVALID_ARG' && !e.message.includes('PRIVATE KEY'),
    )
  })
})

describe('ACL users and passwords', () => {
  let acl
  before(async () => {
    acl = await RedisServer.start()
    const c = acl.client()
    // The minimal rule of docs/SECURITY.md.
    await c.call(
      'ACL', 'SETUSER', 'locker', 'on', '>right-password', 'resetkeys', '~*', 'resetchannels', '&fencelock:{*}:released:*',
      '-@all', '+evalsha', '+script|load', '+get', '+set', '+incr', '+pttl', '+pexpire', '+time', '+zadd', '+zrem', '+zrange', '+zrangebyscore', '+hset', '+hget', '+hdel', '+del', '+publish', '+pubsub|numsub',
      '+subscribe', '+unsubscribe', '+ping',
    )
  })
  after(async () => acl?.stop())

  it('a command missing from the ACL fails the first call, naming it', async () => {
    // Issue 20, item 4: zadd runs only when an acquire is refused.
    await acl.client().call('ACL', 'SETUSER', 'nozadd', 'on', '>pw', 'resetkeys', '~*', 'resetchannels', '&fencelock:{*}:released:*',
      '-@all', '+evalsha', '+script|load', '+get', '+set', '+incr', '+pttl', '+pexpire', '+time', '+zrem', '+zrange',
      '+zrangebyscore', '+hset', '+hget', '+hdel', '+del', '+publish', '+pubsub|numsub', '+subscribe', '+unsubscribe', '+ping')
    const mgr = new LockManager(`redis://nozadd:pw@127.0.0.1:${acl.port}`)
    await assert.rejects(mgr.acquire('acl-first', { ttl: 5000, wait: 10_000 }), (e) =>
      e.code === 'ERR_UNAVAILABLE' && /permission denied/.test(e.message) && /'zadd'/.test(e.message),
    )
    await mgr.close()
  })

  it('the right ACL password works', async () => {
    await roundTrip(new LockManager(`redis://locker:right-password@127.0.0.1:${acl.port}`), acl, 'acl-ok')
  })

  it('a wrong password is ERR_UNAVAILABLE saying authentication failed, never showing the password', async () => {
    const secret = 'wr0ng-s3cret-pw'
    const mgr = new LockManager(`redis://locker:${secret}@127.0.0.1:${acl.port}`, { serverTimeout: 1000 })
    const shownManager = inspect(mgr, { depth: 10, showHidden: true })
    assert.ok(!shownManager.includes(secret), shownManager)
    assert.match(shownManager, new RegExp(`127\\.0\\.0\\.1:${acl.port}`))
    let error
    await assert.rejects(mgr.acquire('acl-wrong', { ttl: 5000, wait: 0 }), (e) => {
      error = e
      return true
    })
    assert.ok(error instanceof UnavailableError, String(error))
    assert.equal(error.code, 'ERR_UNAVAILABLE')
    assert.match(error.message, /authentication failed/)
    assert.match(error.message, new RegExp(`127\\.0\\.0\\.1:${acl.port}`), 'names the server')
    for (const shown of [error.message, error.stack, String(error), inspect(error, { depth: 10, showHidden: true }), JSON.stringify(error)]) {
      assert.ok(!shown.includes(secret), shown)
    }
    // The same for the other calls and for a password-only URL.
    await assert.rejects(mgr.release('acl-wrong', 't'), (e) => e.code === 'ERR_UNAVAILABLE' && !e.message.includes(secret))
    await mgr.close()
    const noUser = new LockManager(`redis://:${secret}@127.0.0.1:${acl.port}`, { serverTimeout: 1000 })
    await assert.rejects(noUser.tryAcquire('acl-wrong'), (e) => e.code === 'ERR_UNAVAILABLE' && !inspect(e).includes(secret))
    assert.ok(!inspect(noUser).includes(secret))
    await noUser.close()
  })

  it('the password option serves a URL without one, and is checked and never shown', async () => {
    const url = `redis://locker@127.0.0.1:${acl.port}`
    const mgr = new LockManager(url, { password: 'right-password' })
    assert.ok(!inspect(mgr, { depth: 10, showHidden: true }).includes('right-password'))
    await roundTrip(mgr, acl, 'acl-option')
    // It is what the server is asked with: a wrong one fails, unseen.
    const wrong = new LockManager(url, { serverTimeout: 1000, password: 'not-the-pw-77' })
    await assert.rejects(wrong.tryAcquire('acl-option'), (e) =>
      e.code === 'ERR_UNAVAILABLE' && /authentication failed/.test(e.message) && !inspect(e).includes('not-the-pw-77'))
    await wrong.close()
    assert.throws(() => new LockManager(url, { password: 42 }), (e) => e.code === 'ERR_INVALID_ARG' && /password must be a string, got a number/.test(e.message))
    assert.throws(() => new LockManager(url, { password: '' }), (e) => e.code === 'ERR_INVALID_ARG' && /password is empty/.test(e.message))
  })

  it('a bad URL with a password never shows the password', () => {
    assert.throws(
      () => new LockManager('redis://locker:hunter2@127.0.0.1:99999'),
      (e) => e.code === 'ERR_INVALID_ARG' && !inspect(e).includes('hunter2'),
    )
  })
})

describe('a wait that makes no progress', () => {
  it('warns through process warnings, naming the server and why (issue 57 item 3)', async () => {
    const port = await freePort()
    const warnings = []
    const seen = (w) => warnings.push(w)
    process.on('warning', seen)
    // Refusals waited through (0), as for a server that does not answer.
    const m = new LockManager(`redis://127.0.0.1:${port}`, { refusedAttempts: 0 })
    try {
      await assert.rejects(m.acquire('nobody-home', { ttl: 5000, wait: 4000 }), UnavailableError)
    } finally {
      process.off('warning', seen)
      await m.close()
    }
    const ours = warnings.filter((w) => w.name === 'FencelockWarning' && w.message.includes('nobody-home'))
    assert.ok(ours.length > 0, `no warning during a 4 s wait on a refused server: ${warnings.map(String)}`)
    for (const w of ours) {
      assert.equal(w.code, 'FENCELOCK_STILL_WAITING')
      assert.match(w.message, /^acquire still waiting/)
      assert.ok(w.message.includes(`127.0.0.1:${port}`), w.message)
    }
  })
})

describe('refusedAttempts', () => {
  it('ends a wait without limit when nobody listens at any server (issue 57 item 3)', async () => {
    const url = `redis://127.0.0.1:${await freePort()}`
    for (const [options, times] of [[{}, 10], [{ refusedAttempts: 3 }, 3]]) {
      const m = new LockManager(url, options)
      try {
        await assert.rejects(m.acquire('nobody-listens', { ttl: 5000 }), (e) =>
          e instanceof UnavailableError &&
          e.message.includes(`refused the connection on ${times} attempts in a row`) &&
          /refused_?[aA]ttempts/.test(e.message))
      } finally {
        await m.close()
      }
    }
  })

  it('is validated before any network call', () => {
    for (const bad of [-1, 1.5, NaN, '3', 2 ** 32]) {
      assert.throws(
        () => new LockManager('redis://127.0.0.1:1', { refusedAttempts: bad }),
        (e) => e instanceof InvalidArgumentError && /refusedAttempts/.test(e.message),
        String(bad),
      )
    }
  })
})

describe('connectTimeout', () => {
  it('is validated before any network call', () => {
    for (const bad of [-1, NaN, Infinity, '100', 0, 10 * 3600_000]) {
      assert.throws(
        () => new LockManager('redis://127.0.0.1:1', { connectTimeout: bad }),
        (e) => e instanceof InvalidArgumentError && /connect_?[tT]imeout/.test(e.message),
        String(bad),
      )
    }
  })

  it('bounds how long a connection attempt may take', async () => {
    // A stopped server (SIGSTOP): the kernel still accepts the TCP connection but nothing
    // answers the connection's handshake; the attempt gives up in bounded time.
    const srv = await RedisServer.start()
    try {
      const mgr = new LockManager(srv.url, { connectTimeout: 500 })
      await roundTrip(mgr, srv, 'connect-timeout')
      srv.proc.kill('SIGSTOP')
      const stalled = new LockManager(srv.url, { connectTimeout: 200, serverTimeout: 200 })
      const t0 = Date.now()
      await assert.rejects(stalled.acquire('connect-timeout', { ttl: 5000, wait: 0 }), { code: 'ERR_UNAVAILABLE' })
      assert.ok(Date.now() - t0 < 3000, `gave up after ${Date.now() - t0} ms`)
      await stalled.close()
    } finally {
      srv.proc.kill('SIGCONT')
      await srv.stop()
    }
  })
})

describe('Sentinel URLs', () => {
  it('are accepted as they are (resolved by the core when connecting)', async () => {
    const mgr = new LockManager('redis+sentinel://127.0.0.1:1,127.0.0.1:2/mymaster', { serverTimeout: 200, connectTimeout: 200 })
    assert.deepEqual(mgr.servers.length, 1)
    await assert.rejects(mgr.acquire('sentinel', { ttl: 5000, wait: 0 }), { code: 'ERR_UNAVAILABLE' })
    await mgr.close()
  })
})
