#!/usr/bin/env node
// fencelock benchmark runner for Node (issue #8).
//
// Runs ONE scenario for ONE implementation against Redis servers that are already running and
// prints one JSON object as the last line of stdout (everything else goes to stderr).
//
//   runner.mjs cycle   --impl IMPL --servers URL[,URL...] --duration-ms D [--ttl-ms 10000] [--name NAME] [--samples]
//   runner.mjs contend --impl IMPL --servers URLS --name NAME --hold-ms H --duration-ms D --start-at-ms EPOCH_MS --worker ID [--ttl-ms 10000]
//   runner.mjs scale   --impl IMPL --servers URLS --tasks K --duration-ms D [--ttl-ms 10000]
//   runner.mjs hold    --impl IMPL --servers URLS --count 10000 [--ttl-ms 60000]
//
// IMPL: ours (the fencelock binding: $FENCELOCK_NODE or <repo>/bindings-node), redlock (npm
// redlock v5 over ioredis clients), floor (ioredis: SET NX PX + EVALSHA, parallel over servers).
// Bad flags or an unknown impl: exit 2.

import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { nowUs } from '../../tests/chaos/workers/wallclock.mjs'

const require = createRequire(import.meta.url)
const HERE = dirname(fileURLToPath(import.meta.url))
const LANG = 'node'
const IMPLS = ['ours', 'redlock', 'floor']
const WARMUP_CYCLES = 50
// After a failed cycle, pause this long so that a dead server does not turn the loop into a
// hot spin on a shared machine (the failure still counts; the pause is not in its latency).
const ERROR_PAUSE_MS = 1
// How long past the end of `contend` a worker keeps waiting for the lock before it gives up.
const WAIT_PAST_END_MS = 5000
const ABANDONED = Symbol('abandoned')
// The floor's retry interval while waiting in `contend` (redlock's default retryDelay).
const FLOOR_RETRY_MS = 200
const RELEASE_LUA =
  'if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end'

class UsageError extends Error {}

function log(msg) {
  process.stderr.write(`runner.mjs: ${msg}\n`)
}

const seenErrors = new Set()
function note(err) {
  // Each distinct kind of error once on stderr.
  const key = `${err?.name}:${err?.code ?? ''}`
  if (!seenErrors.has(key)) {
    seenErrors.add(key)
    log(`error (first of its kind): ${err?.name} ${err?.code ?? ''}: ${err?.message}`)
  }
}

const majority = (n) => Math.floor(n / 2) + 1
const nowNs = () => process.hrtime.bigint()
// Wall clock in integer epoch microseconds: performance.timeOrigin can be off by milliseconds.
const wallUs = nowUs
// The contention scenario's timestamps, compared between the workers (handoff gaps): the
// monotonic clock, which every process on the machine shares, read directly. A wall clock
// estimated from it (wallUs) was once ~1.2 ms off in one of eight workers, and 13 of its
// handoffs counted as overlaps.
const monoUs = () => Number(process.hrtime.bigint() / 1000n)

// ---------------------------------------------------------------------------------------------
// Implementations: tryAcquire(name) -> handle | null, acquire(name) -> handle (waits without
// giving up), release(handle) (rejects when not released), close().

class Ours {
  constructor(servers, ttlMs) {
    const path = process.env.FENCELOCK_NODE || join(HERE, '..', '..', 'bindings-node')
    const { LockManager } = require(path)
    this.ttl = ttlMs
    this.m = new LockManager(servers.length === 1 ? servers[0] : servers)
  }
  async init() {}
  tryAcquire(name) {
    return this.m.tryAcquire(name, { ttl: this.ttl })
  }
  acquire(name) {
    return this.m.acquire(name, { ttl: this.ttl }) // wait omitted: until acquired
  }
  release(lock) {
    return lock.release()
  }
  async close() {
    await this.m.close()
  }
}

function ioredis() {
  const mod = require('ioredis')
  return mod.Redis ?? mod.default ?? mod
}

class RedlockImpl {
  constructor(servers, ttlMs) {
    const Redis = ioredis()
    const mod = require('redlock')
    const Redlock = mod.default ?? mod.Redlock ?? mod
    // Clients and Redlock as redlock's README shows them, default settings.
    this.clients = servers.map((u) => new Redis(u))
    this.redlock = new Redlock(this.clients)
    // README: without an "error" listener, EventEmitter would throw on the first client error.
    this.redlock.on('error', () => {})
    this.ttl = ttlMs
  }
  async init() {}
  tryAcquire(name) {
    // retryCount 0: one attempt. Not acquired (held, or no quorum) rejects with an
    // ExecutionError: the cycle counts as failed either way.
    return this.redlock.acquire([name], this.ttl, { retryCount: 0 })
  }
  acquire(name) {
    // retryCount -1: retry for ever (the default of 10 tries would give up under contention).
    return this.redlock.acquire([name], this.ttl, { retryCount: -1 })
  }
  release(lock) {
    return lock.release()
  }
  async close() {
    await Promise.allSettled(this.clients.map((c) => c.quit()))
  }
}

