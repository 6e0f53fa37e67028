'use strict'
// fencelock's measurements in Node's metrics libraries (docs/observability.md): prom-client
// metrics that read the core's running totals at each scrape, and OpenTelemetry instruments
// (observable counters and up-down counters from the totals, histograms recording the
// observations made since the last collection) and spans (from the core's span records). The
// core measures every lock without calling into JavaScript; these read what it kept when an
// exporter asks, or on a timer for the spans.

const { InvalidArgumentError } = require('./index.js')
const native = require('./native.js')
const { setTracer } = require('./scope.js')

/** Every measure, in the order of docs/observability.md's table. */
const MEASURES = Object.freeze(native.__metricMeasures().map((m) => Object.freeze(m)))

function totalsByName() {
  const byName = new Map(MEASURES.map((m) => [m.name, []]))
  for (const t of native.__metricTotals()) byName.get(t.name).push(t)
  return byName
}

function labelObject(measure, values) {
  const labels = {}
  measure.labels.forEach((l, i) => {
    labels[l] = values[i]
  })
  return labels
}

/** One prom-client metric of a measure, read from the totals (`registry.registerMetric`). */
function promMetric(measure) {
  const type = measure.instrument
  return {
    name: measure.name,
    help: measure.help,
    type,
    aggregator: 'sum',
    labelNames: measure.labels,
    reset() {},
    async get() {
      const values = []
      for (const t of totalsByName().get(measure.name)) {
        const labels = labelObject(measure, t.labels)
        if (type !== 'histogram') {
          values.push({ labels, value: t.value })
          continue
        }
        measure.buckets.forEach((le, i) => {
          values.push({ labels: { ...labels, le }, value: t.buckets[i], metricName: `${measure.name}_bucket` })
        })
        values.push({ labels: { ...labels, le: '+Inf' }, value: t.count, metricName: `${measure.name}_bucket` })
        values.push({ labels, value: t.sum, metricName: `${measure.name}_sum` })
        values.push({ labels, value: t.count, metricName: `${measure.name}_count` })
      }
      return { name: measure.name, help: measure.help, type, values, aggregator: 'sum' }
    },
  }
}

/**
 * Registers fencelock's metrics with a prom-client registry (default: prom-client's global
 * `register`), read from the core's totals at each scrape; returns them.
 */
function registerPromClient(registry) {
  if (registry === undefined) registry = require('prom-client').register
  if (registry === null || typeof registry !== 'object' || typeof registry.registerMetric !== 'function') {
    throw new InvalidArgumentError('registerPromClient() takes a prom-client Registry (or nothing, for the global one)')
  }
  native.__metricStart(false)
  const metrics = MEASURES.map(promMetric)
  for (const m of metrics) registry.registerMetric(m)
  return metrics
}

// How often the JavaScript thread takes the core's span records while a tracer is attached.
const SPAN_DRAIN_MS = 100

/** The tracer attached now (one per process), or null. */
let currentTracing = null

/**
 * fencelock's spans on `tracerProvider`'s tracer "fencelock": `fencelock.acquire` for every
 * acquire call and `fencelock.hold` from each grant to its end, each a child of the context
 * active where the call was made (across `await`, with a context manager such as
 * @opentelemetry/context-async-hooks'), made on this thread from the core's records.
 */
class Tracing {
  #tracer
  #api
  #parents = new Map()
  #next = 1
  #timer

  constructor(tracerProvider, version) {
    this.#api = require('@opentelemetry/api')
    this.#tracer = tracerProvider.getTracer('fencelock', version)
    this.#timer = setInterval(() => this.flush(), SPAN_DRAIN_MS)
    this.#timer.unref()
  }

  /** Runs `start` (an acquisition's native call) with the caller's active context kept. */
  traced(start) {
    const id = this.#next
    this.#next = this.#next >= 0xfffffff0 ? 1 : this.#next + 1
    this.#parents.set(id, this.#api.context.active())
    native.__traceNext(id)
    let settled
    try {
      settled = start()
    } catch (err) {
      this.#parents.delete(id)
      throw err
    } finally {
      native.__traceNext(0)
    }
    // A call that failed made its last record before it settled (or none, when its arguments
    // were refused): make it, then forget the context.
    settled.catch(() => {
      this.flush()
      this.#parents.delete(id)
    })
    return settled
  }

