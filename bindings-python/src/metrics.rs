//! The core's measurements for `fencelock/metrics.py` (its Prometheus collector and its
//! OpenTelemetry instruments): the table, the running totals and the histograms' kept
//! observations (`fencelock::ffi_support::measure`), read when an exporter asks, so that no sample ever
//! waits for the GIL; and the `metric_names` manager option.

use fencelock::ffi_support::measure::{self, Instrument, MetricNames, Total};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::convert::Text;

fn instrument(i: Instrument) -> &'static str {
    match i {
        Instrument::Counter => "counter",
        Instrument::Histogram => "histogram",
        Instrument::Gauge => "gauge",
    }
}

/// One measure as Python sees it: `(name, instrument, unit, labels, buckets, help)`.
type MeasureRow = (
    &'static str,
    &'static str,
    &'static str,
    Vec<&'static str>,
    Vec<f64>,
    &'static str,
);

/// One series' total (see [`_metric_totals`]).
type TotalRow = (&'static str, Vec<String>, Py<PyAny>);

/// The measures, in the order of docs/observability.md's table.
#[pyfunction]
pub fn _metric_measures() -> Vec<MeasureRow> {
    measure::MEASURES
        .iter()
        .map(|m| {
            (
                m.name,
                instrument(m.instrument),
                m.unit,
                m.labels.to_vec(),
                m.buckets.to_vec(),
                m.help,
            )
        })
        .collect()
}

/// Starts keeping the totals (and, with `observations`, the histograms' observations) from
/// now on; an exporter calls it when it is attached.
#[pyfunction]
#[pyo3(signature = (observations = false))]
pub fn _metric_start(observations: bool) {
    let totals = measure::totals();
    if observations {
        totals.keep_observations();
    }
}

/// Every series' total: `(name, labels, value)` for a counter or a gauge, `(name, labels,
/// (cumulative bucket counts, count, sum))` for a histogram.
#[pyfunction]
pub fn _metric_totals(py: Python<'_>) -> PyResult<Vec<TotalRow>> {
    let snapshot = py.detach(|| measure::totals().snapshot());
    snapshot
        .into_iter()
        .map(|((m, labels), total)| {
            let value = match total {
                Total::Counter(v) | Total::Gauge(v) => v.into_pyobject(py)?.into_any().unbind(),
                Total::Histogram {
                    buckets,
                    count,
                    sum,
                } => (buckets, count, sum).into_pyobject(py)?.into_any().unbind(),
            };
            Ok((m.name, labels, value))
        })
        .collect()
}

/// The histogram observations kept since the last call: `(name, labels, value)`, oldest
/// first.
#[pyfunction]
pub fn _metric_observations(py: Python<'_>) -> Vec<(&'static str, Vec<String>, f64)> {
    py.detach(|| measure::totals().take_observations())
        .into_iter()
        .map(|((m, labels), v)| (m.name, labels, v))
        .collect()
}

/// The `metric_names` option: `None`, names (str or bytes, shown as they are), or a function
/// of the name (a str) that returns its label or `None`. The function runs on fencelock's own
/// threads with the GIL taken; when it raises, or Python is shutting down, the label is empty.
pub fn metric_names_arg(value: &Bound<'_, PyAny>) -> PyResult<MetricNames> {
    if value.is_none() {
        return Ok(MetricNames::Hidden);
    }
    if value.is_callable() {
        let f: Py<PyAny> = value.clone().unbind();
        return Ok(MetricNames::mapped(move |name| {
            Python::try_attach(|py| {
                let name = String::from_utf8_lossy(name);
                let got = f.bind(py).call1((name.as_ref(),)).ok()?;
                got.extract::<Option<String>>().ok().flatten()
            })
            .flatten()
        }));
    }
    if value.is_instance_of::<PyString>() || value.is_instance_of::<PyBytes>() {
        return Err(PyTypeError::new_err(
            "metric_names takes a list of names or a function, not one name: metric_names=[name]",
        ));
    }
    let mut names = Vec::new();
    for item in value.try_iter().map_err(|_| {
        PyTypeError::new_err(format!(
            "metric_names must be a list of names (str or bytes), a function of a name, or None; got {}",
            value.get_type().name().map(|n| n.to_string()).unwrap_or_default()
        ))
    })? {
        let item = item?;
        let name: Text = item.extract().map_err(|e| {
            PyTypeError::new_err(format!("metric_names: every name must be str or bytes ({e})"))
        })?;
        names.push(name.as_bytes().to_vec());
    }
    Ok(MetricNames::listed(names))
}
