// A worker in Node.js for the cross-language fault tests (tests/chaos/tests/mixed.rs,
// mixed_faults.rs) and the demo (ci/demo.sh), using the fencelock npm package: bindings-node
// of this checkout, or the directory named by FENCELOCK_NODE_PACKAGE.
//
//   node worker.mjs --servers URL[,URL...] --names A[,B...] --rounds N --hold-ms N --holder ID
//                   [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]
//                   [--lease semaphore:LIMIT:COUNT | --lease rw:N | --lease election]
//   node worker.mjs hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
//                   [--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]
//
// Same protocol as worker.py: one `HOLD name=.. token=.. start_us=.. end_us=.. validity_us=..
// holder=..` line per hold (start right after acquire resolved, validity read after it, end
// before release; wall-clock microseconds), `FAIL kind=K took_ms=N` per failed acquisition,
// `RFAIL kind=K` per failed release, then `DONE acquired=N failed=M`; a lock whose validity
// does not cover the hold plus SLACK_MS is released unused, with a `SHORT name=..
// validity_us=.. holder=..` line. `--lease` as worker.py's: permits of a semaphore, or read
// shares of a read-write lock with one write every N rounds, the kind ending the HOLD lines.
//
// `hold` is the interactive mode of `chaos-worker hold` (fencelock_chaos::paused has the
// protocol): `ACQUIRED token=T start_us=S validity_us=V pid=P`, then stdin commands `WRITE`
// (fenced store: the Lua check-and-set of fencelock_chaos::store byte for byte, with the
// fencing token; unfenced store: a plain SET; both on the redis-server at --store, over a
// plain socket) -> `WROTE fenced=accepted|rejected unfenced=written lost=BOOL end_us=E`
// (`lost`: the lock's own flag, read before the writes), and `RELEASE` -> `RELEASED
// result=ok|KIND end_us=E`, then exit. A failed acquire: `ERROR kind=K message=...`, exit 2.
import { readFileSync, writeSync } from 'node:fs'
import net from 'node:net'
import readline from 'node:readline'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import path from 'node:path'
import { performance } from 'node:perf_hooks'
import { setTimeout as sleep } from 'node:timers/promises'
import { nowUs } from './wallclock.mjs'

const require = createRequire(import.meta.url)
const here = path.dirname(fileURLToPath(import.meta.url))
const pkg = process.env.FENCELOCK_NODE_PACKAGE || path.join(here, '..', '..', '..', 'bindings-node')
const { LockManager } = require(pkg)


const KINDS = {
  ERR_NOT_ACQUIRED: 'not_acquired',
  ERR_UNAVAILABLE: 'unavailable',
  ERR_LOCK_LOST: 'not_held',
  ERR_REDIS: 'redis_error',
  ERR_INVALID_ARG: 'invalid_argument',
}
const kind = (e) => KINDS[e && e.code] || `error:${(e && (e.code || e.name)) || 'unknown'}`

// A comma separates URLs; a part that does not start a URL (host:port) continues the previous
// one (a cluster URL names several nodes).
function serverList(v) {
  const out = []
  for (const part of v.split(',')) {
    if (out.length && !part.includes('://')) out[out.length - 1] += `,${part}`
    else out.push(part)
  }
  return out
}

function parse(argv) {
  const a = { ttlMs: 1000, waitMs: 10000, serverTimeoutMs: 100, durationMs: 0 }
  const flags = {
    '--servers': (v) => (a.servers = serverList(v)),
    '--names': (v) => (a.names = v.split(',')),
    '--rounds': (v) => (a.rounds = Number(v)),
    '--hold-ms': (v) => (a.holdMs = Number(v)),
    '--holder': (v) => (a.holder = v),
    '--ttl-ms': (v) => (a.ttlMs = Number(v)),
    '--wait-ms': (v) => (a.waitMs = Number(v)),
    '--server-timeout-ms': (v) => (a.serverTimeoutMs = Number(v)),
    '--duration-ms': (v) => (a.durationMs = Number(v)),
    '--lease': (v) => (a.lease = v),
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
      '--hold-ms N --holder ID [--ttl-ms N] [--wait-ms N] [--server-timeout-ms N] [--duration-ms N]\n' +
      '       node worker.mjs hold --servers URL[,URL] --name NAME [--ttl-ms N] [--wait-ms N] ' +
      '[--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]\n',
  )
  process.exit(64)
}

