// fencelock/metrics' spans, read back from OpenTelemetry's in-memory span exporter, against a
// real redis-server: fencelock.acquire and fencelock.hold as children of the context active
// where the call was made, across `await` (AsyncLocalStorage's context manager), with the
// documented attributes and times, and no password or token. The tracer is the process's.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'
import { after, before, describe, it } from 'node:test'

import { RedisServer } from './redis.mjs'

const require = createRequire(import.meta.url)
const { LockManager, NotAcquiredError, LockLostError } = require('../index.js')
const { instrumentOpenTelemetry } = require('../metrics.js')
const api = require('@opentelemetry/api')
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks')
const { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } = require('@opentelemetry/sdk-trace-base')

const PASSWORD = 'pw-in-url-0xFEED'

let server
let url
const exporter = new InMemorySpanExporter()
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
const tracer = provider.getTracer('test')
let attached

before(async () => {
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  server = await RedisServer.start()
  await server.client().call('ACL', 'SETUSER', 'locker', 'on', `>${PASSWORD}`, '~*', '&*', '+@all')
  url = `redis://locker:${PASSWORD}@127.0.0.1:${server.port}`
  attached = instrumentOpenTelemetry(undefined, { tracerProvider: provider, metrics: false })
})
after(async () => {
  attached.tracing.close()
  await server.stop()
})

/** The finished spans called `name` whose `lock` attribute starts with `prefix`. */
function spans(name, prefix) {
  attached.tracing.flush()
  return exporter.getFinishedSpans().filter((s) => s.name === name && String(s.attributes.lock).startsWith(prefix))
}

const parentId = (s) => s.parentSpanContext?.spanId ?? s.parentSpanId

/**
 * Waits `ms` milliseconds at least by the monotonic clock the core measures holds with. A
 * bare setTimeout can end up to a millisecond early by that clock (libuv counts from the loop
 * time it cached at the start of its iteration), and the hold's whole milliseconds then read 49.
 */
async function atLeast(ms) {
  const until = performance.now() + ms
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(until - performance.now()))))
  }
}

describe('OpenTelemetry spans', () => {
  it('are children of the context the call was made in, across await', async () => {
    const name = `lock-${randomUUID()}`
    const m = new LockManager(url)
    try {
      let token
      let fencing
      const request = await tracer.startActiveSpan('request', async (span) => {
        await new Promise((resolve) => setTimeout(resolve, 5))
        const lock = await m.acquire(name, { ttl: 10_000 })
        token = lock.token
        fencing = lock.fencingToken
        await atLeast(50)
        await lock.release()
        span.end()
        return span
      })
      const [acquire] = spans('fencelock.acquire', name)
      const [hold] = spans('fencelock.hold', name)
      assert.ok(acquire && hold)
      for (const s of [acquire, hold]) {
        assert.equal(parentId(s), request.spanContext().spanId)
        assert.equal(s.spanContext().traceId, request.spanContext().traceId)
      }
      assert.deepEqual(acquire.attributes, {
        lock: name, kind: 'mutex', servers: 1, quorum: 1, outcome: 'acquired', attempts: 1,
        handed_over: false, waited_ms: acquire.attributes.waited_ms, fencing_token: Number(fencing),
      })
      assert.deepEqual(hold.attributes, {
        lock: name, kind: 'mutex', fencing_token: Number(fencing), outcome: 'released',
        held_ms: hold.attributes.held_ms,
      })
      assert.ok(hold.attributes.held_ms >= 50, `held ${hold.attributes.held_ms} ms`)
      const ms = ([s, ns]) => s * 1000 + ns / 1e6
      assert.ok(ms(hold.startTime) >= ms(acquire.startTime) && ms(hold.endTime) >= ms(hold.startTime))
      assert.ok(ms(acquire.startTime) >= ms(request.startTime) - 1)
      assert.equal(acquire.status.code, api.SpanStatusCode.UNSET)
      for (const s of exporter.getFinishedSpans()) {
        const text = JSON.stringify(s.attributes)
        assert.ok(!text.includes(PASSWORD) && !text.includes(token), text)
      }
    } finally {
      await m.close()
    }
  })

  it('follow each of several concurrent calls, and a refused try is not an error', async () => {
    const name = `many-${randomUUID()}`
    const m = new LockManager(url)
    try {
      const ids = await Promise.all([0, 1, 2, 3].map((i) => tracer.startActiveSpan(`job${i}`, async (span) => {
        const lock = await m.acquire(`${name}-${i}`, { ttl: 10_000 })
        await new Promise((resolve) => setTimeout(resolve, 10))
        await lock.release()
        span.end()
        return span.spanContext().spanId
      })))
      for (const kind of ['fencelock.acquire', 'fencelock.hold']) {
        const byLock = Object.fromEntries(spans(kind, name).map((s) => [s.attributes.lock, parentId(s)]))
        assert.deepEqual(byLock, Object.fromEntries(ids.map((id, i) => [`${name}-${i}`, id])), kind)
      }
      const held = await m.acquire(name, { ttl: 10_000 })
      assert.equal(await m.tryAcquire(name, { ttl: 10_000 }), null)
      await assert.rejects(m.acquire(name, { ttl: 10_000, wait: 50 }), NotAcquiredError)
      await held.release()
      const outcomes = spans('fencelock.acquire', name).filter((s) => s.attributes.lock === name)
        .map((s) => [s.attributes.outcome, s.status.code])
      assert.deepEqual(outcomes.sort(), [
        ['acquired', api.SpanStatusCode.UNSET], ['not_acquired', api.SpanStatusCode.UNSET],
        ['wait_limit', api.SpanStatusCode.UNSET],
      ])
    } finally {
      await m.close()
    }
  })

  it('mark a lost hold as an error', async () => {
    const name = `lost-${randomUUID()}`
    const m = new LockManager(url)
    try {
      const lock = await m.acquire(name, { ttl: 10_000 })
      await server.client().call('DEL', name)
      await assert.rejects(lock.extend(10_000), LockLostError)
      await assert.rejects(lock.release(), LockLostError)
      const [hold] = spans('fencelock.hold', name)
      assert.equal(hold.attributes.outcome, 'lost')
      assert.equal(hold.status.code, api.SpanStatusCode.ERROR)
    } finally {
      await m.close()
    }
  })

  it('stop once closed, and bad arguments make none', async () => {
    const name = `closed-${randomUUID()}`
    const m = new LockManager(url)
    try {
      await assert.rejects(m.acquire('', { ttl: 10_000 }))
      assert.equal(spans('fencelock.acquire', '').filter((s) => s.attributes.lock === '').length, 0)
      const again = instrumentOpenTelemetry(undefined, { tracerProvider: provider, metrics: false })
      again.tracing.close()
      await (await m.acquire(name, { ttl: 10_000 })).release()
      assert.equal(spans('fencelock.acquire', name).length, 0)
      attached = instrumentOpenTelemetry(undefined, { tracerProvider: provider, metrics: false })
    } finally {
      await m.close()
    }
  })
})
