//! `--semaphore N`, `--shared`, `--exclusive`: the kind of lease a name is taken as.

use fencelock::LeaseKind;

use crate::args::KindArgs;
use crate::exit::{self, Failure};

/// The lease kind the options name: a lock unless one of them is given.
pub fn of(args: &KindArgs) -> Result<LeaseKind, Failure> {
    Ok(match (args.semaphore, args.shared, args.exclusive) {
        (Some(limit), _, _) => {
            fencelock::kind::check_limit(limit)
                .map_err(|e| Failure::new(exit::USAGE, format!("--semaphore: {e}")))?;
            LeaseKind::Permits { count: 1, limit }
        }
        (None, true, _) => LeaseKind::Read,
        (None, false, true) => LeaseKind::Write,
        (None, false, false) => LeaseKind::Lock,
    })
}

/// "lock", "semaphore", ... for messages.
pub fn describe(kind: LeaseKind) -> &'static str {
    match kind {
        LeaseKind::Lock => "lock",
        LeaseKind::Permits { .. } => "semaphore (every permit)",
        LeaseKind::Read => "read-write lock (a writer)",
        LeaseKind::Write => "read-write lock (a writer or readers)",
    }
}
