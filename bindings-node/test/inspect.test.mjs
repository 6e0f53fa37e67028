// Inspection without acquiring (issue 22): isLocked and remaining, the quorum's view; a
// classic SET NX PX counts as held; a bad name rejects before any call.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startServers } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, InvalidArgumentError, UnavailableError } = require('../index.js')

let servers
before(async () => {
  servers = await startServers(3)
})
after(async () => {
  await Promise.all(servers.map((s) => s.stop()))
})

describe('isLocked and remaining', () => {
  it('follow a lock on one server, and a classic SET NX PX counts', async () => {
    const m = new LockManager(servers[0].url)
    try {
      assert.equal(await m.isLocked('in-jobs'), false)
      assert.equal(await m.remaining('in-jobs'), null)
      const lock = await m.acquire('in-jobs', { ttl: 5000 })
      assert.equal(await m.isLocked('in-jobs'), true)
      const left = await m.remaining('in-jobs')
      assert.ok(left > 3000 && left <= 5000, `${left}`)
      assert.equal(await servers[0].get('in-jobs'), lock.token, 'nothing changed')
      await lock.release()
      assert.equal(await m.isLocked(Buffer.from('in-jobs')), false)
      const c = servers[0].client()
      await c.set('in-classic', 'someone-else', 'PX', 2000, 'NX')
      const classic = await m.remaining('in-classic')
      assert.ok(classic > 500 && classic <= 2000, `${classic}`)
      await c.set('in-forever', 'someone-else')
      assert.equal(await m.remaining('in-forever'), Infinity)
    } finally {
      await m.close()
    }
  })

  it('needs a quorum under one token on Redlock, and rejects when too few answer', async () => {
    const m = new LockManager(servers.map((s) => s.url), { serverTimeout: 200 })
    try {
      await servers[0].client().set('in-r', 'tok-a', 'PX', 10_000)
      assert.equal(await m.isLocked('in-r'), false)
      await servers[1].client().set('in-r', 'tok-a', 'PX', 3000)
      const left = await m.remaining('in-r')
      assert.ok(left > 1500 && left <= 3000, `the quorum's guarantee is the shorter TTL: ${left}`)
      await servers[1].kill()
      await servers[2].kill()
      await assert.rejects(m.isLocked('in-r'), (e) => e instanceof UnavailableError && /only 1 of 3 servers answered/.test(e.message))
    } finally {
      await m.close()
    }
  })

  it('rejects a bad name before any call', async () => {
    const m = new LockManager('redis://127.0.0.1:1')
    try {
      for (const bad of ['', 'fencelock:{1}:fence', 42]) {
        await assert.rejects(m.isLocked(bad), InvalidArgumentError)
        await assert.rejects(m.remaining(bad), InvalidArgumentError)
      }
    } finally {
      await m.close()
    }
  })
})
