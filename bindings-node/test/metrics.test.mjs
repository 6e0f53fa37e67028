// fencelock/metrics: the core's measurements read back from what real exporters export (a
// prom-client registry served over HTTP and scraped, OpenTelemetry's SDK read by a metric
// reader), against a real redis-server; and the metricNames option. The totals are the
// process's: each test lets only its own lock name into the `name` label and reads its series.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import { createRequire } from 'node:module'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'

import { RedisServer, waitUntil } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, NotAcquiredError, InvalidArgumentError } = require('../index.js')
const { MEASURES, registerPromClient, instrumentOpenTelemetry } = require('../metrics.js')
const promClient = require('prom-client')
const { MeterProvider, MetricReader } = require('@opentelemetry/sdk-metrics')

const PASSWORD = 'pw-in-url-0xC0FFEE'

let server
let url
before(async () => {
  server = await RedisServer.start()
  await server.client().call('ACL', 'SETUSER', 'locker', 'on', `>${PASSWORD}`, '~*', '&*', '+@all')
  url = `redis://locker:${PASSWORD}@127.0.0.1:${server.port}`
})
after(async () => {
  await server.stop()
})

/** Serves `registry` over HTTP on a free loopback port; returns { scrape, close }. */
async function serve(registry) {
  const srv = http.createServer(async (req, res) => {
    res.setHeader('Content-Type', registry.contentType)
    res.end(await registry.metrics())
  })
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve))
  const { port } = srv.address()
  return {
    async scrape() {
      const r = await fetch(`http://127.0.0.1:${port}/metrics`)
      assert.equal(r.status, 200)
      return r.text()
    },
    close: () => new Promise((resolve) => srv.close(resolve)),
  }
}

/** The value of sample `metric` whose labels are exactly `labels`, in Prometheus's text. */
function sample(text, metric, labels) {
  const want = Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}="${v}"`)
    .join(',')
  for (const line of text.split('\n')) {
    const m = /^([a-z_]+)\{([^}]*)\} (\S+)$/.exec(line)
    if (!m || m[1] !== metric) continue
    const got = m[2]
      .split(/,(?=[a-z_]+=")/)
      .sort()
      .join(',')
    if (got === want) return Number(m[3])
  }
  return undefined
}

describe('prom-client', () => {
  it('a scrape over HTTP shows waits, holds and hand-offs by outcome', async () => {
    const registry = new promClient.Registry()
    registerPromClient(registry)
    const { scrape, close } = await serve(registry)
    const name = `lock-${randomUUID()}`
    const m = new LockManager(url, { metricNames: [name], serverTimeout: 500 })
    try {
      const heldBefore = sample(await scrape(), 'fencelock_locks_held', { kind: 'mutex' }) ?? 0
      const lock = await m.acquire(name, { ttl: 10_000 })
      const token = lock.token.toString()
      assert.equal(sample(await scrape(), 'fencelock_locks_held', { kind: 'mutex' }), heldBefore + 1)
      assert.equal(await m.tryAcquire(name, { ttl: 10_000 }), null)
      await assert.rejects(m.acquire(name, { ttl: 10_000, wait: 200 }), NotAcquiredError)
      const waiter = m.acquire(name, { ttl: 10_000, wait: 30_000 })
      // In line and listening: a release passes over a waiter that does not listen yet.
      await waitUntil(async () => (await server.queued(name)) === 1 && (await server.listening(name)), 'the waiter in line, listening', 10_000)
      await lock.release()
      await (await waiter).release()
      const text = await scrape()
      const mine = { kind: 'mutex', name }
      const wait = 'fencelock_acquire_wait_seconds'
      assert.equal(sample(text, `${wait}_count`, { ...mine, outcome: 'acquired' }), 2)
      assert.equal(sample(text, `${wait}_count`, { ...mine, outcome: 'not_acquired' }), 1)
      assert.equal(sample(text, `${wait}_count`, { ...mine, outcome: 'wait_limit' }), 1)
      assert.ok(sample(text, `${wait}_sum`, { ...mine, outcome: 'wait_limit' }) >= 0.2)
      assert.equal(sample(text, `${wait}_bucket`, { ...mine, outcome: 'acquired', le: '+Inf' }), 2)
      assert.equal(sample(text, `${wait}_bucket`, { ...mine, outcome: 'wait_limit', le: '0.1' }), 0)
      assert.equal(sample(text, 'fencelock_handoffs_total', mine), 1)
      assert.equal(sample(text, 'fencelock_hold_seconds_count', { ...mine, outcome: 'released' }), 2)
      assert.equal(sample(text, 'fencelock_locks_held', { kind: 'mutex' }), heldBefore)
      for (const measure of MEASURES) assert.ok(text.includes(`# TYPE ${measure.name} ${measure.instrument}`), measure.name)
      assert.ok(!text.includes(PASSWORD) && !text.includes(token))
    } finally {
      await m.close()
      await close()
    }
  })

  it('refuses what is not a registry', () => {
    assert.throws(() => registerPromClient(42), InvalidArgumentError)
    assert.throws(() => registerPromClient(null), InvalidArgumentError)
  })
})

