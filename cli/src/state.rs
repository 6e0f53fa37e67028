//! What holds a name, read once for `status` (its line and JSON) and for the waiting line:
//! a lock's remaining time, waiters and holder (when it left a note: `--holder`), a
//! semaphore's permits, a read-write lock's readers.

use std::time::{Duration, SystemTime};

use fencelock::{FamilyState, LeaseKind, LockManager};
use serde_json::{json, Value};

/// A name's state: whether it is held, in words, and as JSON.
pub struct Seen {
    pub held: bool,
    pub line: String,
    pub report: Value,
}

/// Reads `name` as a lease of `kind`, changing nothing.
pub async fn read(manager: &LockManager, name: &str, kind: LeaseKind) -> fencelock::Result<Seen> {
    if kind == LeaseKind::Lock {
        let st = manager.state(name).await?;
        let by = match &st.holder {
            Some(n) => format!(
                " by {} for {}, fencing token {}",
                n.label,
                ago(n.since),
                n.fencing_token
            ),
            None => String::new(),
        };
        let held = match st.remaining {
            Some(left) => format!("held{by}, {:.1}s left", left.as_secs_f64()),
            None => "free".to_string(),
        };
        let line = match st.waiters {
            Some(n) => format!("{held}, {n} waiting"),
            None => held,
        };
        let holder = st.holder.as_ref().map(|n| {
            json!({"label": n.label, "since_ms": n.since_ms(),
                   "fencing_token": n.fencing_token})
        });
        let report = json!({"kind": "lock", "remaining_ms": st.remaining.map(millis),
                            "waiters": st.waiters, "holder": holder});
        return Ok(Seen {
            held: st.remaining.is_some(),
            line,
            report,
        });
    }
    let family = manager.family(name, kind)?;
    let noted = family.holders().await?;
    let mut seen = family_seen(family.state().await?);
    if !noted.is_empty() {
        let who: Vec<String> = noted
            .iter()
            .filter_map(|h| h.note.as_ref())
            .map(|n| {
                format!(
                    "{} for {} (fencing token {})",
                    n.label,
                    ago(n.since),
                    n.fencing_token
                )
            })
            .collect();
        seen.line = format!("{}; noted: {}", seen.line, who.join(", "));
    }
    seen.report["holders_noted"] = json!(noted
        .iter()
        .filter_map(|h| h.note.as_ref().map(|n| json!({"label": n.label,
            "since_ms": n.since_ms(), "fencing_token": n.fencing_token,
            "remaining_ms": millis(h.remaining)})))
        .collect::<Vec<_>>());
    Ok(seen)
}

/// A semaphore's or read-write lock's state in words and JSON.
fn family_seen(state: FamilyState) -> Seen {
    match state {
        FamilyState::Semaphore(s) => Seen {
            held: s.held > 0,
            line: format!(
                "{} of {} permits held by {}, {} waiting",
                s.held, s.limit, s.holders, s.waiters
            ),
            report: json!({"kind": "semaphore", "limit": s.limit, "permits_held": s.held,
                           "holders": s.holders, "waiters": s.waiters}),
        },
        FamilyState::RwLock(s) => Seen {
            held: s.writer || s.readers > 0,
            line: match (s.writer, s.readers) {
                (true, _) => format!("held by a writer, {} waiting", s.waiters),
                (false, 0) => format!("free, {} waiting", s.waiters),
                (false, n) => format!("held by {n} readers, {} waiting", s.waiters),
            },
            report: json!({"kind": "rwlock", "writer": s.writer, "readers": s.readers,
                           "waiters": s.waiters}),
        },
    }
}

/// How long ago `since` was, in words a person reads at a glance (`3.2s`, `4m 05s`,
/// `2h 03m`); `0.0s` for a time ahead of this clock.
fn ago(since: SystemTime) -> String {
    let d = SystemTime::now().duration_since(since).unwrap_or_default();
    let s = d.as_secs();
    match s {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, s % 3600 / 60),
    }
}

pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