class Floor {
  constructor(servers, ttlMs) {
    const Redis = ioredis()
    // The floor is the bare cost of SET NX PX + EVALSHA: no offline queue and no per-request
    // retries (ioredis' defaults queue a command for a disconnected server and retry it 20
    // times while reconnecting, which would measure the reconnect policy, not the floor).
    this.clients = servers.map(
      (u) => new Redis(u, { enableOfflineQueue: false, maxRetriesPerRequest: 0, lazyConnect: true }),
    )
    this.clients.forEach((c) => c.on('error', () => {}))
    this.ttl = ttlMs
    this.need = majority(servers.length)
    this.sha = null
  }
  async init() {
    await Promise.all(this.clients.map((c) => c.connect()))
    const shas = await Promise.all(this.clients.map((c) => c.script('LOAD', RELEASE_LUA)))
    this.sha = shas[0]
  }
  async delOne(c, name, token) {
    try {
      return await c.evalsha(this.sha, 1, name, token)
    } catch (err) {
      if (!String(err?.message).startsWith('NOSCRIPT')) throw err
      await c.script('LOAD', RELEASE_LUA) // a restarted server forgot the script
      return await c.evalsha(this.sha, 1, name, token)
    }
  }
  async setAll(name, token) {
    const res = await Promise.all(
      this.clients.map((c) => c.set(name, token, 'PX', this.ttl, 'NX').catch(() => null)),
    )
    return res.filter((r) => r === 'OK').length
  }
  async delAll(name, token) {
    const res = await Promise.all(this.clients.map((c) => this.delOne(c, name, token).catch(() => 0)))
    return res.filter((r) => r === 1).length
  }
  async tryAcquire(name) {
    const token = randomBytes(16).toString('hex')
    if ((await this.setAll(name, token)) >= this.need) return [name, token]
    await this.delAll(name, token) // undo the minority it won
    return null
  }
  async acquire(name) {
    for (;;) {
      const h = await this.tryAcquire(name)
      if (h) return h
      await sleep(FLOOR_RETRY_MS)
    }
  }
  async release([name, token]) {
    if ((await this.delAll(name, token)) < this.need) throw new Error('floor release: no majority deleted the key')
  }
  async close() {
    this.clients.forEach((c) => c.disconnect())
  }
}

const FACTORIES = { ours: Ours, redlock: RedlockImpl, floor: Floor }

// ---------------------------------------------------------------------------------------------
// Scenarios

async function cycleOnce(impl, name) {
  let lock
  try {
    lock = await impl.tryAcquire(name)
  } catch (err) {
    note(err)
    return false
  }
  if (lock == null) return false
  try {
    await impl.release(lock)
    return true
  } catch (err) {
    note(err)
    return false
  }
}

function percentiles(lat) {
  if (lat.length === 0) return { p50: null, p90: null, p99: null, max: null }
  const s = Float64Array.from(lat).sort()
  const r1 = (x) => Math.round(x * 10) / 10
  const rank = (p) => r1(s[Math.max(0, Math.ceil(p * s.length) - 1)])
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), max: r1(s[s.length - 1]) }
}

function peakRssKb() {
  const m = /VmHWM:\s+(\d+)\s+kB/.exec(readFileSync('/proc/self/status', 'utf8'))
  return m ? Number(m[1]) : null
}

