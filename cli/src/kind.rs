//! `--semaphore N`, `--shared`, `--exclusive`: the kind of lease a name is taken as.

use fencelock::LeaseKind;

use crate::args::KindArgs;
use crate::exit::{self, Failure};

/// The lease kind the options name: a lock unless one of them is given.
pub fn of(args: &KindArgs) -> Result<LeaseKind, Failure> {
    Ok(match (args.semaphore, args.shared, args.exclusive) {
        (Some(limit), _, _) => {
            fencelock::ffi_support::kind::check_limit(limit)
                .map_err(|e| Failure::new(exit::USAGE, format!("--semaphore: {e}")))?;
            LeaseKind::Permits { count: 1, limit }
        }
        (None, true, _) => LeaseKind::Read,
        (None, false, true) => LeaseKind::Write,
        (None, false, false) => LeaseKind::Lock,
    })
}

/// Why `name` was not acquired as `kind`, in words.
pub fn taken(name: &str, kind: LeaseKind) -> String {
    match kind {
        LeaseKind::Lock => format!("the lock {name} is held"),
        LeaseKind::Permits { limit, .. } => {
            format!("the {limit} permits of the semaphore {name} are taken")
        }
        LeaseKind::Read => format!("the read-write lock {name} has a writer, or one in line"),
        LeaseKind::Write => format!("the read-write lock {name} is held"),
    }
}

/// The kind's word in JSON output: `lock`, `semaphore`, `read` or `write`.
pub fn label(kind: LeaseKind) -> &'static str {
    match kind {
        LeaseKind::Lock => "lock",
        LeaseKind::Permits { .. } => "semaphore",
        LeaseKind::Read => "read",
        LeaseKind::Write => "write",
    }
}
