//! A lock's auto-extension: a task that extends it until it is released, dropped or lost.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Holding, Lock, Status};
use crate::error::ErrorKind;
use crate::timing;

impl Lock {
    /// Keeps the lock alive in the background: extends it every ttl/3 until it is released,
    /// dropped or lost, and, with `max_hold`, for at most that long since acquisition (the
    /// last extension ends exactly there). A failed extension is retried while validity lasts;
    /// `NotHeld`, or validity running out, marks the lock lost (with why) and fires
    /// [`lost`](Lock::lost) and the [`on_lost`](Lock::on_lost) callbacks.
    ///
    /// The task runs on the runtime the lock was acquired on; calling this again replaces the
    /// previous task.
    pub fn auto_extend(&self, max_hold: Option<Duration>) {
        let Some(runtime) = &self.shared.runtime else {
            return;
        };
        let shared = Arc::clone(&self.shared);
        let task = runtime.spawn(async move { auto_extend_loop(shared, max_hold).await });
        let mut st = self.shared.state();
        if let Some(old) = st.auto_extend.replace(task.abort_handle()) {
            old.abort();
        }
        if self.shared.status() != Status::Held {
            if let Some(t) = st.auto_extend.take() {
                t.abort();
            }
        }
    }
}

async fn auto_extend_loop(shared: Arc<Holding>, max_hold: Option<Duration>) {
    let hold_until = max_hold.and_then(|m| shared.acquired_at.checked_add(m));
    let mut next = {
        let st = shared.state();
        next_extension(Instant::now(), st.ttl, hold_until)
    };
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