async function cycle(a, impl, n) {
  for (let i = 0; i < WARMUP_CYCLES; i++) await cycleOnce(impl, a.name)
  let ok = 0
  let errors = 0
  const lat = []
  const samples = a.samples ? [] : null
  const loopStartMs = nowUs() / 1000 // wall clock at loop start
  process.stderr.write('LOOP-START\n') // the orchestrator times a kill from here
  const t0 = nowNs()
  const end = t0 + BigInt(a.durationMs) * 1_000_000n
  let now = t0
  while (now < end) {
    const good = await cycleOnce(impl, a.name)
    let after = nowNs()
    const us = Number(after - now) / 1000
    if (good) {
      ok++
      lat.push(us)
    } else errors++
    if (samples) samples.push([Math.round(Number(now - t0) / 1000) / 1000, Math.round(us * 10) / 10, good ? 1 : 0])
    if (!good) {
      await sleep(ERROR_PAUSE_MS)
      after = nowNs()
    }
    now = after
  }
  const elapsed = Number(now - t0) / 1e9
  const out = {
    scenario: 'cycle',
    impl: a.impl,
    lang: LANG,
    servers: n,
    ops: ok,
    errors,
    elapsed_s: elapsed,
    ops_per_s: elapsed > 0 ? ok / elapsed : 0,
    lat_us: percentiles(lat),
    loop_start_ms: loopStartMs,
  }
  if (samples) out.samples = samples
  return out
}

async function contend(a, impl, n) {
  const warm = `${a.name}-warmup-${a.worker}`
  for (let i = 0; i < WARMUP_CYCLES; i++) await cycleOnce(impl, warm)
  const delay = a.startAtMs - Date.now()
  if (delay > 0) await sleep(delay)
  else log(`warning: start time already passed ${-delay} ms ago`)
  const deadlineUs = monoUs() + (a.startAtMs + a.durationMs - Date.now()) * 1000
  let errors = 0
  let unfinishedWait = false
  const holds = []
  while (monoUs() < deadlineUs) {
    const req = monoUs()
    let lock
    try {
      // A wait still going on WAIT_PAST_END_MS after the end is abandoned (a peer that
      // livelocks must not hang the run); it is reported, not counted as a hold.
      const late = Math.max(0, (deadlineUs - req) / 1000 + WAIT_PAST_END_MS)
      lock = await Promise.race([impl.acquire(a.name), sleep(late).then(() => ABANDONED)])
      if (lock === ABANDONED) {
        log(`worker ${a.worker}: still waiting ${WAIT_PAST_END_MS} ms after the end; abandoned`)
        unfinishedWait = true
        break
      }
    } catch (err) {
      note(err)
      errors++
      await sleep(ERROR_PAUSE_MS)
      continue
    }
    const acq = monoUs()
    await sleep(a.holdMs)
    const relStart = monoUs()
    try {
      await impl.release(lock)
    } catch (err) {
      note(err)
      errors++
    }
    holds.push([req, acq, relStart, monoUs()])
  }
  return {
    scenario: 'contend', impl: a.impl, lang: LANG, worker: a.worker, servers: n, errors, holds,
    unfinished_wait: unfinishedWait,
  }
}

async function scale(a, impl, n) {
  // Warm-up: every task's name once, so connections are open and scripts loaded.
  await Promise.all(Array.from({ length: a.tasks }, (_, i) => cycleOnce(impl, `scale-${i}`)))
  let ok = 0
  let errors = 0
  const t0 = nowNs()
  const end = t0 + BigInt(a.durationMs) * 1_000_000n
  async function task(i) {
    const name = `scale-${i}`
    while (nowNs() < end) {
      if (await cycleOnce(impl, name)) ok++
      else {
        errors++
        await sleep(ERROR_PAUSE_MS)
      }
    }
  }
  await Promise.all(Array.from({ length: a.tasks }, (_, i) => task(i)))
  const elapsed = Number(nowNs() - t0) / 1e9
  return {
    scenario: 'scale',
    impl: a.impl,
    lang: LANG,
    servers: n,
    tasks: a.tasks,
    ops: ok,
    errors,
    elapsed_s: elapsed,
    ops_per_s: ok / elapsed,
    peak_rss_kb: peakRssKb(),
  }
}

async function hold(a, impl, n) {
  await cycleOnce(impl, 'hold-warmup') // connections open, scripts loaded
  // All COUNT acquisitions in flight at once, no limit (none of the three libraries needs one).
  let errors = 0
  const t0 = nowNs()
  const got = await Promise.all(
    Array.from({ length: a.count }, (_, i) =>
      impl.tryAcquire(`hold-${i}`).then(
        (l) => l,
        (err) => {
          note(err)
          return null
        },
      ),
    ),
  )
  const acquireS = Number(nowNs() - t0) / 1e9
  const held = got.filter((l) => l != null)
  errors += got.length - held.length
  const t1 = nowNs()
  const rel = await Promise.all(
    held.map((l) =>
      impl.release(l).then(
        () => true,
        (err) => {
          note(err)
          return false
        },
      ),
    ),
  )
  const releaseS = Number(nowNs() - t1) / 1e9
  errors += rel.filter((r) => !r).length
  return {
    scenario: 'hold',
    impl: a.impl,
    lang: LANG,
    servers: n,
    count: a.count,
    held: held.length,
    errors,
    acquire_s: acquireS,
    release_s: releaseS,
    peak_rss_kb: peakRssKb(),
  }
}

