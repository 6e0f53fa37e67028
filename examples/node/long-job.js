// `using` with a job that runs much longer than the TTL: the lock is extended in the
// background every ttl/3, and `signal` aborts if it is ever lost.
//   FENCELOCK_URL=redis://127.0.0.1:6379 node long-job.js
'use strict'
const { setTimeout: sleep } = require('node:timers/promises')
const { LockManager, LockLostError } = require('fencelock')

async function main() {
  const manager = new LockManager(process.env.FENCELOCK_URL || 'redis://127.0.0.1:6379')
  try {
    const ttl = 600 // short on purpose: the job takes five times as long
    const steps = await manager.using('nightly-import', { ttl }, async (lock, signal) => {
      let done = 0
      for (let i = 0; i < 10; i++) {
        // Pass the signal to anything that accepts one: it stops as soon as the lock is lost.
        await sleep(ttl / 2, undefined, { signal })
        done++
      }
      console.log(`job done after ${done * (ttl / 2)} ms with a ${ttl} ms lock; still valid for ${lock.validity} ms`)
      return done
    })
    console.log(`completed ${steps} steps under the lock`)
  } catch (err) {
    if (err instanceof LockLostError) console.error('the lock was lost: the job was not protected')
    throw err
  } finally {
    await manager.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
