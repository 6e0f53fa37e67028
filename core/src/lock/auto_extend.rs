//! A lock's auto-extension: a task that extends it until it is released, dropped or lost,
//! started when the first extension is due (`crate::deferred`: most holds end before that, and
//! a task spawned and aborted for each would cost a runtime thread two wake-ups a hold).

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use tokio::task::AbortHandle;

use super::{Holding, Lock, Status};
use crate::deferred::Ticket;
use crate::error::ErrorKind;
use crate::timing;

/// Where a lock's auto-extension is: queued until its first extension is due, or running.
pub(super) enum Extending {
    Due(Ticket),
    Running(AbortHandle),
}

impl Lock {
    /// Keeps the lock alive in the background: extends it every ttl/3 until it is released,
    /// dropped or lost, and, with `max_hold`, for at most that long since acquisition (the
    /// last extension ends exactly there). A failed extension is retried while validity lasts;
    /// `NotHeld`, or validity running out, marks the lock lost (with why) and fires
    /// [`lost`](Lock::lost) and the [`on_lost`](Lock::on_lost) callbacks.
    ///
    /// The task runs on the runtime the lock was acquired on, from when the first extension
    /// is due; calling this again replaces the previous task.
    pub fn auto_extend(&self, max_hold: Option<Duration>) {
        let shared = &self.shared;
        let Some(runtime) = &shared.runtime else {
            return;
        };
        let hold_until = max_hold.and_then(|m| shared.acquired_at.checked_add(m));
        let mut st = shared.state();
        let first = next_extension(Instant::now(), st.ttl, hold_until);
        let ticket = shared.engine.deferred.ticket(first);
        let old = st.auto_extend.replace(Extending::Due(ticket));
        let held = shared.status() == Status::Held;
        if !held {
            st.auto_extend = None;
        }
        drop(st);
        match old {
            Some(Extending::Due(t)) => {
                shared.engine.deferred.cancel(t);
            }
            Some(Extending::Running(task)) => task.abort(),
            None => {}
        }
        if held {
            let weak = Arc::downgrade(shared);
            let start = move || start_extending(weak, ticket, hold_until, first);
            shared
                .engine
                .deferred
                .schedule(runtime, ticket, Box::new(start));
        }
    }
}

/// The queued auto-extension with `ticket` starts: unless the lock is gone, no longer held, or
/// its auto-extension was stopped or replaced meanwhile.
fn start_extending(
    lock: Weak<Holding>,
    ticket: Ticket,
    hold_until: Option<Instant>,
    first: Instant,
) {
    let Some(shared) = lock.upgrade() else {
        return;
    };
    let Some(runtime) = shared.runtime.clone() else {
        return;
    };
    let mut st = shared.state();
    let queued = matches!(st.auto_extend, Some(Extending::Due(t)) if t == ticket);
    if !queued || shared.status() != Status::Held {
        return;
    }
    let task = runtime.spawn(auto_extend_loop(Arc::clone(&shared), hold_until, first));
    st.auto_extend = Some(Extending::Running(task.abort_handle()));
}

async fn auto_extend_loop(shared: Arc<Holding>, hold_until: Option<Instant>, first: Instant) {
    let mut next = first;
    loop {
        tokio::time::sleep_until(next.into()).await;
        if shared.status() != Status::Held {
            return;
        }
        let (ttl, valid_until) = {
            let st = shared.state();
            (st.ttl, st.valid_until)
        };
        let now = Instant::now();
        let mut this_ttl = ttl;
        if let Some(end) = hold_until {
            let left = end.saturating_duration_since(now);
            // What is left is too short for an extension to be granted: let it expire.
            if left < shared.engine.min_ttl {
                return;
            }
            this_ttl = this_ttl.min(left);
        }
        match shared.extend(this_ttl).await {
            // The last extension, capped: validity now ends where the hold must.
            Ok(()) if this_ttl < ttl => return,
            Ok(()) => next = next_extension(Instant::now(), ttl, hold_until),
            // Marked lost, with why, by the extension.
            Err(e) if e.kind() == ErrorKind::NotHeld => return,
            Err(_) => {
                let left = valid_until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    shared.mark_lost(shared.expiry_reason());
                    return;
                }
                // Try again soon, well before validity runs out.
                next = Instant::now() + timing::extend_retry(left, ttl);
            }
        }
    }
}

/// When to extend next: a third of the TTL from `now`, or, when the hold must end before that
/// (`hold_until`, from `max_hold`), halfway to its end, where one extension capped to what is
/// left makes the lock's validity end there, even when `max_hold` is shorter than the TTL
/// (the lock is then shortened).
fn next_extension(now: Instant, ttl: Duration, hold_until: Option<Instant>) -> Instant {
    let regular = timing::extend_every(ttl);
    let wait = match hold_until {
        Some(end) => regular.min(end.saturating_duration_since(now) / 2),
        None => regular,
    };
    now + wait
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_shorter_than_a_period_is_capped_halfway_to_its_end() {
        let now = Instant::now();
        let ttl = Duration::from_secs(30);
        assert_eq!(
            next_extension(now, ttl, None),
            now + timing::extend_every(ttl)
        );
        let end = now + Duration::from_secs(1);
        assert_eq!(
            next_extension(now, ttl, Some(end)),
            now + Duration::from_millis(500)
        );
        let far = now + Duration::from_secs(3600);
        assert_eq!(
            next_extension(now, ttl, Some(far)),
            now + timing::extend_every(ttl)
        );
    }
}
