//! Who holds a lock: the opt-in holder label.
//!
//! A manager built with a label ([`Builder::holder_label`](crate::Builder::holder_label);
//! [`default_holder_label`] gives `host:pid`) leaves a note next to each lock it acquires,
//! once granted: its label, since when it holds the lock (its own clock) and its fencing
//! token, under the lock's token (`note.lua`: written only while the lock key still holds the
//! token, with the lock key's remaining time, and again after each extension). The
//! inspection script returns a note only when it was left under the token that holds the lock
//! now, so a note outliving its hold (a crash, a hand-over) is never shown for the next
//! holder. [`LockManager::holder`](crate::LockManager::holder) reads it.
//!
//! Nothing is written without a label: the lock's own keys and scripts, the classic
//! `SET NX PX` interop and the lean uncontended path are the same either way. With a label an
//! acquisition costs one more script call per server (after the grant), and so does each
//! extension. A semaphore's or read-write lock's leases are noted the same way, one note per
//! lease in a hash (`note_permits.lua`), and listed by their handles' `holders()`
//! (`whos.lua`).

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::join_all;
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::engine::{Engine, Target};
use crate::error::Result;
pub use crate::label::{check_label, default_holder_label, MAX_LABEL_LEN};
use crate::scripts::{Announce, ScriptCall};

/// What a lock's holder noted about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HolderNote {
    /// Its label (`host:pid` by default, or the text its manager was given).
    pub label: String,
    /// When it was granted the lock, by its own clock.
    pub since: SystemTime,
    /// Its fencing token (of the lock's first name).
    pub fencing_token: u64,
    /// Whether the holder is an election's leader: its label is then the leader's value.
    pub(crate) term: bool,
}

impl HolderNote {
    /// [`since`](Self::since) in milliseconds since the Unix epoch (as the note keeps it; 0
    /// for a time before it).
    pub fn since_ms(&self) -> u64 {
        epoch_ms(self.since)
    }

    /// Whether the holder is an election's leader (its [`label`](Self::label) is the value the
    /// leader proclaims, its fencing token the term).
    pub fn is_term(&self) -> bool {
        self.term
    }
}

/// Who holds a lock now, as [`LockManager::holder`](crate::LockManager::holder) reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    /// How long a quorum still holds it at least (as
    /// [`LockManager::remaining`](crate::LockManager::remaining)).
    pub remaining: Duration,
    /// The holder's note; `None` when it left none (a manager without a label, another
    /// library's `SET NX PX`, or a note not written yet: it follows the grant by one call).
    pub note: Option<HolderNote>,
}

fn epoch_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// The note's text: `token\nsince_ms\nfencing_token\nlabel` (`note.lua` compares its first
/// line with the holder's token).
fn note_text(token: &[u8], since: SystemTime, fence: u64, label: &str) -> Vec<u8> {
    let mut note = token.to_vec();
    note.extend_from_slice(format!("\n{}\n{fence}\n{label}", epoch_ms(since)).as_bytes());
    note
}

/// A note as the inspection script returned it, already matched to the holder's `token` (the
/// note's first line, which may hold any bytes). A term's note has an empty label line before
/// its value (a label is never empty).
pub(crate) fn parse_note(token: &[u8], note: &[u8]) -> Option<HolderNote> {
    let rest = note.strip_prefix(token)?.strip_prefix(b"\n")?;
    let text = std::str::from_utf8(rest).ok()?;
    let mut parts = text.splitn(3, '\n');
    let since = parts.next()?.parse::<u64>().ok()?;
    let fencing_token = parts.next()?.parse::<u64>().ok()?;
    let label = parts.next()?;
    let (label, term) = match label.strip_prefix('\n') {
        Some(value) => (value, true),
        None => (label, false),
    };
    Some(HolderNote {
        label: label.to_owned(),
        since: UNIX_EPOCH + Duration::from_millis(since),
        fencing_token,
        term,
    })
}

