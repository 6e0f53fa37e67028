//! A binding's number of seconds (Python) or milliseconds (Node) as a [`Duration`], checked
//! once for every binding, its errors worded in the caller's unit. The bindings translate a
//! language's value into an `f64` and call these; the C face takes whole milliseconds and
//! needs none of it.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::timing::{self, MAX_TTL};

/// The unit a binding's durations are given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Python's: seconds (`ttl=30.0`).
    Seconds,
    /// JavaScript's: milliseconds (`{ ttl: 30000 }`).
    Millis,
}

impl Unit {
    fn name(self) -> &'static str {
        match self {
            Unit::Seconds => "seconds",
            Unit::Millis => "milliseconds",
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::Millis => "ms",
        }
    }

    /// `v` as the caller's language writes it (JavaScript's `Infinity`, Python's `inf`).
    fn show(self, v: f64) -> String {
        match self {
            Unit::Millis if v.is_infinite() => {
                if v > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
            }
            _ => v.to_string(),
        }
    }

    fn of(self, d: Duration) -> f64 {
        match self {
            Unit::Seconds => d.as_secs_f64(),
            Unit::Millis => d.as_millis() as f64,
        }
    }

    fn to_duration(self, arg: &str, v: f64) -> Result<Duration> {
        let secs = match self {
            Unit::Seconds => v,
            Unit::Millis => v / 1000.0,
        };
        Duration::try_from_secs_f64(secs).map_err(|_| {
            Error::invalid_argument(format!("{arg} is too large: {v} {}", self.symbol()))
        })
    }

    /// `v` units, at least zero and finite.
    ///
    /// # Errors
    /// `InvalidArgument` for a negative, NaN or infinite `v`, or one too large for a
    /// `Duration`.
    pub fn non_negative(self, arg: &str, v: f64) -> Result<Duration> {
        if v.is_nan() || v < 0.0 {
            return Err(Error::invalid_argument(format!(
                "{arg} must be a number of {} >= 0, got {}",
                self.name(),
                self.show(v)
            )));
        }
        if v.is_infinite() {
            return Err(Error::invalid_argument(format!(
                "{arg} must be finite, got {}",
                self.show(v)
            )));
        }
        self.to_duration(arg, v)
    }

    /// `v` units, more than zero and finite.
    ///
    /// # Errors
    /// `InvalidArgument` for zero or less, NaN or infinity, or too large a `v`.
    pub fn positive(self, arg: &str, v: f64) -> Result<Duration> {
        if !(v.is_finite() && v > 0.0) {
            return Err(Error::invalid_argument(format!(
                "{arg} must be a positive number of {}, got {}",
                self.name(),
                self.show(v)
            )));
        }
        self.to_duration(arg, v)
    }

    /// A wait limit: `None` or infinity wait until acquired (no limit), `0` tries once; one
    /// longer than a `Duration` holds is as good as no limit.
    ///
    /// # Errors
    /// `InvalidArgument` for a negative or NaN `v`.
    pub fn wait(self, v: Option<f64>) -> Result<Option<Duration>> {
        match v {
            None => Ok(None),
            Some(w) if w.is_nan() || w < 0.0 => Err(Error::invalid_argument(format!(
                "wait must be a number of {} >= 0, or none for no limit; got {w}",
                self.name()
            ))),
            Some(w) => Ok(self.to_duration("wait", w).ok()),
        }
    }

    /// A lock's TTL: positive, and within the core's bounds ([`timing::check_ttl`]); above
    /// [`MAX_TTL`] the message says the longest in this unit.
    ///
    /// # Errors
    /// `InvalidArgument` as [`positive`](Self::positive), or out of the TTL's bounds.
    pub fn ttl(self, v: f64) -> Result<Duration> {
        let ttl = self.positive("ttl", v)?;
        match timing::check_ttl(ttl) {
            Ok(_) => Ok(ttl),
            Err(_) if ttl > MAX_TTL => Err(Error::invalid_argument(format!(
                "ttl must be at most {max} {unit} (about 285,000 years), got {v} {unit}",
                max = self.of(MAX_TTL),
                unit = self.symbol()
            ))),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Unit;
    use std::time::Duration;

    #[test]
    fn each_rule_in_the_callers_unit() {
        assert_eq!(
            Unit::Seconds.positive("ttl", 1.5).unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            Unit::Millis.positive("ttl", 1.5).unwrap(),
            Duration::from_micros(1500)
        );
        let e = Unit::Millis.non_negative("retryDelay", -1.0).unwrap_err();
        assert_eq!(
            e.message(),
            "retryDelay must be a number of milliseconds >= 0, got -1"
        );
        let e = Unit::Seconds.positive("max_hold", 0.0).unwrap_err();
        assert_eq!(
            e.message(),
            "max_hold must be a positive number of seconds, got 0"
        );
        let e = Unit::Millis.non_negative("ttl", f64::INFINITY).unwrap_err();
        assert_eq!(e.message(), "ttl must be finite, got Infinity");
        assert_eq!(Unit::Seconds.wait(Some(f64::INFINITY)).unwrap(), None);
        assert_eq!(Unit::Seconds.wait(Some(1e300)).unwrap(), None);
        assert_eq!(Unit::Millis.wait(Some(0.0)).unwrap(), Some(Duration::ZERO));
        assert!(Unit::Seconds.wait(Some(f64::NAN)).is_err());
        let e = Unit::Seconds.ttl(1e16).unwrap_err();
        assert_eq!(
            e.message(),
            "ttl must be at most 9007199254740.99 s (about 285,000 years), got 10000000000000000 s"
        );
        assert!(Unit::Millis.ttl(9_007_199_254_740_991.0).is_ok());
        assert!(Unit::Millis.ttl(9_007_199_254_740_992.0).is_err());
    }
}
