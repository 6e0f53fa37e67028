// A contend worker in Node.js for the cross-language fault tests (tests/chaos/tests/mixed.rs)
// and the demo (ci/demo.sh), using the fencelock npm package: bindings-node of this checkout,
// or the directory named by FENCELOCK_NODE_PACKAGE.
//
//   node worker.mjs --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N --holder ID
//                   [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]
//
// Same protocol as worker.py: one `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=..
// holder=..` line per hold (start right after acquire resolved, validity read after it, end
// before release; wall-clock microseconds), `FAIL kind=K took_ms=N` per failed acquisition,
// `RFAIL kind=K` per failed release, then `DONE acquired=N failed=M`.
import { writeSync } from 'node:fs'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const pkg = process.env.FENCELOCK_NODE_PACKAGE || path.join(here, '..', '..', '..', 'bindings-node')
const { LockManager } = require(pkg)

// Wall-clock microseconds with microsecond resolution (Date.now() only has milliseconds):
// timeOrigin is the wall clock at start (microseconds), performance.now() the monotonic time
// since, which NTP slews at the same rate as the wall clock.
const nowUs = () => Math.floor((performance.timeOrigin + performance.now()) * 1000)

const KINDS = {
  ERR_NOT_ACQUIRED: 'not_acquired',
  ERR_UNAVAILABLE: 'unavailable',
  ERR_LOCK_LOST: 'not_held',
  ERR_REDIS: 'redis_error',
  ERR_INVALID_ARG: 'invalid_argument',
}
const kind = (e) => KINDS[e && e.code] || `error:${(e && (e.code || e.name)) || 'unknown'}`

function parse(argv) {
  const a = { ttlMs: 1000, waitMs: 10000, serverTimeoutMs: 100, durationMs: 0 }
  const flags = {
    '--servers': (v) => (a.servers = v.split(',')),
    '--names': (v) => (a.names = v.split(',')),
    '--rounds': (v) => (a.rounds = Number(v)),
    '--hold-ms': (v) => (a.holdMs = Number(v)),
    '--holder': (v) => (a.holder = v),
    '--ttl-ms': (v) => (a.ttlMs = Number(v)),
    '--wait-ms': (v) => (a.waitMs = Number(v)),
    '--server-timeout-ms': (v) => (a.serverTimeoutMs = Number(v)),
    '--duration-ms': (v) => (a.durationMs = Number(v)),
  }
  for (let i = 0; i < argv.length; i += 2) {
    const set = flags[argv[i]]
    if (!set || argv[i + 1] === undefined) usage(`bad argument ${argv[i]}`)
    set(argv[i + 1])
  }
  for (const k of ['servers', 'names', 'rounds', 'holdMs', 'holder']) {
    if (a[k] === undefined || Number.isNaN(a[k])) usage(`missing ${k}`)
  }
  return a
}

function usage(why) {
  process.stderr.write(
    `worker.mjs: ${why}\nusage: node worker.mjs --servers URL[,URL] --names A[,B] --rounds N ` +
      '--hold-ms N --holder ID [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]\n',
  )
  process.exit(64)
}

// One line per write, synchronously: stdout is a pipe, and the process may be killed.
const say = (line) => writeSync(1, line + '\n')

function crc(s) {
  let h = 0
  for (const b of Buffer.from(s)) h = (h * 31 + b) >>> 0
  return h
}

async function main() {
  const a = parse(process.argv.slice(2))
  const manager = new LockManager(a.servers, { retryDelay: 50, serverTimeout: a.serverTimeoutMs })
  const deadline = a.durationMs > 0 ? performance.now() + a.durationMs : Infinity
  const first = crc(a.holder) % a.names.length
  let acquired = 0
  let failed = 0
  for (let r = 0; r < a.rounds && performance.now() < deadline; r++) {
    const name = a.names[(first + r) % a.names.length]
    const t0 = performance.now()
    let lock
    try {
      lock = await manager.acquire(name, { ttl: a.ttlMs, wait: a.waitMs })
    } catch (e) {
      failed++
      say(`FAIL kind=${kind(e)} took_ms=${Math.round(performance.now() - t0)}`)
      await sleep(5) // do not spin when servers refuse at once
      continue
    }
    const startUs = nowUs()
    const validityUs = Math.floor(lock.validity * 1000)
    const fence = lock.fencingToken
    if (a.holdMs > 0) await sleep(a.holdMs)
    const endUs = nowUs()
    say(
      `HOLD name=${name} token=${fence} start_us=${startUs} end_us=${endUs} ` +
        `validity_us=${validityUs} holder=${a.holder}`,
    )
    acquired++
    try {
      await lock.release()
    } catch (e) {
      say(`RFAIL kind=${kind(e)}`)
    }
  }
  say(`DONE acquired=${acquired} failed=${failed}`)
  await manager.close()
}

main().catch((e) => {
  process.stderr.write(`worker.mjs: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
