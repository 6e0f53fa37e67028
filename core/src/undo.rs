//! The undo guard: gives an attempt's votes (and, when asked, a waiter's place in the queue)
//! back on every server unless disarmed. Awaited on the normal path; run in the background
//! when the future that owns it is dropped mid-way (a cancelled acquire), on the runtime the
//! attempt started on, since the drop may happen outside it.
//!
//! A waiter with a caller's exclusive token gives up only its place where the key may be
//! another acquisition's (see [`UndoGuard::limit_to`]). A release may have handed the lock to
//! that place just before: the key then holds the token, for this call (the place still in
//! line until its holder releases; a semaphore's lease takes it out). Its wake-up subscriptions
//! say whether it was (the release's message names the place's arrival), so the guard keeps
//! them ([`UndoGuard::watch_handoffs`]) and, where leaving found what a hand-off leaves
//! ([`Compared::MaybeHanded`]), waits for that message in the background, within the undo's
//! timeout, and releases what it was handed.

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::engine::{Engine, Target};
use crate::lane::{self, in_lane, Lane};
use crate::pubsub::Subscription;
use crate::scripts::Compared;
use crate::timing::BACKGROUND_CLEANUP_TIMEOUT;

/// Releases an attempt's votes on every server unless disarmed.
pub(crate) struct UndoGuard {
    armed: Option<Undo>,
}

struct Undo {
    engine: Arc<Engine>,
    target: Arc<Target>,
    /// Per-server timeout of the undo when awaited: the attempt's (a dead server must not
    /// hold a waiter up longer than it held up the attempt).
    timeout: Duration,
    runtime: Option<tokio::runtime::Handle>,
    /// The connections the attempt rode: the undo rides them too, so that each server runs
    /// it after the attempt ([`crate::lane`]).
    lane: Lane,
    /// With a caller's exclusive token: the servers that may hold it for this call (the
    /// others' keys with the token are another acquisition's, left alone); `None`: all.
    mine: Option<Vec<bool>>,
    /// The waiter's place's arrival and its wake-up subscriptions, each with its server's
    /// index: where leaving found what a hand-off leaves, they tell whether one happened.
    handoffs: Option<(u64, Vec<(usize, Subscription)>)>,
}

impl Undo {
    /// Releases the attempt's votes; with `leave`, also the waiter's place in the queue.
    /// Returns, per server, whether it answered (then it no longer holds the token).
    async fn run(mut self, leave: bool) -> Vec<bool> {
        let (t, timeout) = (&self.target, self.timeout);
        let outcomes = match &self.mine {
            Some(mine) => self.engine.release_mine(t, timeout, leave, mine).await,
            None => self.engine.release_each(t, timeout, leave).await,
        };
        let answered = outcomes.iter().map(Result::is_ok).collect();
        if let (true, Some(mine), Some((arrival, subs))) = (leave, &self.mine, self.handoffs.take())
        {
            // Where only the place was given up, and the token holds the key there.
            let gone: Vec<(usize, Subscription)> = subs
                .into_iter()
                .filter(|(i, _)| {
                    !mine.get(*i).copied().unwrap_or(true)
                        && matches!(outcomes.get(*i), Some(Ok(Compared::MaybeHanded)))
                })
                .collect();
            if !gone.is_empty() {
                self.release_handed(arrival, gone);
            }
        }
        answered
    }

    /// In the background: for each server of `gone` whose release messages name the place
    /// of `arrival` (already, or within the undo's timeout: a hand-off's message left the
    /// server before the place was given up), the lock it was handed is released there.
    fn release_handed(self, arrival: u64, gone: Vec<(usize, Subscription)>) {
        let Some(runtime) = self.runtime.clone() else {
            return;
        };
        let cleanups = Arc::clone(&self.engine.cleanups);
        let lane = self.lane;
        cleanups.spawn(
            &runtime,
            in_lane(lane, async move {
                let handed =
                    |s: &Subscription| matches!(s.handoff(), Some(h) if h.arrival == arrival);
                // Every server's message awaited at once: at most one timeout in all.
                let heard = join_all(gone.into_iter().map(|(i, mut sub)| async move {
                    let message = async {
                        while !handed(&sub) {
                            sub.notified().await;
                        }
                    };
                    (i, tokio::time::timeout(self.timeout, message).await.is_ok())
                }))
                .await;
                let mut mine = vec![false; self.engine.n()];
                for (i, yes) in heard {
                    mine[i] = yes;
                }
                if mine.contains(&true) {
                    self.engine
                        .release_mine(&self.target, self.timeout, false, &mine)
                        .await;
                }
            }),
        );
    }
}

