//! The soak run (`ci/soak.sh`, `tests/soak.rs`): contention for a long time under rolling
//! faults, ending with the history checker's verdict and a report of what happened (holds,
//! hand-offs, faults injected by kind, overlaps, stale writes rejected).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::history::{Hold, Verdict};

/// How long each topology of the soak runs: `FENCELOCK_SOAK_SECONDS` (CI: the default, 40 s,
/// two minutes for the three topologies; `ci/soak.sh --minutes N` sets N × 20 s, `--seconds N`
/// a third of N).
pub fn length() -> Duration {
    let secs = std::env::var("FENCELOCK_SOAK_SECONDS")
        .ok()
        .map(|v| {
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("FENCELOCK_SOAK_SECONDS={v:?} is not a number"))
        })
        .unwrap_or(40);
    Duration::from_secs(secs)
}

/// What one topology's soak run did and how it was judged.
#[derive(Debug, Default)]
pub struct Report {
    /// `single server`, `Redlock of five`, `cluster of three masters`.
    pub topology: String,
    /// How long the holders ran.
    pub ran: Duration,
    /// Holds recorded.
    pub holds: usize,
    /// Consecutive holds of a name by different holders.
    pub handoffs: usize,
    /// Faults injected, by kind.
    pub faults: BTreeMap<&'static str, usize>,
    /// Overlapping holds the checker found.
    pub overlaps: usize,
    /// Holds used past their validity.
    pub past_validity: usize,
    /// Late writes of frozen holders that the fenced store rejected.
    pub stale_writes_rejected: usize,
    /// Failed acquisitions (clean ones: not acquired, unavailable).
    pub failed_acquisitions: usize,
}

impl Report {
    /// Counts one fault of `kind`.
    pub fn fault(&mut self, kind: &'static str) {
        *self.faults.entry(kind).or_insert(0) += 1;
    }

    /// Takes the checker's counts from `verdict`.
    pub fn judged(&mut self, verdict: &Verdict) {
        self.holds = verdict.holds;
        self.overlaps = verdict.overlaps().len();
        self.past_validity = verdict.held_past_validity().len();
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let faults: usize = self.faults.values().sum();
        write!(
            f,
            "SOAK {}: {:.0} s, {} holds, {} hand-offs ({:.0}/s), {} faults {:?}, {} overlaps, \
             {} holds past validity, {} stale writes rejected, {} failed acquisitions",
            self.topology,
            self.ran.as_secs_f64(),
            self.holds,
            self.handoffs,
            self.handoffs as f64 / self.ran.as_secs_f64().max(0.001),
            faults,
            self.faults,
            self.overlaps,
            self.past_validity,
            self.stale_writes_rejected,
            self.failed_acquisitions
        )
    }
}

/// Hand-offs among `holds`: the pairs of consecutive holds (in start order) of one name by
/// different holders.
pub fn handoffs(holds: &[Hold]) -> Vec<(&Hold, &Hold)> {
    let mut by_name: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for h in holds {
        by_name.entry(&h.name).or_default().push(h);
    }
    let mut pairs = Vec::new();
    for list in by_name.values_mut() {
        list.sort_by_key(|h| h.start_us);
        for pair in list.windows(2) {
            if pair[0].holder != pair[1].holder {
                pairs.push((pair[0], pair[1]));
            }
        }
    }
    pairs
}
