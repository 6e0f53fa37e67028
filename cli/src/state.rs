//! What holds a name, read once for `status` (its line and JSON) and for the waiting line:
//! a lock's remaining time and waiters, a semaphore's permits, a read-write lock's readers.

use std::time::Duration;

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
        let held = match st.remaining {
            Some(left) => format!("held, {:.1}s left", left.as_secs_f64()),
            None => "free".to_string(),
        };
        let line = match st.waiters {
            Some(n) => format!("{held}, {n} waiting"),
            None => held,
        };
        let report = json!({"kind": "lock", "remaining_ms": st.remaining.map(millis),
                            "waiters": st.waiters});
        return Ok(Seen {
            held: st.remaining.is_some(),
            line,
            report,
        });
    }
    Ok(match manager.family(name, kind)?.state().await? {
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
    })
}

pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
