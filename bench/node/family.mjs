#!/usr/bin/env node
// The coordination family's benchmark runner (issue 34): fencelock's semaphore and read-write
// lock against redis-semaphore 5.x (npm), on servers that are already running. Prints one
// JSON object as the last line of stdout.
//
//   family.mjs cycle --impl IMPL --servers URL[,URL...] --limit L --duration-ms D
//       uncontended permit cycles (acquire 1 permit, release) one after another
//   family.mjs pool  --impl IMPL --servers URLS --limit L --workers W --hold-ms H --duration-ms D
//       W workers (async tasks, one process) take 1 permit each, hold it H ms, release, again:
//       cycles per worker and each worker's waits
//   family.mjs rw    --impl IMPL --servers URLS --workers W --read-pct P --hold-ms H --duration-ms D
//       W workers take a read share (P % of the time) or the write hold, hold it H ms
//   family.mjs handoff --impl IMPL --servers URLS --rounds N
//       on a limit of 1: a holder releases while one caller waits in line; the time from the
//       release call to the waiter's grant, N times (after 5 not counted)
//
// IMPL: ours (the fencelock binding: $FENCELOCK_NODE or <repo>/bindings-node; a semaphore, or
// for `rw` the read-write lock), ours-mutex (`rw` only: every section under one lock),
// rs-semaphore (redis-semaphore `Semaphore`, one server), rs-redlock (redis-semaphore
// `RedlockSemaphore` over every server), rs-mutex (redis-semaphore `Mutex`, for `cycle` with a
// limit of 1 and for `rw` as the mutex baseline); rs-semaphore-dropin, rs-redlock-dropin,
// rs-mutex-dropin: the same code on fencelock/compat/redis-semaphore (issue 55: only the
// import differs). redis-semaphore's acquisitions use a new object each (its docs: an object
// is one holder; reusing one ignores the limit, #155, #249) and its defaults (retryInterval
// 10 ms) but the lock timeout of ours.

import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { setTimeout as sleep } from 'node:timers/promises'

const require = createRequire(import.meta.url)
const HERE = dirname(fileURLToPath(import.meta.url))
const TTL_MS = 10_000
const PEERS = ['rs-semaphore', 'rs-redlock', 'rs-mutex']
const IMPLS = ['ours', 'ours-mutex', ...PEERS, ...PEERS.map((p) => `${p}-dropin`)]
const FENCELOCK = process.env.FENCELOCK_NODE || join(HERE, '..', '..', 'bindings-node')

function ours(servers) {
  const { LockManager } = require(FENCELOCK)
  return new LockManager(servers.length === 1 ? servers[0] : servers)
}

/** `take(kind)` -> release function, for one implementation; `kind` 'permit', 'read', 'write'. */
function implementation(impl, servers, { limit, name }) {
  if (impl === 'ours' || impl === 'ours-mutex') {
    const m = ours(servers)
    const sem = m.semaphore(name, limit ?? 1)
    const rw = m.rwlock(name + ':rw')
    const take = async (kind) => {
      let lease
      if (impl === 'ours-mutex') lease = await m.acquire(name + ':mutex', { ttl: TTL_MS })
      else if (kind === 'permit') lease = await sem.acquire({ ttl: TTL_MS })
      else if (kind === 'read') lease = await rw.read({ ttl: TTL_MS })
      else lease = await rw.write({ ttl: TTL_MS })
      return () => lease.release()
    }
    return { take, close: () => m.close() }
  }
  const dropin = impl.endsWith('-dropin')
  const rs = dropin ? require(join(FENCELOCK, 'compat', 'redis-semaphore.js')) : require('redis-semaphore')
  const Redis = require('ioredis')
  const clients = servers.map((u) => new Redis(u))
  const options = { lockTimeout: TTL_MS, acquireTimeout: 60_000 }
  const make = {
    'rs-semaphore': () => new rs.Semaphore(clients[0], name, limit, options),
    'rs-redlock': () => new rs.RedlockSemaphore(clients, name, limit, options),
    'rs-mutex': () => new rs.Mutex(clients[0], name + ':mutex', options),
  }[impl.replace(/-dropin$/, '')]
  const take = async () => {
    const lock = make()
    await lock.acquire()
    return () => lock.release()
  }
  return { take, close: async () => clients.forEach((c) => c.disconnect()) }
}

const pct = (sorted, p) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : 0)

