//! Following an election: the current leader, then each change, pushed by the servers.
//!
//! An observer listens on the lock's release channel of every server (the manager's
//! subscriber, shared with the waiters), where every note of a term (its grant, extensions,
//! proclaims) and every release of one is announced, and reads the election again (one
//! quorum read) at each message. What no message tells, a leader that crashed or was cut off,
//! it learns from a timer at the term's remaining time. So each read begins after the
//! subscriptions it will then wait on: a change after the read is a message they hear.

use std::time::Duration;

use futures_util::future::{join_all, select_all};
use futures_util::FutureExt;

use super::{Election, Leader, Reading};
use crate::error::Result;
use crate::pubsub::Subscription;
use crate::timing::{ELECTION_RECHECK, MIN_RECHECK, MIN_SUBSCRIBE_TIME, UNLISTENED_RECHECK};

/// What an observer registers as on the channel (a waiter's token never is this short).
const OBSERVER: &[u8] = b"observer";

/// The leader changes of an election (from [`Election::observe`]): [`next`](Self::next)
/// returns the current state first, then each change, in order. It may skip a state that
/// lasted less than a read (a term that began and ended between two reads), never a last one:
/// it always ends on the election's state now. Each term is reported once per value.
pub struct Observer {
    election: Election,
    /// The subscriptions of the last read, one per server that answered.
    subscriptions: Vec<Subscription>,
    /// What it reported last (`None` before the first report): the term and value, or
    /// nobody.
    reported: Option<Option<(u64, String)>>,
    /// When to read again without a message; `None` before the first read.
    recheck: Option<Duration>,
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Observer")
            .field("election", &self.election)
            .field("listening_on", &self.subscriptions.len())
            .finish()
    }
}

impl Observer {
    pub(super) fn new(election: Election) -> Observer {
        Observer {
            election,
            subscriptions: Vec::new(),
            reported: None,
            recheck: None,
        }
    }

    /// The next state to report: at the first call the current leader (`None`: nobody
    /// leads), then waits for the next change and returns it.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when fewer than a quorum of
    /// servers answer a read (the observer stays usable: the next call reads again);
    /// [`ErrorKind::WrongKind`](crate::ErrorKind::WrongKind) when the name is a semaphore or a
    /// read-write lock.
    pub async fn next(&mut self) -> Result<Option<Leader>> {
        loop {
            if let Some(after) = self.recheck.take() {
                self.wait(after).await;
            }
            self.listen().await;
            let reading = match self.election.read().await {
                Ok(reading) => reading,
                Err(e) => {
                    self.recheck = Some(self.election.engine().config.retry_delay);
                    return Err(e);
                }
            };
            self.recheck = Some(self.recheck_after(&reading));
            let seen = reading
                .leader
                .as_ref()
                .map(|l| (l.fencing_token, l.value.clone()));
            if self.reported.as_ref() != Some(&seen) {
                self.reported = Some(seen);
                return Ok(reading.leader);
            }
        }
    }

    /// How long the state read lasts for sure without a message: until the name's hold runs
    /// out (a leader that crashed, a candidate that never noted its value), and not longer
    /// than [`ELECTION_RECHECK`] (or [`UNLISTENED_RECHECK`] while a server is not listened
    /// to).
    fn recheck_after(&self, reading: &Reading) -> Duration {
        let bound = if self.subscriptions.len() < self.election.engine().n() {
            UNLISTENED_RECHECK
        } else {
            ELECTION_RECHECK
        };
        reading
            .held_for
            .map_or(bound, |held| held.max(MIN_RECHECK).min(bound))
    }

    /// Subscribes again on every server (no network call where the subscriber still listens)
    /// before the read: a channel a cluster dropped is subscribed again, and the new
    /// subscriptions hear every change after them.
    async fn listen(&mut self) {
        let engine = self.election.engine();
        let keys = crate::keys::LockKeys::new(&engine.config.prefix, &self.election.name);
        let timeout = engine
            .server_timeout(crate::timing::DEFAULT_TTL)
            .max(MIN_SUBSCRIBE_TIME);
        let channel = &keys.channel;
        let fresh = join_all(engine.servers.iter().map(|s| async move {
            match s.join_subscribed(channel, OBSERVER) {
                Some(sub) => Some(sub),
                None => s.subscribe(channel, OBSERVER, timeout).await.ok(),
            }
        }))
        .await;
        // The old ones go after the new ones joined: the channel stays subscribed.
        self.subscriptions = fresh.into_iter().flatten().collect();
    }

    /// Until a message on any server, or `after`.
    async fn wait(&mut self, after: Duration) {
        if self.subscriptions.is_empty() {
            tokio::time::sleep(after).await;
            return;
        }
        let notified = select_all(self.subscriptions.iter_mut().map(|s| s.notified().boxed()));
        let _ = tokio::time::timeout(after, notified).await;
    }
}
