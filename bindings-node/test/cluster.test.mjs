// The lock on a real Redis Cluster (3 masters, 3 replicas) from Node (issue 19): one
// redis+cluster:// URL is one server of the quorum; acquire, extend, release, fencing per
// name, waiters woken (sharded pub/sub) and served in order, replica acknowledgment.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startCluster, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, InvalidArgumentError } = require('../index.js')

describe('Redis Cluster', () => {
  let cluster
  before(async () => {
    cluster = await startCluster()
  })
  after(async () => {
    await cluster.stop()
  })

  it('acquires, extends and releases, with fencing tokens per name', async () => {
    const m = new LockManager(cluster.url)
    const c = cluster.client()
    try {
      for (const name of ['cl-jobs', '{tag}cl-x', 'cl-open{', '}{cl-y']) {
        const lock = await m.acquire(name, { ttl: 5000 })
        assert.equal(await c.get(name), lock.token)
        await lock.extend(20_000)
        assert.ok((await c.pttl(name)) > 10_000)
        await lock.release()
        assert.equal(await c.get(name), null)
        const again = await m.acquire(name, { ttl: 5000 })
        assert.ok(again.fencingToken > lock.fencingToken)
        assert.equal(await m.tryAcquire(name), null)
        await again.release()
      }
      assert.equal(await c.set('cl-shared', 'someone-else', 'PX', 5000, 'NX'), 'OK')
      assert.equal(await m.tryAcquire('cl-shared'), null, 'a classic SET NX PX lock excludes ours')
    } finally {
      await m.close()
    }
  })

  it('wakes the waiters in the order they came', async () => {
    // A retry delay far longer than the test: a waiter gets the lock only by being woken.
    const managers = [0, 1, 2].map(() => new LockManager(cluster.url, { retryDelay: 30_000 }))
    try {
      const holder = await managers[0].acquire('cl-line', { ttl: 30_000 })
      const got = []
      const waiters = []
      for (const i of [1, 2]) {
        waiters.push(
          managers[i].acquire('cl-line', { ttl: 30_000, wait: 60_000 }).then(async (lock) => {
            got.push([i, lock.fencingToken])
            await lock.release()
          }),
        )
        await waitUntil(async () => (await cluster.queued('cl-line')) >= i, 'the waiter queued', 10_000)
      }
      const started = Date.now()
      await holder.release()
      await Promise.all(waiters)
      assert.ok(Date.now() - started < 15_000, 'woken, not polling')
      assert.deepEqual(got.map((g) => g[0]), [1, 2])
      assert.ok(got[0][1] > holder.fencingToken && got[1][1] > got[0][1])
    } finally {
      for (const m of managers) await m.close()
    }
  })

  it('waits for replica acknowledgment when asked', async () => {
    const m = new LockManager(cluster.url, { replicaAck: 1, replicaAckTimeout: 1000, serverTimeout: 2000 })
    try {
      const lock = await m.acquire('cl-acked', { ttl: 5000 })
      await lock.extend(10_000)
      await lock.release()
    } finally {
      await m.close()
    }
    assert.throws(() => new LockManager(cluster.url, { replicaAck: 0 }), InvalidArgumentError)
    assert.throws(() => new LockManager(cluster.url, { replicaAck: 1.5 }), /whole number/)
    assert.throws(() => new LockManager(cluster.url, { replicaAckTimeout: 100 }), /needs replicaAck/)
  })

  it('refuses a bad cluster URL at construction, without its password', () => {
    assert.throws(
      () => new LockManager('redis+cluster://u:hunter2-secret@127.0.0.1:7000/2'),
      (e) => e instanceof InvalidArgumentError && /no database/.test(e.message) && !e.message.includes('hunter2-secret'),
    )
  })
})
