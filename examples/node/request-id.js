// The request-id lock of the Java write-ups (Jedis), on fencelock, across two processes.
//
// The seed pattern:
//   boolean tryGetDistributedLock(Jedis jedis, String lockKey, String requestId, int expireTime)
//       -> jedis.set(lockKey, requestId, "NX", "PX", expireTime) == "OK"
//   boolean releaseDistributedLock(Jedis jedis, String lockKey, String requestId)
//       -> EVAL "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del',
//          KEYS[1]) else return 0 end"
//
// Here the request id is the lock's token: tryGetLock writes it as the key's value with one
// try (a Jedis client on the same key excludes us and we it), detach() keeps only the id, as
// the Java code does, and releaseLock deletes the key only if it still holds that id, from
// any process. What fencelock adds: the same calls over several servers (Redlock), a fencing
// token per acquisition, and typed errors for unreachable servers instead of `false`. This
// script acquires in one process and releases from a second one, by request id.
//
//   FENCELOCK_URL=redis://127.0.0.1:6379 node request-id.js
'use strict'
const { execFileSync } = require('node:child_process')
const { randomUUID } = require('node:crypto')
const { LockManager, LockLostError } = require('fencelock')

/** SET lockKey requestId NX PX expireTime, as one try: whether it was acquired. */
async function tryGetLock(manager, lockKey, requestId, expireMs) {
  const lock = await manager.tryAcquire(lockKey, { ttl: expireMs, token: requestId })
  if (lock === null) return false
  lock.detach() // keep only the request id: held until released by id or expired
  return true
}

/** Deletes lockKey only if it still holds requestId: whether it did. */
async function releaseLock(manager, lockKey, requestId) {
  try {
    await manager.release(lockKey, requestId)
    return true
  } catch (err) {
    if (err instanceof LockLostError) return false // expired, or held under another id
    throw err
  }
}

async function main() {
  const manager = new LockManager(process.env.FENCELOCK_URL || 'redis://127.0.0.1:6379', { keyPrefix: 'example:' })
  try {
    if (process.argv[2] === '--release') {
      const [key, requestId] = process.argv.slice(3)
      console.log(`process 2: releaseLock(${key}, ${requestId}) -> ${await releaseLock(manager, key, requestId)}`)
      return
    }
    const key = 'order:42'
    const requestId = randomUUID()
    console.log(`process 1: tryGetLock(${key}, request id, 30000) -> ${await tryGetLock(manager, key, requestId, 30_000)}`)
    const other = randomUUID()
    console.log(`another request: tryGetLock -> ${await tryGetLock(manager, key, other, 30_000)}`)
    console.log(`another request: releaseLock with its own id -> ${await releaseLock(manager, key, other)}`)
    console.log(`is it still locked? ${await manager.isLocked(key)}`)
    // Hand the lock over: a second process releases it by request id.
    process.stdout.write(execFileSync(process.execPath, [__filename, '--release', key, requestId], { encoding: 'utf8' }))
    console.log(`after process 2: locked=${await manager.isLocked(key)}`)
    console.log(`process 1 releasing again -> ${await releaseLock(manager, key, requestId)}`)
  } finally {
    await manager.close()
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