impl UndoGuard {
    /// An armed guard for `target`'s votes, undone within `timeout` per server when awaited.
    pub fn new(engine: &Arc<Engine>, target: &Arc<Target>, timeout: Duration) -> UndoGuard {
        UndoGuard {
            armed: Some(Undo {
                engine: Arc::clone(engine),
                target: Arc::clone(target),
                timeout,
                runtime: tokio::runtime::Handle::try_current().ok(),
                lane: lane::current(),
                mine: None,
                handoffs: None,
            }),
        }
    }

    /// Limits the undo to the servers `mine` marks (see [`Own`](crate::attempt::Own)):
    /// elsewhere a key holding the caller's token is another acquisition's.
    pub fn limit_to(&mut self, mine: Vec<bool>) {
        if let Some(undo) = self.armed.as_mut() {
            undo.mine = Some(mine);
        }
    }

    /// Keeps a waiter's wake-up subscriptions (each with its server's index) and its place's
    /// arrival, to release a lock handed to the place just before it was given up (see the
    /// module doc). Only for a guard limited to some servers ([`limit_to`](Self::limit_to)).
    pub fn watch_handoffs(&mut self, arrival: u64, subscriptions: Vec<(usize, Subscription)>) {
        if let Some(undo) = self.armed.as_mut() {
            undo.handoffs = Some((arrival, subscriptions));
        }
    }

    /// Nothing to undo any more.
    pub fn disarm(&mut self) {
        self.armed = None;
    }

    /// Gives the waiter's place in the queue up (and any vote), waiting for it at most until
    /// `until`; cancel-safe like [`run`](Self::run). Returns whether it finished in time.
    pub async fn leave(&mut self, until: Option<Instant>) -> bool {
        self.finish(true, until).await.is_some()
    }

    /// Runs the undo (keeping the waiter's place in the queue), waiting for it at most until
    /// `until`. Returns, when it finished in time, which servers answered it (they no longer
    /// hold the token); if not, it goes on in the background.
    pub async fn run(&mut self, until: Option<Instant>) -> Option<Vec<bool>> {
        self.finish(false, until).await
    }

    /// The undo runs as its own task, so that cancelling the attempt while it waits (an
    /// aborted acquire dropping its future) cannot stop the undo half-way and leave a vote
    /// behind on some server until its TTL runs out, and so that a caller out of time can
    /// leave it running.
    async fn finish(&mut self, leave: bool, until: Option<Instant>) -> Option<Vec<bool>> {
        let Some(undo) = self.armed.take() else {
            return Some(Vec::new());
        };
        let n = undo.engine.n();
        let done = async move {
            match undo.runtime.clone() {
                Some(runtime) => runtime
                    .spawn(in_lane(undo.lane, async move { undo.run(leave).await }))
                    .await
                    .unwrap_or_else(|_| vec![false; n]),
                None => in_lane(undo.lane, undo.run(leave)).await,
            }
        };
        match until {
            Some(u) => tokio::time::timeout_at(u.into(), done).await.ok(),
            None => Some(done.await),
        }
    }
}

impl Drop for UndoGuard {
    fn drop(&mut self) {
        if let Some(mut undo) = self.armed.take() {
            if let Some(runtime) = undo.runtime.clone() {
                // Nobody waits for it: give slow servers longer.
                undo.timeout = undo.timeout.max(BACKGROUND_CLEANUP_TIMEOUT);
                let cleanups = Arc::clone(&undo.engine.cleanups);
                cleanups.spawn(
                    &runtime,
                    in_lane(undo.lane, async move {
                        undo.run(true).await;
                    }),
                );
            }
        }
    }
}
