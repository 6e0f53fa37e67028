//! Following an election: the current leader, then each change, pushed by the servers.
//!
//! An observer listens on the lock's release channel of every server (the manager's
//! subscriber, shared with the waiters), where every note of a term (its grant, extensions,
//! proclaims) and every release of one is announced, and reads the election again (one
//! quorum read) at each message that tells a change. A term's extension is told by a renewal
//! message instead (`note.lua`): the term and its new PTTL on that server, from which the
//! observer moves its timer without a read, so that following an idle election costs the
//! servers nothing but the leader's own extensions. What no message tells, a leader that
//! crashed or was cut off, it learns from that timer at the term's end. So each read begins
//! after the subscriptions it will then wait on: a change after the read is a message they
//! hear.
//!
//! Within the lock's assumptions the terms it reads never go back (the model checks it). When
//! they do (a server restarted empty, a failover that lost writes), the lower term is still
//! reported, with a warning event: following the leader matters more than a term order the
//! servers no longer keep.

use std::time::Duration;

use futures_util::future::{join_all, select_all};
use futures_util::FutureExt;
use tokio::time::Instant;

use super::{Election, Leader, Reading};
use crate::error::Result;
use crate::pubsub::{Subscription, Wake};
use crate::queue::OBSERVERS;
use crate::timing::{ELECTION_RECHECK, MIN_RECHECK, MIN_SUBSCRIBE_TIME, UNLISTENED_RECHECK};

/// The leader changes of an election (from [`Election::observe`]): [`next`](Self::next)
/// returns the current state first, then each change, in order. It may skip a state that
/// lasted less than a read (a term that began and ended between two reads), never a last one:
/// it always ends on the election's state now. Each term is reported once per value.
pub struct Observer {
    election: Election,
    /// The subscriptions of the last read, one per server that answered: the server's index,
    /// and what its messages had said when last looked at.
    subscriptions: Vec<(usize, Subscription, Wake)>,
    /// What it reported last (`None` before the first report): the term and value, or
    /// nobody.
    reported: Option<Option<(u64, String)>>,
    /// When to read again without a message; `None` before the first read. A deadline, not a
    /// span: a call of [`next`](Observer::next) given up while it waits (a caller waiting in
    /// chunks, `next_within`) leaves it, and the next call waits on to the same instant
    /// instead of reading again.
    recheck: Option<Instant>,
    /// The term's end by the last read (the timer it set), and the latest a timer may be set
    /// to before the next read.
    read_end: Instant,
    latest: Instant,
    /// The term's end on each server by the renewals it announced since the last read.
    renewed: Vec<Option<Instant>>,
    /// The term reported last (0: none), to tell a term that went back.
    newest: u64,
}

/// What waiting for the next message ended with.
#[derive(Debug, PartialEq, Eq)]
enum Waited {
    /// The timer, or a message that tells a change: read.
    Read,
    /// Renewals of the term reported, or nothing new: wait on, to the timer they set.
    Renewed,
}

/// `span` from now.
fn after(span: Duration) -> Instant {
    Instant::now() + span
}

/// What a read means to an observer that reported `last` (`None`: nothing yet).
#[derive(Debug, PartialEq, Eq)]
enum Judged {
    /// A change: report it.
    Report,
    /// What was reported last.
    Same,
    /// A term older than the last one reported: the servers forgot newer grants (a server
    /// restarted empty, a failover that lost writes), outside the lock's assumptions. Reported
    /// too, with a warning: an observer that kept to the newest term it saw would stay on a
    /// stale state for good.
    Older,
}

