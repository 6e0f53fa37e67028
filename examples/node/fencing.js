// A fencing-token guarded write. A holder that stalls past its TTL loses the lock to another
// client; when it wakes up and writes, the storage sees an older fencing token and refuses.
//   FENCELOCK_URL=redis://127.0.0.1:6379 node fencing.js
'use strict'
const { setTimeout: sleep } = require('node:timers/promises')
const { LockManager } = require('fencelock')

/** A storage that remembers the largest fencing token it has accepted per resource. */
class FencedStore {
  constructor() {
    this.values = new Map()
    this.tokens = new Map()
  }

  write(resource, value, fencingToken) {
    const last = this.tokens.get(resource) ?? -1n
    if (fencingToken <= last) {
      throw new Error(`rejected write with fencing token ${fencingToken}: already saw ${last}`)
    }
    this.tokens.set(resource, fencingToken)
    this.values.set(resource, value)
  }
}

async function main() {
  const url = process.env.FENCELOCK_URL || 'redis://127.0.0.1:6379'
  const a = new LockManager(url)
  const b = new LockManager(url)
  const store = new FencedStore()
  try {
    const slow = await a.acquire('invoice-42', { ttl: 200 })
    console.log(`client A holds the lock with token ${slow.fencingToken}, then stalls (GC pause, slow disk...)`)
    await sleep(400) // longer than the TTL: the lock expires

    const fast = await b.acquire('invoice-42', { ttl: 5_000 })
    store.write('invoice-42', 'written by B', fast.fencingToken)
    console.log(`client B took over with token ${fast.fencingToken} and wrote`)
    await fast.release()

    try {
      store.write('invoice-42', 'written by A', slow.fencingToken)
      throw new Error('the stale write was accepted')
    } catch (err) {
      if (err.message === 'the stale write was accepted') throw err
      console.log(`client A's late write: ${err.message}`)
    }
    console.log(`stored value: ${store.values.get('invoice-42')}`)
    console.log(`A's lock lost: ${slow.lost}`)
  } finally {
    await a.close()
    await b.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
