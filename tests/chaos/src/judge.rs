//! What the cross-language fault runs are judged by ([`crate::mixed`]'s [`Outcome`]): their
//! summary, the checks every run passes, and which holds started when.

use std::time::Duration;

use crate::history::Hold;
use crate::mixed::{Language, Outcome};
use crate::worker::{field, num};

/// One paragraph on a mixed run: holds and failures by kind, hand-offs, the checker's verdict.
pub fn summary(out: &Outcome) -> String {
    let (handoffs, cross) = out.handoffs();
    format!(
        "holds by language {:?}; {handoffs} handoffs ({cross} between languages); {} failed \
         acquisitions (kinds {:?}), {} failed releases, {} released unused (validity \
         shorter than the hold and its slack)\n{}",
        out.holds_by_language(),
        out.failures.len(),
        failure_kinds(out),
        out.release_failures.len(),
        out.short.len(),
        out.verdict()
    )
}

/// How many failed acquisitions of each kind.
pub fn failure_kinds(out: &Outcome) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for l in &out.failures {
        *m.entry(field(l, "kind").unwrap_or("?").to_string())
            .or_insert(0) += 1;
    }
    m
}

/// The checks of every run: no worker hung or crashed, the checker's verdict is OK, every
/// failed acquisition failed cleanly (`not_acquired` / `unavailable`) and within `max_took`;
/// `per_language` workers of every language were collected.
pub fn assert_run_ok(out: &Outcome, per_language: usize, max_took: Duration) {
    assert!(out.problems.is_empty(), "workers: {:#?}", out.problems);
    assert_eq!(out.holders.len(), Language::ALL.len() * per_language);
    out.verdict().assert_ok();
    let unclean = out.unclean_failures();
    assert!(unclean.is_empty(), "unexpected failures: {unclean:?}");
    let slow: Vec<&String> = out
        .failures
        .iter()
        .filter(|l| u128::from(num(l, "took_ms")) > max_took.as_millis())
        .collect();
    assert!(
        slow.is_empty(),
        "failed acquisitions that took longer than {max_took:?}: {slow:?}"
    );
}

/// Holds that started in `[from_us, to_us]`.
pub fn started_within(out: &Outcome, from_us: u64, to_us: u64) -> Vec<&Hold> {
    out.holds
        .iter()
        .filter(|h| h.start_us >= from_us && h.start_us <= to_us)
        .collect()
}

/// Asserts that every language has a hold among `holds`.
pub fn assert_every_language_held(holds: &[&Hold], when: &str, out: &Outcome) {
    for l in Language::ALL {
        assert!(
            holds
                .iter()
                .any(|h| Language::of_holder(&h.holder) == Some(l)),
            "{l} never held the lock {when}: {}",
            summary(out)
        );
    }
}

/// The languages that reported at least one failed acquisition.
pub fn languages_that_failed(out: &Outcome) -> Vec<Language> {
    Language::ALL
        .into_iter()
        .filter(|l| {
            out.failures
                .iter()
                .any(|f| Language::of_holder(f.split(':').next().unwrap_or("")) == Some(*l))
        })
        .collect()
}
