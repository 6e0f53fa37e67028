// The debug hook and the connection options: what fencelock does, as events, and a manager
// configured for production (TLS, timeouts) from the environment.
//   FENCELOCK_URL=redis://127.0.0.1:6379 node events.js
//   FENCELOCK_URL=rediss://user:password@redis.internal:6380 FENCELOCK_TLS_CA=/etc/ssl/redis-ca.pem node events.js
// (NODE_DEBUG=fencelock prints the same events to stderr without any code.)
'use strict'
const { LockManager, onEvent } = require('fencelock')

async function main() {
  // Every event at 'debug' or above: acquired, acquire failed, extend, release, lock lost.
  // Events carry the lock name and timings, never a token or a password.
  const unsubscribe = onEvent(({ level, message, fields }) => {
    const details = Object.entries(fields).map(([k, v]) => `${k}=${v}`).join(' ')
    console.log(`[fencelock ${level}] ${message} ${details}`)
  })

  const manager = new LockManager(process.env.FENCELOCK_URL || 'redis://127.0.0.1:6379', {
    connectTimeout: 1_000, // give up on a connection after 1 s (default 2 s)
    tlsCaFile: process.env.FENCELOCK_TLS_CA, // rediss:// only: trust this CA (undefined: system roots)
  })
  console.log('servers:', manager.servers.join(', ')) // host:port, never the password
  try {
    const lock = await manager.acquire('events:demo', { ttl: 5_000, wait: 2_000 })
    await lock.extend(5_000)
    await lock.release()
  } finally {
    await manager.close()
    // Events arrive on the event loop shortly after they happen: let the last ones through.
    setTimeout(unsubscribe, 50)
  }
}

main().catch((err) => {
  console.error(err)
  process.exitCode = 1
})