  /** Makes the spans of every record the core has queued. */
  flush() {
    const api = this.#api
    const { records } = native.__traceRecords()
    for (const r of records) {
      const parent = this.#parents.get(r.parent) ?? api.ROOT_CONTEXT
      if (r.last) this.#parents.delete(r.parent)
      const attributes = {}
      for (const a of r.attributes) attributes[a.key] = a.text ?? a.number ?? a.flag
      const span = this.#tracer.startSpan(
        r.name,
        { kind: api.SpanKind.INTERNAL, startTime: r.start, attributes },
        parent,
      )
      if (attributes.outcome === 'error') {
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'the acquire call failed' })
      } else if (attributes.outcome === 'lost') {
        span.setStatus({ code: api.SpanStatusCode.ERROR, message: 'the lock was lost while held' })
      }
      span.end(r.end)
    }
  }

  /** Stops making spans (the calls under way make none either). */
  close() {
    if (currentTracing !== this) return
    this.flush()
    currentTracing = null
    setTracer(null)
    native.__traceStop()
    clearInterval(this.#timer)
    this.#parents.clear()
  }
}

function checkProvider(what, provider, method) {
  if (provider === null || typeof provider !== 'object' || typeof provider[method] !== 'function') {
    throw new InvalidArgumentError(`instrumentOpenTelemetry() takes a ${what} (or nothing, for the global one)`)
  }
}

/**
 * Reports fencelock to OpenTelemetry (@opentelemetry/api, an optional peer dependency).
 *
 * Metrics (`options.metrics`, default true): fencelock's instruments on the meter "fencelock"
 * of `meterProvider` (default: the global one): an observable counter per counter, an
 * observable up-down counter per gauge, a histogram per histogram, which records at each
 * collection the observations made since the previous one.
 *
 * Traces (`options.traces`, default true): spans `fencelock.acquire` and `fencelock.hold` on
 * `options.tracerProvider`'s tracer "fencelock" (default: the global one), children of the
 * context active where each acquire call was made. One tracer per process: a later call
 * replaces it; `.tracing.close()` stops it.
 */
function instrumentOpenTelemetry(meterProvider, options = {}) {
  const { version } = require('./package.json')
  if (options === null || typeof options !== 'object') {
    throw new InvalidArgumentError('instrumentOpenTelemetry() takes options as an object')
  }
  const { tracerProvider, metrics = true, traces = true } = options
  const api = require('@opentelemetry/api')
  const out = { meter: null, histograms: new Map(), observables: [], tracing: null }
  if (metrics) Object.assign(out, instrumentMetrics(meterProvider, version))
  if (traces) {
    const provider = tracerProvider === undefined ? api.trace.getTracerProvider() : tracerProvider
    checkProvider('TracerProvider', provider, 'getTracer')
    if (currentTracing !== null) currentTracing.close()
    currentTracing = new Tracing(provider, version)
    setTracer(currentTracing)
    native.__traceStart()
    out.tracing = currentTracing
  }
  return out
}

function instrumentMetrics(meterProvider, version) {
  const provider = meterProvider === undefined ? require('@opentelemetry/api').metrics.getMeterProvider() : meterProvider
  checkProvider('MeterProvider', provider, 'getMeter')
  const meter = provider.getMeter('fencelock', version)
  native.__metricStart(true)
  const byName = new Map(MEASURES.map((m) => [m.name, m]))
  const histograms = new Map()
  const recordHistograms = () => {
    for (const o of native.__metricObservations()) {
      histograms.get(o.name).record(o.value, labelObject(byName.get(o.name), o.labels))
    }
  }
  const observables = []
  for (const m of MEASURES) {
    const options = { description: m.help, unit: m.unit === 'seconds' ? 's' : '1' }
    if (m.instrument === 'histogram') histograms.set(m.name, meter.createHistogram(m.name, options))
    else if (m.instrument === 'counter') observables.push([m, meter.createObservableCounter(m.name, options)])
    else observables.push([m, meter.createObservableUpDownCounter(m.name, options)])
  }
  meter.addBatchObservableCallback(
    (result) => {
      recordHistograms()
      const totals = totalsByName()
      for (const [m, instrument] of observables) {
        for (const t of totals.get(m.name)) result.observe(instrument, t.value, labelObject(m, t.labels))
      }
    },
    observables.map(([, instrument]) => instrument),
  )
  return { meter, histograms, observables: observables.map(([, i]) => i) }
}

module.exports = { MEASURES, registerPromClient, instrumentOpenTelemetry }
