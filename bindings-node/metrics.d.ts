// Types of fencelock/metrics: the core's measurements in prom-client and OpenTelemetry
// (docs/observability.md). Read for `require`; metrics.d.mts re-exports it for `import`.

/** One measurement, as the core defines it. */
export interface MetricMeasure {
  readonly name: string
  /** Gauges are reported as +1/-1 changes (an OpenTelemetry up-down counter). */
  readonly instrument: 'counter' | 'histogram' | 'gauge'
  /** `seconds`, or `1` for a count. */
  readonly unit: string
  readonly labels: readonly string[]
  /** Histogram bucket upper bounds (empty for the others). */
  readonly buckets: readonly number[]
  readonly help: string
}

/** Every measure, in the order of docs/observability.md's table. */
export declare const MEASURES: readonly MetricMeasure[]

/** A prom-client registry, as far as fencelock uses it. */
export interface PromRegistry {
  registerMetric(metric: object): void
}

/**
 * Registers fencelock's metrics with a prom-client registry (default: prom-client's global
 * `register`), read from the core's running totals at each scrape; returns them.
 */
export declare function registerPromClient(registry?: PromRegistry): object[]

/** An OpenTelemetry MeterProvider, as far as fencelock uses it. */
export interface MeterProviderLike {
  getMeter(name: string, version?: string): unknown
}

/** An OpenTelemetry TracerProvider, as far as fencelock uses it. */
export interface TracerProviderLike {
  getTracer(name: string, version?: string): unknown
}

/** fencelock's spans, as `instrumentOpenTelemetry` attached them. */
export interface FencelockTracing {
  /** Makes the spans of every record the core has queued now (a timer does it every 100 ms). */
  flush(): void
  /** Stops making spans (the calls under way make none either). */
  close(): void
}

export interface InstrumentOptions {
  /** Where the spans go (default: the global TracerProvider of @opentelemetry/api). */
  tracerProvider?: TracerProviderLike
  /** Create the metric instruments (default true). */
  metrics?: boolean
  /** Make spans (default true). One tracer per process: a later call replaces it. */
  traces?: boolean
}

/**
 * Reports fencelock to OpenTelemetry. Metrics: fencelock's instruments on the meter
 * "fencelock" of `meterProvider` (default: the global one of @opentelemetry/api): observable
 * counters, observable up-down counters for the gauges, and histograms that record at each
 * collection the observations made since the previous one. Traces: spans `fencelock.acquire`
 * (every acquire call) and `fencelock.hold` (from each grant to its end) on the tracer
 * "fencelock", each a child of the context active where the call was made, across `await`
 * (with a context manager such as @opentelemetry/context-async-hooks').
 */
export declare function instrumentOpenTelemetry(meterProvider?: MeterProviderLike, options?: InstrumentOptions): {
  meter: unknown
  histograms: Map<string, unknown>
  observables: unknown[]
  tracing: FencelockTracing | null
}