/// Judges the state `seen` (a term and value, or nobody) after `last`, the term reported last
/// being `newest` (0: none).
fn judge(
    last: Option<&Option<(u64, String)>>,
    seen: &Option<(u64, String)>,
    newest: u64,
) -> Judged {
    match (last, seen) {
        (Some(last), seen) if last == seen => Judged::Same,
        (_, Some((term, _))) if *term < newest => Judged::Older,
        _ => Judged::Report,
    }
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
            read_end: Instant::now(),
            latest: Instant::now(),
            renewed: Vec::new(),
            newest: 0,
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
            if let Some(at) = self.recheck {
                if self.wait(at).await == Waited::Renewed {
                    continue;
                }
                self.recheck = None;
            }
            self.listen().await;
            let reading = match self.election.read().await {
                Ok(reading) => reading,
                Err(e) => {
                    self.recheck = Some(after(self.election.engine().config.retry_delay));
                    return Err(e);
                }
            };
            self.set_timer(&reading);
            let seen = reading
                .leader
                .as_ref()
                .map(|l| (l.fencing_token, l.value.clone()));
            let judged = judge(self.reported.as_ref(), &seen, self.newest);
            if judged == Judged::Same {
                continue;
            }
            if let Some((term, _)) = &seen {
                if judged == Judged::Older {
                    tracing::warn!(
                        target: "fencelock",
                        election = %crate::keys::display_name(&self.election.name),
                        term = *term,
                        newest_seen = self.newest,
                        "election's term went back: the servers forgot newer grants (a server \
                         restarted empty, or a failover lost writes)"
                    );
                }
                self.newest = *term;
            }
            self.reported = Some(seen);
            return Ok(reading.leader);
        }
    }

    /// How long the state read lasts for sure without a message: until the name's hold runs
    /// out (a leader that crashed, a candidate that never noted its value), and not longer
    /// than [`ELECTION_RECHECK`] (or [`UNLISTENED_RECHECK`] while a server is not listened
    /// to).
    fn set_timer(&mut self, reading: &Reading) {
        let n = self.election.engine().n();
        let bound = if self.subscriptions.len() < n {
            UNLISTENED_RECHECK
        } else {
            ELECTION_RECHECK
        };
        let span = reading
            .held_for
            .map_or(bound, |held| held.max(MIN_RECHECK).min(bound));
        self.read_end = after(span);
        self.latest = after(bound);
        self.renewed = vec![None; n];
        self.recheck = Some(self.read_end);
    }

    /// Takes the messages heard since they were last looked at: `false` when one tells a
    /// change (a plain wake-up, a renewal of another term than the one reported), else moves
    /// the timer to the term's end by the renewals: the quorum-th latest of the servers' ends
    /// (a server that sent none since the read ends as the read found), less the drift.
    fn take_renewals(&mut self) -> bool {
        let reported = match &self.reported {
            Some(Some((term, _))) => Some(*term),
            _ => None,
        };
        let drift = self.election.engine().drift_factor();
        let mut change = false;
        for (i, sub, seen) in &mut self.subscriptions {
            let wake = sub.wake();
            if wake.plain != seen.plain {
                change = true;
            } else if wake.handoffs != seen.handoffs {
                match wake.handoff {
                    Some(h) if Some(h.fence) == reported => {
                        let pttl = Duration::from_millis(h.arrival);
                        let valid = crate::quorum::validity(pttl, Duration::ZERO, drift);
                        self.renewed[*i] = Some(after(valid.unwrap_or_default()));
                    }
                    _ => change = true,
                }
            }
            *seen = wake;
        }
        if change {
            return false;
        }
        let mut ends: Vec<Instant> = self
            .renewed
            .iter()
            .map(|end| end.unwrap_or(self.read_end))
            .collect();
        ends.sort_by(|a, b| b.cmp(a));
        let q = crate::quorum::quorum(ends.len());
        let end = ends
            .get(q.saturating_sub(1))
            .copied()
            .unwrap_or(self.read_end);
        self.recheck = Some(end.max(after(MIN_RECHECK)).min(self.latest));
        true
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
        let fresh = join_all(engine.servers.iter().enumerate().map(|(i, s)| async move {
            let sub = match s.join_subscribed(channel, OBSERVERS) {
                Some(sub) => Some(sub),
                None => s.subscribe(channel, OBSERVERS, timeout).await.ok(),
            };
            sub.map(|sub| {
                let seen = sub.wake();
                (i, sub, seen)
            })
        }))
        .await;
        // The old ones go after the new ones joined: the channel stays subscribed.
        self.subscriptions = fresh.into_iter().flatten().collect();
    }

    /// Until a message on any server (one that came while an earlier call waited counts), or
    /// `at`.
    async fn wait(&mut self, at: Instant) -> Waited {
        if self.subscriptions.is_empty() {
            tokio::time::sleep_until(at).await;
            return Waited::Read;
        }
        let notified = select_all(
            self.subscriptions
                .iter_mut()
                .map(|(_, s, _)| s.notified().boxed()),
        );
        if tokio::time::timeout_at(at, notified).await.is_err() || !self.take_renewals() {
            return Waited::Read;
        }
        Waited::Renewed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(n: u64, v: &str) -> Option<(u64, String)> {
        Some((n, v.to_owned()))
    }

    /// Each term once per value, in order; an older term after a newer one is told apart.
    #[test]
    fn an_observer_reports_changes_and_tells_an_older_term_apart() {
        assert_eq!(
            judge(None, &None, 0),
            Judged::Report,
            "the first state, nobody"
        );
        assert_eq!(judge(None, &term(3, "a"), 0), Judged::Report);
        assert_eq!(judge(Some(&term(3, "a")), &term(3, "a"), 3), Judged::Same);
        let proclaimed = judge(Some(&term(3, "a")), &term(3, "b"), 3);
        assert_eq!(proclaimed, Judged::Report, "a proclaimed value, same term");
        assert_eq!(
            judge(Some(&term(3, "a")), &None, 3),
            Judged::Report,
            "nobody"
        );
        assert_eq!(judge(Some(&None), &None, 3), Judged::Same);
        assert_eq!(
            judge(Some(&term(3, "a")), &term(4, "a"), 3),
            Judged::Report,
            "a new term"
        );
        assert_eq!(judge(Some(&term(4, "a")), &term(3, "a"), 4), Judged::Older);
        let after_nobody = judge(Some(&None), &term(2, "x"), 4);
        assert_eq!(
            after_nobody,
            Judged::Older,
            "older than one reported before nobody"
        );
        assert_eq!(judge(Some(&None), &term(5, "x"), 4), Judged::Report);
    }
}
