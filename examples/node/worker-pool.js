// A worker pool capped at N across processes and machines: at most 2 calls to a rate-limited
// API at once, however many workers run. A semaphore held on the Redis servers: every process
// (and language) using the name shares the limit; waiters are served first come, first served.
//   FENCELOCK_URL=redis://127.0.0.1:6379 node worker-pool.js
'use strict'
const { LockManager } = require('fencelock')

async function main() {
  const manager = new LockManager(process.env.FENCELOCK_URL || 'redis://127.0.0.1:6379', { keyPrefix: 'example:' })
  try {
    const api = manager.semaphore('rate-limited-api', 2)
    let inside = 0
    let most = 0
    // using(): waits for a permit, keeps it alive while the callback runs, gives it back after.
    await Promise.all(Array.from({ length: 6 }, (_, i) => api.using({ ttl: 10_000 }, async (permit) => {
      inside += 1
      most = Math.max(most, inside)
      console.log(`worker ${i}: calling the API (fencing token ${permit.fencingToken})`)
      await new Promise((resolve) => setTimeout(resolve, 50))
      inside -= 1
    })))
    console.log(`6 workers ran, at most ${most} at once`)
    console.log('after:', JSON.stringify(await api.state()))
  } finally {
    await manager.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
