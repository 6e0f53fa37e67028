// Redlock over three servers: a quorum of two is enough, one server killed does not stop
// anything, two killed makes the lock unavailable.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startServers } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, UnavailableError } = require('../index.js')

let servers
let mgr
before(async () => {
  servers = await startServers(3)
  mgr = new LockManager(servers.map((s) => s.url), { serverTimeout: 200 })
})
after(async () => {
  await mgr.close()
  await Promise.all(servers.map((s) => s.stop()))
})

describe('Redlock over 3 servers', () => {
  it('holds the key on every server while all are up', async () => {
    const lock = await mgr.acquire('rl-all', { ttl: 5000 })
    for (const s of servers) assert.equal(await s.get('rl-all'), lock.token)
    const other = new LockManager(servers.map((s) => s.url))
    assert.equal(await other.tryAcquire('rl-all'), null)
    await lock.release()
    for (const s of servers) assert.equal(await s.get('rl-all'), null)
    await other.close()
  })

  it('a minority key does not count: one server held by someone else still grants', async () => {
    await servers[0].client().set('rl-minority', 'other', 'PX', 10_000)
    const lock = await mgr.acquire('rl-minority', { ttl: 5000, wait: 0 })
    assert.equal(await servers[1].get('rl-minority'), lock.token)
    assert.equal(await servers[0].get('rl-minority'), 'other')
    await lock.release()
    await servers[0].del('rl-minority')
  })

  it('aborted acquisitions leave no partial votes behind on any server', async () => {
    const attempts = []
    for (let i = 0; i < 30; i++) {
      const controller = new AbortController()
      attempts.push(mgr.acquire('rl-abort', { ttl: 60_000, signal: controller.signal }).then((l) => l.release(), () => {}))
      setTimeout(() => controller.abort(), i % 4)
    }
    await Promise.all(attempts)
    // A vote left on any one server would block one of these single-server managers for 60 s.
    for (const s of servers) {
      const single = new LockManager(s.url)
      const lock = await single.acquire('rl-abort', { wait: 5000 })
      await lock.release()
      await single.close()
    }
  })

  it('keeps working with one server killed, and stops with two', async () => {
    const held = await mgr.acquire('rl-held', { ttl: 900, autoExtend: true })
    const earlier = await mgr.acquire('rl-kill', { ttl: 5000 })
    const before = earlier.fencingToken
    await earlier.release()
    await servers[2].kill()

    const lock = await mgr.acquire('rl-kill', { ttl: 5000, wait: 0 })
    assert.ok(lock.fencingToken > before)
    assert.equal(await servers[0].get('rl-kill'), lock.token)
    assert.equal(await servers[1].get('rl-kill'), lock.token)
    const other = new LockManager(servers.map((s) => s.url), { serverTimeout: 200 })
    assert.equal(await other.tryAcquire('rl-kill'), null, 'still exclusive on the two left')
    await lock.release()

    // The auto-extended lock survives the loss of one server across several extensions.
    await new Promise((r) => setTimeout(r, 1200))
    assert.equal(held.lost, false)
    assert.equal(held.signal.aborted, false)
    await held.release()

    await servers[1].kill()
    await assert.rejects(mgr.acquire('rl-down', { wait: 0 }), (e) => {
      assert.ok(e instanceof UnavailableError)
      assert.equal(e.code, 'ERR_UNAVAILABLE')
      return true
    })
    await assert.rejects(other.tryAcquire('rl-down'), { code: 'ERR_UNAVAILABLE' })
    await other.close()
  })
})
