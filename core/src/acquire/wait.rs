//! Between the attempts of an acquire call ([`super`]): listening for the releases'
//! messages on the waiter's wake-up channels, and sleeping until one names this waiter, the
//! holder's TTL runs out or the retry delay passes; the hand-offs those messages name, also
//! for a call that ends (its guard keeps listening).

use std::time::{Duration, Instant};

use futures_util::future::{join_all, select_all};
use futures_util::FutureExt;

use super::AcquireCall;
use crate::engine::{Acquired, Engine, Target};
use crate::pubsub::Subscription;
use crate::queue::{judge_handoffs, Verdict};
use crate::timing::{self, MIN_SUBSCRIBE_TIME, PARTIAL_HANDOFF_WAIT};

impl AcquireCall {
    /// A server whose release handed the lock to this call's place (its message named the
    /// place's arrival) holds the token for this call.
    pub(super) fn note_handoffs(&mut self) {
        let (Some(own), Some(subs), Some(place)) = (
            self.own.as_mut(),
            self.subscriptions.as_ref(),
            self.place.as_ref(),
        ) else {
            return;
        };
        for (i, s) in subs {
            if matches!(s.handoff(), Some(h) if h.arrival == place.arrival) {
                own[*i] = true;
            }
        }
        self.limit_leaving();
    }

    /// Before the place is given up: the hand-offs heard so far count, and the wake-up
    /// subscriptions go with the guard, which releases a lock handed to the place meanwhile
    /// (see [`UndoGuard::watch_handoffs`]).
    pub(super) fn keep_watching_handoffs(&mut self) {
        self.note_handoffs();
        if let (Some(leave), Some(place), Some(_)) = (
            self.leave_queue.as_mut(),
            self.place.as_ref(),
            self.own.as_ref(),
        ) {
            if let Some(subs) = self.subscriptions.take() {
                leave.watch_handoffs(place.arrival, subs);
            }
        }
    }

    /// Sleeps until the next attempt; returns a lock the releases handed over meanwhile.
    /// At the first refusal, not yet listening (see [`join_subscribed`]), it subscribes and
    /// returns at once, so that a release that came before the subscription is not missed.
    pub(super) async fn wait_for_turn(
        &mut self,
        holder_pttl: Option<Duration>,
        remaining: Option<Duration>,
    ) -> Option<Acquired> {
        let Some(subs) = self.subscriptions.as_mut() else {
            let allowed = self.timeout.max(MIN_SUBSCRIBE_TIME);
            let bound = remaining.map_or(allowed, |r| r.min(allowed));
            self.subscriptions = Some(subscribe(&self.engine, &self.target, bound).await);
            return None;
        };
        let cfg = &self.engine.config;
        let random: f64 = rand::random();
        let mut sleep = timing::retry_sleep(holder_pttl, cfg.retry_delay, cfg.retry_jitter, random);
        if let Some(r) = remaining {
            sleep = sleep.min(r);
        }
        // A release hands the lock to the first waiter in line and tells only it, so waiters
        // do not race each other in lockstep; the others sleep on until their turn (or their
        // timer).
        let Some(place) = self.place.as_ref().filter(|_| !subs.is_empty()) else {
            tokio::time::sleep(sleep).await;
            return None;
        };
        let mut wake_by = tokio::time::Instant::now() + sleep;
        let mut partial_by = None;
        loop {
            let notified = select_all(subs.iter_mut().map(|(_, s)| s.notified().boxed()));
            let woke = tokio::time::timeout_at(wake_by, notified).await.is_ok();
            if !self.trust_handoffs {
                return None;
            }
            let handoffs = subs.iter().filter_map(|(_, s)| s.handoff());
            let since = self.started.elapsed();
            let q = self.target.quorum(self.engine.n());
            let drift = self.engine.drift_factor();
            match judge_handoffs(handoffs, place, q, self.ttl, since, drift) {
                Verdict::Done { fence, validity } => {
                    return Some(Acquired {
                        fencing_token: fence,
                        more_fences: Vec::new(),
                        valid_until: Instant::now() + validity,
                    })
                }
                // Other servers' messages are on their way (they release in parallel): wait
                // for them a little, then try.
                Verdict::Partial if woke => {
                    let by = *partial_by.get_or_insert_with(|| {
                        tokio::time::Instant::now() + self.timeout.min(PARTIAL_HANDOFF_WAIT)
                    });
                    wake_by = wake_by.min(by);
                }
                Verdict::Partial | Verdict::Stale | Verdict::Nothing => return None,
            }
        }
    }
}

/// Joins the waiter's wake-up channels (one per name) with no network call, when every
/// server's subscriber already listens to them (another waiter of this manager, or a recent
/// wait on the same lock): then a waiter joins before its first attempt, and a refusal needs
/// no second attempt to cover a release that came before the subscription.
pub(super) fn join_subscribed(
    engine: &Engine,
    target: &Target,
) -> Option<Vec<(usize, Subscription)>> {
    let channels = wake_channels(target);
    let mut subs = Vec::with_capacity(engine.n() * channels.len());
    for (i, s) in engine.servers.iter().enumerate() {
        for channel in &channels {
            subs.push((i, s.join_subscribed(channel, &target.token)?));
        }
    }
    Some(subs)
}

/// Subscribes to the waiter's wake-up channels (shared by this manager's waiters of the lock)
/// on every server that answers in time.
async fn subscribe(
    engine: &Engine,
    target: &Target,
    timeout: Duration,
) -> Vec<(usize, Subscription)> {
    let channels = wake_channels(target);
    let each = engine.servers.iter().enumerate().flat_map(|(i, s)| {
        channels
            .iter()
            .map(move |c| async move { (i, s.subscribe(c, &target.token, timeout).await) })
    });
    join_all(each)
        .await
        .into_iter()
        .filter_map(|(i, r)| Some((i, r.ok()?)))
        .collect()
}

/// The waiter's wake-up channel of each of the lock's names.
fn wake_channels(target: &Target) -> Vec<Vec<u8>> {
    target
        .all_keys()
        .iter()
        .map(|k| k.wake_channel(&target.token))
        .collect()
}
/// A call dropped mid-way (cancelled) gives its place up through the guard, in the
/// background: the guard takes the wake-up subscriptions along.
impl Drop for AcquireCall {
    fn drop(&mut self) {
        self.keep_watching_handoffs();
    }
}