impl Engine {
    /// Leaves (or renews) the notes of `t`, granted at `since` with `fences` (one per name), on
    /// every server: an election's term's `value` (announced to its observers: a `renewal`,
    /// the same value's note at an extension, as one they need not read), or else the
    /// manager's label when it has one. Returns once a quorum of the servers answered, with
    /// how many of those wrote it. A server that does not answer by then, or no longer holds
    /// the lock, gets none: a label's note is help for people, never part of the lock (a
    /// term's is renewed at each extension).
    pub(crate) async fn note_holder(
        &self,
        t: &Target,
        fences: &[u64],
        since: SystemTime,
        value: Option<&str>,
        renewal: bool,
    ) -> usize {
        let label = match value {
            Some(value) => format!("\n{value}"),
            None => match self.config.holder_label.as_deref() {
                Some(label) => label.to_owned(),
                None => return 0,
            },
        };
        let announce = |term| match (value, renewal) {
            (None, _) => Announce::Silent,
            (Some(_), false) => Announce::Change,
            (Some(_), true) => Announce::Renewal { term },
        };
        let keys = t.all_keys();
        let calls: Vec<ScriptCall> = keys
            .iter()
            .zip(fences)
            .map(|(k, fence)| {
                let note = note_text(&t.token, since, *fence, &label);
                match t.kind.is_lock() {
                    true => ScriptCall::note(k, &t.token, &note, announce(*fence)),
                    false => ScriptCall::permits_note(k, &t.token, &note),
                }
            })
            .collect();
        let timeout = self.server_timeout(crate::timing::DEFAULT_TTL);
        // Done once a quorum of the servers answered: a server that hangs (one of a Redlock)
        // must not hold up every acquisition with a label by its timeout; its note is left out.
        let mut pending: FuturesUnordered<_> = self
            .servers
            .iter()
            .map(|s| join_all(calls.iter().map(move |call| s.eval::<i64>(call, timeout))))
            .collect();
        let (mut answered, mut wrote) = (0, 0);
        while answered < t.quorum(self.n()) {
            let Some(replies) = pending.next().await else {
                break;
            };
            answered += 1;
            wrote += usize::from(replies.iter().all(|r| matches!(r, Ok(1))));
        }
        wrote
    }

    /// Tells the observers of election `t` that it changed (its leader resigned), on every
    /// server that answers in time; best effort (an observer also wakes when the term's time
    /// runs out).
    pub(crate) async fn announce(&self, t: &Target) {
        let call = ScriptCall::announce(&t.keys);
        let timeout = self.server_timeout(crate::timing::DEFAULT_TTL);
        join_all(self.servers.iter().map(|s| s.eval::<i64>(&call, timeout))).await;
    }
}

impl Engine {
    /// The notes of the leases of semaphore or read-write lock `name` that a quorum of the
    /// servers (`quorum`, the kind's) still hold, each with how long it still runs at least
    /// (the quorum-th longest), longest first. Leases whose holders left no note are not
    /// listed.
    ///
    /// # Errors
    /// As [`inspect`](Self::inspect).
    pub(crate) async fn lease_holders(
        &self,
        name: &[u8],
        quorum: usize,
    ) -> Result<Vec<LockHolder>> {
        let keys = crate::keys::LockKeys::new(&self.config.prefix, name);
        let views = self
            .views(
                name,
                ScriptCall::permits_whos(&keys),
                crate::scripts::parse_whos,
            )
            .await?;
        let mut by_token: HashMap<Vec<u8>, (Vec<u8>, Vec<Duration>)> = HashMap::new();
        for (token, note, left) in views.into_iter().flatten().flatten() {
            let entry = by_token.entry(token).or_insert_with(|| (note, Vec::new()));
            entry.1.push(left);
        }
        let mut out: Vec<LockHolder> = by_token
            .into_iter()
            .filter(|(_, (_, lefts))| lefts.len() >= quorum)
            .filter_map(|(token, (note, mut lefts))| {
                lefts.sort_by_key(|l| std::cmp::Reverse(*l));
                let note = parse_note(&token, &note)?;
                Some(LockHolder {
                    remaining: lefts[quorum - 1],
                    note: Some(note),
                })
            })
            .collect();
        out.sort_by_key(|h| std::cmp::Reverse(h.remaining));
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_note_reads_back_as_written() {
        let since = UNIX_EPOCH + Duration::from_millis(1_795_000_000_123);
        let token = b"tok\xff\nen";
        let text = note_text(token, since, 42, "web-1:4242 (orders)");
        assert_eq!(
            parse_note(token, &text),
            Some(HolderNote {
                label: "web-1:4242 (orders)".into(),
                since,
                fencing_token: 42,
                term: false,
            })
        );
        let term = parse_note(token, &note_text(token, since, 7, "\nhost-a\nline")).unwrap();
        assert!(term.is_term(), "an empty label line marks a term's note");
        assert_eq!(term.label, "host-a\nline");
        assert_eq!(parse_note(b"another", &text), None, "another token's note");
        assert_eq!(
            parse_note(token, &text).unwrap().since_ms(),
            1_795_000_000_123
        );
    }

    #[test]
    fn labels_are_checked_and_the_default_fits() {
        assert!(check_label("").is_err());
        assert!(check_label(&"x".repeat(MAX_LABEL_LEN + 1)).is_err());
        assert!(check_label("a\nb").is_err());
        assert!(check_label("web-1:4242").is_ok());
        let label = default_holder_label();
        assert!(check_label(&label).is_ok(), "{label}");
        assert!(label.ends_with(&format!(":{}", std::process::id())));
    }
}
