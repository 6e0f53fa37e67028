//! The core's measurements for `metrics.js` (its prom-client metrics and its OpenTelemetry
//! instruments): the table, the running totals and the histograms' kept observations
//! (`fencelock::ffi_support::measure`), read when an exporter asks, so that no sample ever waits for the
//! JavaScript thread.

use fencelock::ffi_support::measure::{self, Instrument, Total};
use napi_derive::napi;

/// One measurement, as the core defines it.
#[napi(object, js_name = "MetricMeasure")]
pub struct MeasureInfo {
    pub name: String,
    /// `counter`, `histogram` or `gauge` (reported as +1/-1 changes).
    #[napi(ts_type = "'counter' | 'histogram' | 'gauge'")]
    pub instrument: String,
    /// `seconds`, or `1` for a count.
    pub unit: String,
    pub labels: Vec<String>,
    /// Histogram bucket upper bounds (empty for the others).
    pub buckets: Vec<f64>,
    pub help: String,
}

/// One series' total: `value` for a counter or a gauge; `buckets` (cumulative counts, one
/// per bound), `count` and `sum` for a histogram.
#[napi(object, js_name = "MetricTotal")]
pub struct TotalInfo {
    pub name: String,
    pub labels: Vec<String>,
    pub value: Option<f64>,
    pub buckets: Option<Vec<f64>>,
    pub count: Option<f64>,
    pub sum: Option<f64>,
}

/// One histogram observation.
#[napi(object, js_name = "MetricObservation")]
pub struct ObservationInfo {
    pub name: String,
    pub labels: Vec<String>,
    pub value: f64,
}

/// The measures, in the order of docs/observability.md's table.
#[napi(catch_unwind, js_name = "__metricMeasures", skip_typescript)]
pub fn metric_measures() -> Vec<MeasureInfo> {
    measure::MEASURES
        .iter()
        .map(|m| MeasureInfo {
            name: m.name.into(),
            instrument: match m.instrument {
                Instrument::Counter => "counter",
                Instrument::Histogram => "histogram",
                Instrument::Gauge => "gauge",
            }
            .into(),
            unit: m.unit.into(),
            labels: m.labels.iter().map(|l| l.to_string()).collect(),
            buckets: m.buckets.to_vec(),
            help: m.help.into(),
        })
        .collect()
}

/// Keeps the totals (and with `observations` the histograms' observations) from now on.
#[napi(catch_unwind, js_name = "__metricStart", skip_typescript)]
pub fn metric_start(observations: bool) {
    let totals = measure::totals();
    if observations {
        totals.keep_observations();
    }
}

/// Every series' total.
#[napi(catch_unwind, js_name = "__metricTotals", skip_typescript)]
pub fn metric_totals() -> Vec<TotalInfo> {
    let series = |name: &str, labels: Vec<String>| TotalInfo {
        name: name.into(),
        labels,
        value: None,
        buckets: None,
        count: None,
        sum: None,
    };
    measure::totals()
        .snapshot()
        .into_iter()
        .map(|((m, labels), total)| match total {
            Total::Counter(v) | Total::Gauge(v) => TotalInfo {
                value: Some(v),
                ..series(m.name, labels)
            },
            Total::Histogram {
                buckets,
                count,
                sum,
            } => TotalInfo {
                buckets: Some(buckets.into_iter().map(|b| b as f64).collect()),
                count: Some(count as f64),
                sum: Some(sum),
                ..series(m.name, labels)
            },
        })
        .collect()
}

/// The histogram observations kept since the last call, oldest first.
#[napi(catch_unwind, js_name = "__metricObservations", skip_typescript)]
pub fn metric_observations() -> Vec<ObservationInfo> {
    measure::totals()
        .take_observations()
        .into_iter()
        .map(|((m, labels), value)| ObservationInfo {
            name: m.name.into(),
            labels,
            value,
        })
        .collect()
}
