//! Inspection, changing nothing: who holds a lock and for how long at least (the read-only
//! inspect script on every server, the quorum's view), whether a lease is still held
//! ([`Engine::holds`], behind `Lock::is_held`), and the occupancy of a semaphore or read-write
//! lock.

use std::time::{Duration, Instant};

use futures_util::future::join_all;

use crate::engine::{Engine, Target};
use crate::error::{Error, ErrorKind, Result};
use crate::failure::ServerFailure;
use crate::keys::{display_name, LockKeys};
use crate::lost::LostReason;
use crate::quorum;
use crate::scripts::{parse_inspect, parse_permits, Holder, PermitsView, ScriptCall};
use crate::timing;
use crate::who::{parse_note, HolderNote};

/// A lock's state as [`LockManager::state`](crate::LockManager::state) reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockState {
    /// How long a quorum still holds it at least (`None`: free; see
    /// [`LockManager::remaining`](crate::LockManager::remaining)).
    pub remaining: Option<Duration>,
    /// Callers waiting in line (with several servers, the most any answering server counts);
    /// `None` when no server would count them (an ACL without `zcard`, docs/SECURITY.md).
    pub waiters: Option<u64>,
    /// The holder's note, when it holds the lock on a quorum and left one (a manager with a
    /// holder label, `who.rs`).
    pub holder: Option<HolderNote>,
}

impl Engine {
    /// The quorum's view of lock `name`, changing nothing: `remaining` is `None` when no
    /// quorum of servers holds it under one token (free, expired, or split between owners);
    /// else how long that quorum still holds it at least: the quorum-th longest PTTL among the
    /// servers that hold it, less the call's time and the clock drift (`Duration::MAX`: no
    /// expiry, a classic `SET` without `PX`). Which token holds it is never returned.
    ///
    /// # Errors
    /// [`ErrorKind::Unavailable`](crate::ErrorKind::Unavailable) when fewer than a quorum of servers answer; [`ErrorKind::Redis`](crate::ErrorKind::Redis)
    /// when servers answer with errors (a key of another type).
    pub async fn inspect(&self, name: &[u8]) -> Result<LockState> {
        let keys = LockKeys::new(&self.config.prefix, name);
        let start = Instant::now();
        let views = self
            .views(name, ScriptCall::inspect(&keys), parse_inspect)
            .await?;
        let q = quorum::quorum(self.n());
        let waiters = views.iter().flatten().filter_map(|(_, w)| *w).max();
        let mut by_token: std::collections::HashMap<&[u8], Vec<Option<Duration>>> =
            std::collections::HashMap::new();
        for (view, _) in views.iter().flatten() {
            if let Holder::Held { token, pttl, .. } = view {
                by_token.entry(token).or_default().push(*pttl);
            }
        }
        // At most one token can hold a quorum (a strict majority).
        let Some((token, mut pttls)) = by_token.into_iter().find(|(_, p)| p.len() >= q) else {
            return Ok(LockState {
                remaining: None,
                waiters,
                holder: None,
            });
        };
        let holder = views.iter().flatten().find_map(|(view, _)| match view {
            Holder::Held {
                token: t,
                note: Some(note),
                ..
            } if t.as_slice() == token => parse_note(token, note),
            _ => None,
        });
        pttls.sort_by_key(|p| std::cmp::Reverse(p.unwrap_or(Duration::MAX)));
        let remaining = match pttls[q - 1] {
            None => Duration::MAX,
            Some(pttl) => {
                quorum::validity(pttl, start.elapsed(), self.drift_factor()).unwrap_or_default()
            }
        };
        Ok(LockState {
            remaining: Some(remaining),
            waiters,
            holder,
        })
    }
}

impl Engine {
    /// Every server's answer to the read-only `call` on `name`, parsed with `parse`; an error
    /// when fewer than a quorum answered.
    pub(crate) async fn views<T>(
        &self,
        name: &[u8],
        call: ScriptCall,
        parse: fn(&redis::Value) -> std::result::Result<T, String>,
    ) -> Result<Vec<std::result::Result<T, ServerFailure>>> {
        let timeout = self.server_timeout(timing::DEFAULT_TTL);
        let views: Vec<_> = join_all(self.servers.iter().map(|s| async {
            let reply = s.eval::<redis::Value>(&call, timeout).await?;
            parse(&reply).map_err(ServerFailure::Reply)
        }))
        .await;
        let (n, q) = (self.n(), quorum::quorum(self.n()));
        let answered = views.iter().filter(|v| v.is_ok()).count();
        if answered >= q {
            return Ok(views);
        }
        let failures = self.failures(views.iter().map(|v| v.as_ref().err()));
        let lock = display_name(name);
        if views
            .iter()
            .all(|v| matches!(v, Err(f) if f.is_permanent()))
        {
            let kind = ServerFailure::error_kind(views.iter().filter_map(|v| v.as_ref().err()));
            if kind != ErrorKind::Unavailable {
                return Err(Error::new(
                    kind,
                    format!("inspection of {lock}: {failures}"),
                ));
            }
        }
        Err(Error::unavailable(format!(
            "inspection of {lock}: only {answered} of {n} servers answered, quorum is {q}: {failures}"
        )))
    }