/** A reader the test collects from by hand. */
class TestReader extends MetricReader {
  async onForceFlush() {}
  async onShutdown() {}
}

describe('OpenTelemetry', () => {
  it('instruments export the same measurements', async () => {
    const reader = new TestReader()
    const provider = new MeterProvider({ readers: [reader] })
    instrumentOpenTelemetry(provider, { traces: false })
    const name = `lock-${randomUUID()}`
    const m = new LockManager(url, { metricNames: [name] })
    try {
      const lock = await m.acquire(name, { ttl: 10_000 })
      await lock.extend(10_000)
      await lock.release()
      await (await m.acquire(`other-${name}`, { ttl: 10_000 })).release()
    } finally {
      await m.close()
    }
    await reader.collect() // the first collection records the observations made so far
    const { resourceMetrics } = await reader.collect()
    const points = new Map()
    for (const sm of resourceMetrics.scopeMetrics) {
      if (sm.scope.name !== 'fencelock') continue
      for (const metric of sm.metrics) points.set(metric.descriptor.name, metric.dataPoints)
    }
    const waits = points.get('fencelock_acquire_wait_seconds').filter((p) => p.attributes.name === name && p.attributes.outcome === 'acquired')
    assert.deepEqual(waits.map((p) => p.value.count), [1])
    const holds = points.get('fencelock_hold_seconds').filter((p) => p.attributes.name === name && p.attributes.outcome === 'released')
    assert.deepEqual(holds.map((p) => p.value.count), [1])
    const ext = points.get('fencelock_extensions_total').filter((p) => p.attributes.name === name && p.attributes.result === 'ok')
    assert.deepEqual(ext.map((p) => p.value), [1])
    assert.ok(points.get('fencelock_locks_held').every((p) => p.value >= 0))
    assert.ok(![...points.values()].flat().some((p) => JSON.stringify(p.attributes).includes(PASSWORD)))
    await provider.shutdown()
  })
})

describe('the package', () => {
  it('types fencelock/metrics for import as for require (re-exported), with the module as default', () => {
    const here = path.dirname(fileURLToPath(import.meta.url))
    const mts = readFileSync(path.join(here, '..', 'metrics.d.mts'), 'utf8')
    assert.match(mts, /^export \* from '\.\/metrics\.js'$/m)
    assert.match(mts, /^export default metrics$/m)
    const esm = require('../metrics.js')
    assert.deepEqual(Object.keys(esm).sort(), ['MEASURES', 'instrumentOpenTelemetry', 'registerPromClient'])
  })
})

describe('metricNames', () => {
  it('takes an array of names and refuses anything else before any network call', () => {
    for (const bad of ['orders', 42, [1], [null], (n) => n]) {
      assert.throws(() => new LockManager(url, { metricNames: bad }), (e) => e instanceof InvalidArgumentError && /metricNames/.test(e.message), String(bad))
    }
  })
})
