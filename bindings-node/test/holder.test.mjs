// Who holds a lock: `new LockManager(urls, { holder })` leaves a note, `holder(name)` reads
// it, against a real redis-server; nothing written without the option; bad labels refused
// before any network call.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import os from 'node:os'
import { after, before, describe, it } from 'node:test'

import { RedisServer } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, InvalidArgumentError } = require('../index.js')

let server
before(async () => {
  server = await RedisServer.start()
})
after(async () => {
  await server.stop()
})

describe('holder', () => {
  it("shows the holder's label, since when and fencing token", async () => {
    const name = `orders-${randomUUID()}`
    const web = new LockManager(server.url, { holder: 'worker-7 (invoices)' })
    const ops = new LockManager(server.url)
    try {
      assert.equal(await ops.holder(name), null)
      const before = Date.now()
      const lock = await web.acquire(name, { ttl: 30_000 })
      const h = await ops.holder(name)
      assert.equal(h.label, 'worker-7 (invoices)')
      assert.equal(h.fencingToken, lock.fencingToken)
      assert.ok(h.since instanceof Date && h.since.getTime() >= before - 1000 && h.since.getTime() <= Date.now())
      assert.ok(h.remaining > 25_000 && h.remaining <= 30_000, `${h.remaining}`)
      await lock.release()
      assert.equal(await ops.holder(name), null)
    } finally {
      await web.close()
      await ops.close()
    }
  })

  it('is host:pid with `true`, and nothing is noted without the option', async () => {
    const name = `plain-${randomUUID()}`
    const web = new LockManager(server.url, { holder: true })
    const plain = new LockManager(server.url)
    try {
      const lock = await web.acquire(name, { ttl: 30_000 })
      assert.equal((await web.holder(name)).label, `${os.hostname()}:${process.pid}`)
      await lock.release()
      const other = await plain.acquire(`${name}-x`, { ttl: 30_000 })
      const h = await plain.holder(`${name}-x`)
      assert.deepEqual([h.label, h.since, h.fencingToken], [null, null, null])
      assert.deepEqual(await server.client().call('KEYS', `*who:${name}-x`), [])
      await other.release()
    } finally {
      await web.close()
      await plain.close()
    }
  })

  it("lists a semaphore's and a read-write lock's noted holders", async () => {
    const name = `render-${randomUUID()}`
    const a = new LockManager(server.url, { holder: 'render-a' })
    const plain = new LockManager(server.url)
    try {
      const lease = await a.semaphore(name, 3).acquire({ ttl: 30_000 })
      const other = await plain.semaphore(name, 3).acquire({ ttl: 30_000 })
      const [h, ...more] = await plain.semaphore(name, 3).holders()
      assert.deepEqual([h.label, h.fencingToken, more.length], ['render-a', lease.fencingToken, 0])
      assert.ok(h.since instanceof Date && h.remaining > 25_000)
      assert.equal((await plain.semaphore(name, 3).state()).holders, 2)
      await lease.release()
      await other.release()
      assert.deepEqual(await a.semaphore(name, 3).holders(), [])
      const w = await a.rwlock(`${name}-rw`).write({ ttl: 30_000 })
      const [writer] = await plain.rwlock(`${name}-rw`).holders()
      assert.deepEqual([writer.label, writer.fencingToken], ['render-a', w.fencingToken])
      await w.release()
    } finally {
      await a.close()
      await plain.close()
    }
  })

  it('refuses bad labels before any network call', () => {
    for (const [bad, says] of [['', /1 to 128 bytes/], ['two\nlines', /control characters/], [42, /holder must be/]]) {
      assert.throws(() => new LockManager('redis://127.0.0.1:1', { holder: bad }), (e) => {
        assert.ok(e instanceof InvalidArgumentError, e)
        assert.match(e.message, says)
        return true
      })
    }
  })
})