    /// Whether a quorum of the servers hold `t`'s key under its token, changing nothing: `Ok`
    /// when they do; else why not (`Taken` when some server holds another token).
    ///
    /// # Errors
    /// As [`inspect`](Self::inspect).
    /// A lock on several names is held when each name is.
    pub async fn holds(&self, t: &Target) -> Result<std::result::Result<(), LostReason>> {
        if t.kind.is_permits() {
            return self.holds_permits(t).await;
        }
        let mut held = Ok(());
        for (name, keys) in t.names().zip(t.all_keys()) {
            let views = self
                .views(name, ScriptCall::inspect(keys), parse_inspect)
                .await?;
            let mut ours = 0;
            let mut others = false;
            for view in views.iter().flatten() {
                if let (Holder::Held { token, .. }, _) = view {
                    if *token == t.token.as_slice() {
                        ours += 1;
                    } else {
                        others = true;
                    }
                }
            }
            if ours >= quorum::quorum(self.n()) {
                continue;
            }
            if others {
                return Ok(Err(LostReason::Taken));
            }
            held = Err(LostReason::Expired);
        }
        Ok(held)
    }

    /// [`holds`](Self::holds) of a permit lease: whether a quorum of the lease's kind still
    /// holds it (a lease that ended is `Expired`: no other token can hold it).
    async fn holds_permits(&self, t: &Target) -> Result<std::result::Result<(), LostReason>> {
        let call = ScriptCall::permits_inspect(&t.keys, Some(&t.token));
        let views = self.views(&t.name, call, parse_permits).await?;
        let ours = views.iter().flatten().filter(|v| v.mine.is_some()).count();
        Ok(if ours >= t.quorum(self.n()) {
            Ok(())
        } else {
            Err(LostReason::Expired)
        })
    }

    /// The view of a semaphore or read-write lock `name`, changing nothing: each count the
    /// largest a server that answered reports (with several servers, an upper bound; on one,
    /// what it holds). `kind` empty when no server knows the name.
    ///
    /// # Errors
    /// As [`inspect`](Self::inspect); [`ErrorKind::WrongKind`](crate::ErrorKind::WrongKind)
    /// when the name is a lock, or a family other than `wanted` (`"semaphore"`, `"rwlock"`).
    pub async fn inspect_permits(&self, name: &[u8], wanted: &str) -> Result<PermitsView> {
        let all = self.inspect_permits_of_any_kind(name).await?;
        if !all.kind.is_empty() && all.kind != wanted {
            let shown = |k: &str| match k {
                "semaphore" => "a semaphore",
                _ => "a read-write lock",
            };
            return Err(Error::new(
                ErrorKind::WrongKind,
                format!(
                    "{} is held as {}, not as {}",
                    display_name(name),
                    shown(&all.kind),
                    shown(wanted)
                ),
            ));
        }
        Ok(all)
    }

    /// [`inspect_permits`](Self::inspect_permits) of whichever kind the servers say the name
    /// holds (`kind` empty when free), for [`LockManager::family_of`].
    pub async fn inspect_permits_of_any_kind(&self, name: &[u8]) -> Result<PermitsView> {
        let keys = LockKeys::new(&self.config.prefix, name);
        let call = ScriptCall::permits_inspect(&keys, None);
        let views = self.views(name, call, parse_permits).await?;
        let mut all = PermitsView::default();
        for v in views.iter().flatten() {
            if all.kind.is_empty() {
                all.kind.clone_from(&v.kind);
            }
            all.limit = all.limit.max(v.limit);
            all.held = all.held.max(v.held);
            all.holders = all.holders.max(v.holders);
            all.waiters = all.waiters.max(v.waiters);
        }
        Ok(all)
    }
}