// One line per write, synchronously: stdout is a pipe, and the process may be killed.
const say = (line) => writeSync(1, line + '\n')

// Room, past the hold, that the validity must leave before the worker uses a lock (a late
// wake-up on a busy machine), as in worker.py.
const SLACK_MS = 50

async function release(lock) {
  try {
    await lock.release()
  } catch (e) {
    say(`RFAIL kind=${kind(e)}`)
  }
}

function crc(s) {
  let h = 0
  for (const b of Buffer.from(s)) h = (h * 31 + b) >>> 0
  return h
}

// The fenced store's check-and-set, shared with tests/chaos/src/store.rs (the test checks its
// SHA1 on the store).
const FENCED_WRITE = readFileSync(new URL('./fenced_write.lua', import.meta.url), 'utf8')

// Sends one command to the redis-server at `url` (redis://HOST:PORT) on a fresh connection;
// resolves to its reply (a number, a string, or null), rejects on an error reply.
function redisCall(url, ...args) {
  const { hostname, port } = new URL(url)
  if (!hostname || !port) return Promise.reject(new Error(`store URL without host and port: ${url}`))
  const parts = [`*${args.length}\r\n`]
  for (const arg of args) parts.push(`$${Buffer.byteLength(arg)}\r\n${arg}\r\n`)
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: hostname, port: Number(port) })
    let got = Buffer.alloc(0)
    const done = (err, value) => {
      sock.destroy()
      if (err) reject(err)
      else resolve(value)
    }
    sock.setTimeout(5000, () => done(new Error('store timed out')))
    sock.on('error', (e) => done(e))
    sock.on('data', (chunk) => {
      got = Buffer.concat([got, chunk])
      const eol = got.indexOf('\r\n')
      if (eol < 0) return
      const kind = String.fromCharCode(got[0])
      const rest = got.subarray(1, eol).toString()
      if (kind === '+') done(null, rest)
      else if (kind === '-') done(new Error(rest))
      else if (kind === ':') done(null, Number(rest))
      else if (kind === '$') {
        const n = Number(rest)
        if (n < 0) done(null, null)
        else if (got.length >= eol + 2 + n + 2) done(null, got.subarray(eol + 2, eol + 2 + n).toString())
      } else done(new Error(`unexpected reply ${got.subarray(0, eol)}`))
    })
    sock.write(parts.join(''))
  })
}

const storeError = (e) => `error:${String((e && e.message) || e).replace(/ /g, '_')}`

function parseHold(argv) {
  const a = { ttlMs: 1000, waitMs: 10000, autoExtend: false, resource: 'resource', value: '' }
  const flags = {
    '--servers': (v) => (a.servers = serverList(v)),
    '--name': (v) => (a.name = v),
    '--ttl-ms': (v) => (a.ttlMs = Number(v)),
    '--wait-ms': (v) => (a.waitMs = Number(v)),
    '--server-timeout-ms': (v) => (a.serverTimeoutMs = Number(v)),
    '--store': (v) => (a.store = v),
    '--resource': (v) => (a.resource = v),
    '--value': (v) => (a.value = v),
  }
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--auto-extend') {
      a.autoExtend = true
      continue
    }
    const set = flags[argv[i]]
    if (!set || argv[i + 1] === undefined) usage(`bad argument ${argv[i]}`)
    set(argv[++i])
  }
  if (a.servers === undefined || a.name === undefined) usage('hold needs --servers and --name')
  return a
}

