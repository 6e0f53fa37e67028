// A redis+sentinel:// entry follows a forced failover, from Node (issue 20, item 8): a master,
// its replica and three real sentinels on free loopback ports.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { createRequire } from 'node:module'

import { startSentinelSetup } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager } = require('../index.js')

describe('Sentinel', () => {
  it('a sentinel entry follows a forced failover', async () => {
    const setup = await startSentinelSetup()
    const m = new LockManager(setup.url)
    try {
      let lock = await m.acquire('failover', { ttl: 5000, wait: 5000 })
      assert.equal(await setup.master.get('failover'), lock.token)
      await lock.release()
      await setup.failover()
      lock = await m.acquire('failover', { ttl: 5000, wait: 10_000 })
      assert.equal(await setup.replica.get('failover'), lock.token, 'written to the new master')
      await lock.release()
    } finally {
      await m.close()
      await setup.stop()
    }
  })
})