async function cycle(im, durationMs) {
  for (let i = 0; i < 20; i++) await (await im.take('permit'))()
  const t0 = performance.now()
  let n = 0
  while (performance.now() - t0 < durationMs) {
    await (await im.take('permit'))()
    n++
  }
  return { cycles: n, seconds: (performance.now() - t0) / 1000 }
}

/** W workers, each looping take(kind()) -> hold -> release until the end. */
async function workers(im, { workers, holdMs, durationMs, kind }) {
  const end = performance.now() + durationMs
  const per = []
  const run = async (w) => {
    const waits = []
    let cycles = 0
    while (performance.now() < end) {
      const t0 = performance.now()
      const release = await im.take(kind(w))
      waits.push(performance.now() - t0)
      await sleep(holdMs)
      await release()
      cycles++
    }
    waits.sort((a, b) => a - b)
    per.push({ worker: w, cycles, p50_wait_ms: pct(waits, 50), p99_wait_ms: pct(waits, 99) })
  }
  const t0 = performance.now()
  await Promise.all(Array.from({ length: workers }, (_, w) => run(w)))
  const seconds = (performance.now() - t0) / 1000
  per.sort((a, b) => a.worker - b.worker)
  return { seconds, cycles: per.reduce((s, p) => s + p.cycles, 0), workers: per }
}

/** Hand-off latency: a waiter in line is granted the permit a release gives back. */
async function handoff(im, rounds) {
  const times = []
  for (let i = 0; i < rounds + 5; i++) {
    const release = await im.take('permit')
    const granted = im.take('permit').then((r) => [r, performance.now()])
    // Setup, not a measurement: the waiter's refused attempt and its place in line (ours: its
    // subscription too) before the release. The pause's length varies over 10 ms, so that a
    // caller that polls (redis-semaphore: every 10 ms) is not met in the same phase each time.
    await sleep(30 + ((i * 3.7) % 10))
    const t0 = performance.now()
    await release()
    const [next, t1] = await granted
    await next()
    if (i >= 5) times.push(t1 - t0)
  }
  times.sort((a, b) => a - b)
  return { rounds, p50_ms: pct(times, 50), p99_ms: pct(times, 99), max_ms: times[times.length - 1] }
}

async function main() {
  const [scenario, ...rest] = process.argv.slice(2)
  const { values: a } = parseArgs({
    args: rest,
    options: {
      impl: { type: 'string' },
      servers: { type: 'string' },
      limit: { type: 'string', default: '4' },
      workers: { type: 'string', default: '16' },
      'hold-ms': { type: 'string', default: '5' },
      'read-pct': { type: 'string', default: '95' },
      'duration-ms': { type: 'string', default: '2000' },
      rounds: { type: 'string', default: '50' },
      name: { type: 'string', default: `family-${process.pid}` },
    },
  })
  if (!IMPLS.includes(a.impl) || !a.servers || !['cycle', 'pool', 'rw', 'handoff'].includes(scenario)) {
    process.stderr.write('usage: family.mjs cycle|pool|rw|handoff --impl IMPL --servers URLS [...]\n')
    process.exit(2)
  }
  const servers = a.servers.split(',')
  const limit = Number(a.limit)
  const im = implementation(a.impl, servers, { limit, name: a.name })
  const durationMs = Number(a['duration-ms'])
  let out
  if (scenario === 'cycle') {
    out = await cycle(im, durationMs)
  } else if (scenario === 'handoff') {
    out = await handoff(im, Number(a.rounds))
  } else if (scenario === 'pool') {
    out = await workers(im, { workers: Number(a.workers), holdMs: Number(a['hold-ms']), durationMs, kind: () => 'permit' })
  } else {
    // Each worker draws its section: a write once in 100 / (100 - P), from a fixed sequence.
    const every = Math.round(100 / (100 - Number(a['read-pct'])))
    const rounds = new Map()
    const kind = (w) => {
      const r = (rounds.get(w) ?? w) + 1
      rounds.set(w, r)
      return r % every === 0 ? 'write' : 'read'
    }
    out = await workers(im, { workers: Number(a.workers), holdMs: Number(a['hold-ms']), durationMs, kind })
  }
  await im.close()
  console.log(JSON.stringify({ scenario, impl: a.impl, servers: servers.length, limit, ...out }))
}

main().catch((e) => {
  process.stderr.write(`family.mjs: ${e?.stack ?? e}\n`)
  process.exit(1)
})
