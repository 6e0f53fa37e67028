//! What a person at a terminal sees while fencelock waits: one line on stderr, updated, with
//! the name, what holds it (the holder's remaining TTL, or the permits, readers and writers)
//! and how long the wait has lasted. Nothing without a terminal or with `-q`.

use std::io::{IsTerminal as _, Write as _};
use std::time::{Duration, Instant};

use fencelock::{LeaseKind, LockManager};

/// How long one look at the lock may take before the line is drawn without it.
const LOOK_LIMIT: Duration = Duration::from_millis(300);

pub struct Progress {
    on: bool,
    drawn: bool,
    started: Instant,
}

impl Progress {
    pub fn new(quiet: bool) -> Progress {
        Progress {
            on: !quiet && std::io::stderr().is_terminal(),
            drawn: false,
            started: Instant::now(),
        }
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Draws the line again with what the servers say now.
    pub async fn draw(&mut self, manager: &LockManager, name: &str, kind: LeaseKind) {
        let held = tokio::time::timeout(LOOK_LIMIT, look(manager, name, kind))
            .await
            .unwrap_or_else(|_| "no answer yet".into());
        let waited = self.started.elapsed().as_secs();
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[Kfencelock: waiting for {name} ({held}) {waited}s"
        );
        let _ = err.flush();
        self.drawn = true;
    }

    /// Removes the line.
    pub fn clear(&mut self) {
        if self.drawn {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[K");
            let _ = err.flush();
            self.drawn = false;
        }
    }
}

/// What holds `name`, in a few words (the line `status` prints).
async fn look(manager: &LockManager, name: &str, kind: LeaseKind) -> String {
    match crate::state::read(manager, name, kind).await {
        Ok(seen) => seen.line,
        Err(e) => e.kind().as_str().into(),
    }
}
