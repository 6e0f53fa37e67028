//! The coordination family's scripts as atomic steps: a semaphore and a read-write lock are one
//! protocol on the server (core/src/scripts/`permits*.lua`, core/src/kind.rs): a name has a
//! capacity, each lease a weight, and the leases' weights never sum past the capacity. A
//! semaphore's capacity is its limit and a lease's weight the permits it takes; a read-write
//! lock's capacity is more than all its readers, a reader weighs 1 and a writer the whole
//! capacity. The line, its order by arrival, places that expire, listening and the fencing
//! counter are the lock's ([`crate::scripts`]).
//!
//! - acquire (`permits_acquire_lean.lua`, `permits_acquire.lua`): a caller holding a lease
//!   renews it (re-entry: the later of its two ends, a new token); otherwise, when its weight
//!   fits beside the leases held, it takes its place by its arrival (when someone is in
//!   line), and the waiters ahead of it that fit are handed their leases first, in order, stopping at the first that does not fit (first come, first served: a
//!   newcomer never passes a waiter, also one that needs more than is free; a waiter that does
//!   not listen is passed over and kept), and the caller is granted if it still fits (its
//!   place, if any, given up); else it takes or refreshes its place by its arrival;
//! - extend (`permits_extend.lua`): a lease that has not ended gets a fresh TTL;
//! - release (`permits_release_lean.lua`, `permits_release.lua`): the caller's place leaves
//!   the line, its lease gives its weight back, and the waiters at the head that fit are
//!   handed their leases; the undo keeps the place.
//!
//! A hand-out takes one token from the counter at the first waiter that fits and gives it to
//! the first of them that listens, then takes the next: as for the lock, a walk past waiters
//! that do not listen still raises the counter.

use crate::scripts::Run;
pub use crate::world::Family;
use crate::world::{Client, Lease, Pubsub, Reply, Request};

/// Where a hand-out stopped.
#[derive(PartialEq, Eq)]
pub(crate) enum Stop {
    /// At the caller's own place.
    Caller,
    /// At a waiter whose weight does not fit.
    Blocked,
    /// At the end of the line.
    End,
}

impl Run<'_, '_> {
    /// Runs `c`'s acquire, extend, release or undo on a semaphore or read-write lock; the
    /// reply (none for an undo). A leave and a raise are every name's ([`crate::scripts`]).
    pub(crate) fn permits(&mut self, c: Client, request: Request) -> Option<Reply> {
        match request {
            Request::Acquire { arrival } => Some(self.permits_acquire(c, arrival)),
            Request::Extend { sent } => Some(match self.lease(c) {
                Some(i) => {
                    self.server.leases[i].expires = self.x.now + self.x.ttl;
                    Reply::Extended { sent }
                }
                None => Reply::NotHeld { taken: false },
            }),
            Request::Release => Some(self.permits_release(c, true)),
            Request::Undo => {
                self.permits_release(c, false);
                None
            }
            Request::Leave | Request::Raise { .. } => unreachable!("served for every name"),
        }
    }

    fn permits_acquire(&mut self, c: Client, arrival: u8) -> Reply {
        let (limit, weight) = self.x.family.weight(c);
        if self.lease(c).is_some() {
            // Re-entry by token: the lease renewed, a new fencing token.
            return Reply::Granted {
                fence: self.lease_to(c, false),
            };
        }
        if self.held() + weight <= limit {
            // With a line, the caller's place first, where its arrival puts it: a waiter
            // whose place expired gets its turn back.
            let lined = !self.server.line.is_empty();
            let fits = !lined || {
                self.take_place(c, arrival);
                self.hand_out(Some(c)) != Stop::Blocked && self.held() + weight <= limit
            };
            if fits {
                let fence = self.lease_to(c, true);
                if lined {
                    // Those behind it that fit beside it are handed theirs, as a release
                    // would hand them (a caller woken first, on a Redis 6.2 cluster, leaves
                    // room behind it that nobody told).
                    self.hand_out(None);
                }
                return Reply::Granted { fence };
            }
        }
        self.take_place(c, arrival);
        Reply::Refused {
            counter: self.server.counter,
        }
    }

    /// A holder's release (`leave`: its place leaves the line too), or an attempt's undo
    /// (the place kept): the lease gives its weight back, and the waiters at the head that
    /// fit are handed theirs (the caller too, after an undo, when it listens and is first).
    fn permits_release(&mut self, c: Client, leave: bool) -> Reply {
        if leave {
            self.server.line.retain(|p| p.client != c);
        }
        let reply = match self.lease(c) {
            Some(i) => {
                self.server.leases.remove(i);
                Reply::Released
            }
            None => Reply::NotHeld { taken: false },
        };
        self.hand_out(None);
        reply
    }

    /// Hands the freed weight to the waiters at the head of the line, in order, until one does
    /// not fit or `caller` is reached (`permits.lua`'s `hand_out`); a waiter the server does
    /// not see listen is passed over and told nothing (the counter is raised by a grant only),
    /// or on a Redis 6.2 cluster woken, the line stopping there.
    pub(crate) fn hand_out(&mut self, caller: Option<Client>) -> Stop {
        let mut at = 0;
        while let Some(p) = self.server.line.get(at).copied() {
            if Some(p.client) == caller {
                return Stop::Caller;
            }
            let (limit, weight) = self.x.family.weight(p.client);
            if self.held() + weight > limit {
                return Stop::Blocked;
            }
            if self.x.heard[p.client] {
                self.server.counter += 1;
                let f = self.server.counter;
                self.granted(p.client, f, true);
                self.put_lease(p.client);
                self.server.line.remove(at);
                self.served.handed.push((p.client, f));
            } else if self.x.pubsub != Pubsub::Exact {
                self.served.unheard = Some(p.client);
                return Stop::Blocked;
            } else {
                at += 1;
            }
        }
        Stop::End
    }

    /// A lease to `c` with a new token (`new`: not a re-entry); its place, if any, given up.
    fn lease_to(&mut self, c: Client, new: bool) -> u32 {
        self.server.counter += 1;
        let fence = self.server.counter;
        self.granted(c, fence, new);
        self.put_lease(c);
        self.server.line.retain(|p| p.client != c);
        fence
    }

    /// `c`'s lease ends a TTL from now, or later if it already did (`ZADD GT`).
    fn put_lease(&mut self, c: Client) {
        let expires = self.x.now + self.x.ttl;
        let leases = &mut self.server.leases;
        match leases.iter_mut().find(|l| l.client == c) {
            Some(l) => l.expires = l.expires.max(expires),
            None => {
                let at = leases.partition_point(|l| l.client < c);
                leases.insert(at, Lease { client: c, expires });
            }
        }
    }

    fn lease(&self, c: Client) -> Option<usize> {
        self.server.leases.iter().position(|l| l.client == c)
    }

    /// The weights of the leases held.
    fn held(&self) -> u8 {
        self.server
            .leases
            .iter()
            .map(|l| self.x.family.weight(l.client).1)
            .sum()
    }
}