// ---------------------------------------------------------------------------------------------
// Command line

const SCENARIOS = {
  cycle: { run: cycle, opts: ['impl', 'servers', 'duration-ms', 'ttl-ms', 'name', 'samples'], need: ['duration-ms'], ttl: 10000 },
  contend: {
    run: contend,
    opts: ['impl', 'servers', 'duration-ms', 'ttl-ms', 'name', 'hold-ms', 'start-at-ms', 'worker'],
    need: ['duration-ms', 'hold-ms', 'start-at-ms', 'worker'],
    ttl: 10000,
  },
  scale: { run: scale, opts: ['impl', 'servers', 'duration-ms', 'ttl-ms', 'tasks'], need: ['duration-ms', 'tasks'], ttl: 10000 },
  hold: { run: hold, opts: ['impl', 'servers', 'ttl-ms', 'count'], need: [], ttl: 60000 },
}

function intArg(name, text, min) {
  if (!/^\d+$/.test(text ?? '')) throw new UsageError(`--${name}: not a non-negative integer: ${text}`)
  const v = Number(text)
  if (v < min) throw new UsageError(`--${name}: must be >= ${min}`)
  return v
}

function parse(argv) {
  const [scenario, ...rest] = argv
  const spec = SCENARIOS[scenario]
  if (!spec) throw new UsageError(`usage: runner.mjs {${Object.keys(SCENARIOS).join('|')}} --impl IMPL --servers URLS ...`)
  const options = {}
  for (const o of spec.opts) options[o] = { type: o === 'samples' ? 'boolean' : 'string' }
  let values
  try {
    ;({ values } = parseArgs({ args: rest, options, strict: true, allowPositionals: false }))
  } catch (err) {
    throw new UsageError(err.message)
  }
  for (const o of ['impl', 'servers', ...spec.need]) {
    if (values[o] === undefined) throw new UsageError(`${scenario}: --${o} is required`)
  }
  if (!IMPLS.includes(values.impl)) throw new UsageError(`unknown impl '${values.impl}' (one of: ${IMPLS.join(', ')})`)
  // A comma separates URLs; one that does not start a URL (`host:port`) continues the previous
  // one (a cluster URL names several nodes).
  const servers = []
  for (const part of values.servers.split(',').map((s) => s.trim()).filter(Boolean)) {
    if (servers.length && !part.includes('://')) servers[servers.length - 1] += `,${part}`
    else servers.push(part)
  }
  if (servers.length === 0) throw new UsageError('--servers: no URL given')
  const a = {
    scenario,
    run: spec.run,
    impl: values.impl,
    servers,
    ttlMs: values['ttl-ms'] !== undefined ? intArg('ttl-ms', values['ttl-ms'], 1) : spec.ttl,
    name: values.name ?? 'bench',
    samples: Boolean(values.samples),
  }
  if (values['duration-ms'] !== undefined) a.durationMs = intArg('duration-ms', values['duration-ms'], 1)
  if (values['hold-ms'] !== undefined) a.holdMs = intArg('hold-ms', values['hold-ms'], 0)
  if (values['start-at-ms'] !== undefined) a.startAtMs = intArg('start-at-ms', values['start-at-ms'], 0)
  if (values.worker !== undefined) a.worker = /^\d+$/.test(values.worker) ? Number(values.worker) : values.worker
  if (values.tasks !== undefined) a.tasks = intArg('tasks', values.tasks, 1)
  a.count = values.count !== undefined ? intArg('count', values.count, 1) : 10000
  return a
}

async function main() {
  let a
  try {
    a = parse(process.argv.slice(2))
  } catch (err) {
    if (!(err instanceof UsageError)) throw err
    log(err.message)
    process.exit(2)
  }
  const impl = new FACTORIES[a.impl](a.servers, a.ttlMs)
  await impl.init()
  const result = await a.run(a, impl, a.servers.length)
  // process.exit() does not wait for a piped stdout to drain (large results were cut at
  // 64 KiB): exit once the write has been flushed.
  await new Promise((resolve) => process.stdout.write(JSON.stringify(result) + '\n', resolve))
  // Closing can wait on a dead server's reconnect loop: the result is out, so just leave.
  process.exit(0)
}

main().catch((err) => {
  log(`fatal: ${err?.stack ?? err}`)
  process.exit(1)
})
