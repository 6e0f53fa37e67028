// Plain acquire and release.
//   FENCELOCK_URL=redis://127.0.0.1:6379 node basic.js
'use strict'
const { LockManager, NotAcquiredError } = require('fencelock')

async function main() {
  const manager = new LockManager(process.env.FENCELOCK_URL || 'redis://127.0.0.1:6379')
  try {
    // Wait at most 5 s for the lock; it expires after 10 s unless extended or released.
    const lock = await manager.acquire('reports:daily', { ttl: 10_000, wait: 5_000 })
    try {
      console.log(`acquired ${lock.name}, fencing token ${lock.fencingToken}, valid for ${lock.validity} ms`)
      // ... the work the lock protects ...
      await lock.extend(10_000) // need more time
    } finally {
      await lock.release()
    }
    console.log('released')

    // One attempt, no waiting: null when someone else holds it.
    const maybe = await manager.tryAcquire('reports:daily')
    console.log(maybe ? 'got it again' : 'held by someone else')
    await maybe?.release()
  } catch (err) {
    if (err instanceof NotAcquiredError) console.error('busy, try later')
    throw err
  } finally {
    await manager.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