async function hold(argv) {
  const a = parseHold(argv)
  const options = { retryDelay: 50 }
  if (a.serverTimeoutMs !== undefined) options.serverTimeout = a.serverTimeoutMs
  const manager = new LockManager(a.servers, options)
  let lock
  try {
    lock = await manager.acquire(a.name, { ttl: a.ttlMs, wait: a.waitMs, autoExtend: a.autoExtend })
  } catch (e) {
    say(`ERROR kind=${kind(e)} message=${(e && e.message) || e}`)
    process.exit(2)
  }
  const startUs = nowUs()
  const validityUs = Math.floor(lock.validity * 1000)
  say(`ACQUIRED token=${lock.fencingToken} start_us=${startUs} validity_us=${validityUs} pid=${process.pid}`)
  for await (const line of readline.createInterface({ input: process.stdin })) {
    const command = line.trim()
    if (command === 'WRITE') {
      if (a.store === undefined) usage('WRITE needs --store')
      const lost = lock.lost
      let fenced
      try {
        const accepted = await redisCall(
          a.store,
          'EVAL',
          FENCED_WRITE,
          '2',
          `fenced:${a.resource}:token`,
          `fenced:${a.resource}:data`,
          String(lock.fencingToken),
          a.value,
        )
        fenced = accepted === 1 ? 'accepted' : 'rejected'
      } catch (e) {
        fenced = storeError(e)
      }
      let unfenced
      try {
        await redisCall(a.store, 'SET', `unfenced:${a.resource}`, a.value)
        unfenced = 'written'
      } catch (e) {
        unfenced = storeError(e)
      }
      say(`WROTE fenced=${fenced} unfenced=${unfenced} lost=${lost} end_us=${nowUs()}`)
    } else if (command === 'RELEASE') {
      const endUs = nowUs()
      let result = 'ok'
      try {
        await lock.release()
      } catch (e) {
        result = kind(e)
      }
      say(`RELEASED result=${result} end_us=${endUs}`)
      process.exit(0)
    } else {
      process.stderr.write(`worker.mjs: unknown command ${JSON.stringify(command)}\n`)
    }
  }
  process.exit(0)
}

/** How round `r` acquires `name` under `--lease`: [acquire(options), the HOLD line's kind]. */
function leaseFor(manager, lease, name, r) {
  if (lease?.startsWith('semaphore:')) {
    const [, limit, count] = lease.split(':')
    const sem = manager.semaphore(name, Number(limit))
    return [(o) => sem.acquire({ ...o, count: Number(count) }), ` kind=semaphore count=${count} limit=${limit}`]
  }
  if (lease?.startsWith('rw:')) {
    const rw = manager.rwlock(name)
    if (r % Number(lease.slice(3)) === 0) return [(o) => rw.write(o), ' kind=write']
    return [(o) => rw.read(o), ' kind=read']
  }
  if (lease === 'election') {
    const election = manager.election(name)
    return [(o) => election.campaign({ ...o, value: `node-${process.pid}` }).then((t) => t.lock), '']
  }
  return [(o) => manager.acquire(name, o), '']
}

// With FENCELOCK_WORKER_GATE=1: says READY once the manager is built and waits for a line on
// stdin, so that the test starts every worker's run at the same moment.
async function gate() {
  if (process.env.FENCELOCK_WORKER_GATE !== '1') return
  say('READY')
  const lines = readline.createInterface({ input: process.stdin })
  for await (const _ of lines) break
}

async function main() {
  if (process.argv[2] === 'hold') return hold(process.argv.slice(3))
  const a = parse(process.argv.slice(2))
  const manager = new LockManager(a.servers, { retryDelay: 50, serverTimeout: a.serverTimeoutMs })
  await gate()
  const deadline = a.durationMs > 0 ? performance.now() + a.durationMs : Infinity
  const first = crc(a.holder) % a.names.length
  let acquired = 0
  let failed = 0
  for (let r = 0; r < a.rounds && performance.now() < deadline; r++) {
    const name = a.names[(first + r) % a.names.length]
    const t0 = performance.now()
    const [acquire, kindFields] = leaseFor(manager, a.lease, name, r)
    let lock
    try {
      lock = await acquire({ ttl: a.ttlMs, wait: a.waitMs })
    } catch (e) {
      failed++
      say(`FAIL kind=${kind(e)} took_ms=${Math.round(performance.now() - t0)}`)
      await sleep(5) // do not spin when servers refuse at once
      continue
    }
    const startUs = nowUs()
    const validityUs = Math.floor(lock.validity * 1000)
    const fence = lock.fencingToken
    if (validityUs < (a.holdMs + SLACK_MS) * 1000) {
      // Too little validity left for the work: give the lock back unused.
      say(`SHORT name=${name} validity_us=${validityUs} holder=${a.holder}`)
      await release(lock)
      continue
    }
    if (a.holdMs > 0) await sleep(a.holdMs)
    const endUs = nowUs()
    say(
      `HOLD name=${name} token=${fence} start_us=${startUs} end_us=${endUs} ` +
        `validity_us=${validityUs} holder=${a.holder}${kindFields}`,
    )
    acquired++
    await release(lock)
  }
  say(`DONE acquired=${acquired} failed=${failed}`)
  await manager.close()
}

main().catch((e) => {
  process.stderr.write(`worker.mjs: ${e && e.stack ? e.stack : e}\n`)
  process.exit(1)
})
