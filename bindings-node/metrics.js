'use strict'
// fencelock's measurements in Node's metrics libraries (docs/observability.md): prom-client
// metrics that read the core's running totals at each scrape, and OpenTelemetry instruments
// (observable counters and up-down counters from the totals, histograms recording the
// observations made since the last collection). The core measures every lock without calling
// into JavaScript; these read what it kept when an exporter asks.

const { InvalidArgumentError } = require('./index.js')
const native = require('./native.js')

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

/**
 * Creates fencelock's instruments on the meter "fencelock" of `meterProvider` (default: the
 * global one of @opentelemetry/api): an observable counter per counter, an observable up-down
 * counter per gauge, a histogram per histogram, which records at each collection the
 * observations made since the previous one. Call it once per process.
 */
function instrumentOpenTelemetry(meterProvider) {
  const { version } = require('./package.json')
  const provider = meterProvider === undefined ? require('@opentelemetry/api').metrics.getMeterProvider() : meterProvider
  if (provider === null || typeof provider !== 'object' || typeof provider.getMeter !== 'function') {
    throw new InvalidArgumentError('instrumentOpenTelemetry() takes a MeterProvider (or nothing, for the global one)')
  }
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
