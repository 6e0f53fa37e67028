// A child process of exclusion.test.mjs: takes the lock `name` `rounds` times and, inside each
// section, checks through Redis that no other process is inside.
'use strict'
const Redis = require('ioredis')
const { LockManager } = require('../index.js')

async function main() {
  const [url, name, rounds] = process.argv.slice(2)
  const manager = new LockManager(url)
  const redis = new Redis(url)
  for (let i = 0; i < Number(rounds); i++) {
    const lock = await manager.acquire(name, { ttl: 10_000, wait: 60_000 })
    const inside = await redis.incr(`${name}:inside`)
    if (inside !== 1) await redis.incr(`${name}:overlaps`)
    await new Promise((r) => setTimeout(r, 2))
    await redis.decr(`${name}:inside`)
    await redis.incr(`${name}:sections`)
    await lock.release()
  }
  await manager.close()
  redis.disconnect()
}

main().catch((err) => {
  console.error(err)
  process.exit(1)
})
