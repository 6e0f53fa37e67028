//! The server's scripts as atomic steps on one server (core/src/scripts: `acquire.lua` with
//! its lean path and `acquire_queued.lua`, `extend.lua`, `release.lua` with
//! `release_queued.lua`'s hand-off, its undo mode, `raise_fence.lua`; for a semaphore or a
//! read-write lock the `permits*.lua` scripts, in [`crate::permits`]), run at the server's
//! `now` after what is due has expired. The single-server model ([`crate::lock`]) and Redlock
//! ([`crate::redlock`]) both run them. The conformance test (`core/src/scripts/conformance.rs`,
//! from [`crate::trace`]) holds these steps to the real scripts on a real server.

use crate::world::{Client, Family, Key, Place, Reply, Request, Server};
pub use crate::world::{Lean, Pubsub};

/// What a script runs with: the time, the lock's TTL and a place's life (ticks), which
/// clients listen on their wake-up channels and which of those the server sees listen (its
/// count of a channel's subscribers: `heard`), which wait for several names at once (their
/// places say so: a release wakes them rather than handing them one name), what the name is
/// (a lock, a semaphore, a read-write lock), and how the server's messages reach waiters.
pub struct Ctx<'a> {
    pub now: u8,
    pub ttl: u8,
    pub place_life: u8,
    pub listening: &'a [bool],
    pub heard: &'a [bool],
    pub many: &'a [bool],
    pub family: &'a Family,
    pub pubsub: Pubsub,
    pub lean: Lean,
}

/// What a script did on a name: its reply (none for an undo, whose reply nobody waits for),
/// the waiters it told the lock (or leases) were handed to them with their tokens, the waiter
/// of several names it woke instead, the waiter it woke without seeing it listen (a Redis 6.2
/// cluster's), the tokens of the grants it made in order, and whether a grant passed a
/// listening waiter ahead in line (which it must never).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Served {
    pub reply: Option<Reply>,
    pub handed: Vec<(Client, u32)>,
    pub woken: Option<Client>,
    pub unheard: Option<Client>,
    pub granted: Vec<u32>,
    pub passed_a_waiter: bool,
}

/// Where a walk along the line stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Walk {
    /// At the caller's own place.
    Caller,
    /// At a listening waiter of this name alone, who is to be handed the lock.
    Handed(Client),
    /// At a listening waiter of several names, woken to come for them all (the name stays
    /// free for it: nobody behind passes it).
    Woke,
    /// Nobody in line listens.
    Nobody,
}

/// Runs `c`'s `request` on `server`.
pub fn serve(x: &Ctx, server: &mut Server, c: Client, request: Request) -> Served {
    expire(server, x.now);
    let mut run = Run::new(x, server);
    let reply = match request {
        // The same for every kind of name: a place given up, the counter raised.
        Request::Leave => {
            run.server.line.retain(|p| p.client != c);
            Some(Reply::NotHeld { taken: false })
        }
        Request::Raise { fence } => {
            run.server.counter = run.server.counter.max(fence);
            Some(Reply::Raised {
                counter: run.server.counter,
            })
        }
        _ if x.family.is_permits() => run.permits(c, request),
        Request::Acquire { arrival } => Some(run.acquire(c, arrival)),
        Request::Extend { sent } => Some(match &mut run.server.key {
            Some(key) if key.holder == c => {
                key.expires = x.now + x.ttl;
                Reply::Extended { sent }
            }
            key => Reply::NotHeld {
                taken: key.is_some(),
            },
        }),
        Request::Release => Some(run.release(c, true)),
        Request::Undo => {
            run.release(c, false);
            None
        }
    };
    Served {
        reply,
        ..run.served
    }
}

/// The listening waiter of a single name whom the name could go to now and who has not been
/// told: the first listening waiter in line while the name's key is free (a lock), or the
/// first that fits beside the leases held (a semaphore, a read-write lock), after what is due
/// has expired. A waiter of several names is woken for all of them, never handed one, so it
/// is not counted here. Nobody in a name whose line cannot move.
pub fn untold(x: &Ctx, server: &Server) -> Option<Client> {
    let mut server = server.clone();
    expire(&mut server, x.now);
    let mut run = Run::new(x, &mut server);
    if x.family.is_permits() {
        run.hand_out(None);
        return run.served.handed.first().map(|&(w, _)| w);
    }
    match run.server.key {
        None => match run.walk_line(None) {
            Walk::Handed(w) => Some(w),
            _ => None,
        },
        Some(_) => None,
    }
}

/// Whether a script on a name left a waiter untold that it owed a word: after it ran, the
/// name could go to a listening waiter who was not told (`after`), and the script made that
/// room itself (nobody could go before it ran, `before`, or it freed the caller's key or
/// lease, `freed`), or that waiter was its caller (refused while the name could be its). A
/// name that fell free by expiry is not a script's to tell: its waiters find it at their next
/// attempt, before their places expire.
pub fn left_untold(
    before: Option<Client>,
    after: Option<Client>,
    caller: Client,
    freed: bool,
) -> bool {
    after.is_some_and(|w| w == caller || before.is_none() || freed)
}

/// Whether a script run by `caller` refreshed or moved a place in `line` (the line before it
/// ran) other than the caller's: every other place must end when it did, or be gone.
pub fn moved_a_place(line: &[Place], server: &Server, caller: Client) -> bool {
    line.iter().filter(|p| p.client != caller).any(|p| {
        let now = server.line.iter().find(|q| q.client == p.client);
        now.is_some_and(|q| q != p)
    })
}

/// Whether `c` holds the name's key or a lease of it (that has not ended by `now`).
pub fn holds(server: &Server, c: Client, now: u8) -> bool {
    server.key.is_some_and(|k| k.holder == c && k.expires > now)
        || server
            .leases
            .iter()
            .any(|l| l.client == c && l.expires > now)
}

/// Redis expires a key, and a lease ends and a place is forgotten, once its time has come.
pub(crate) fn expire(server: &mut Server, now: u8) {
    if server.key.is_some_and(|k| k.expires <= now) {
        server.key = None;
    }
    server.leases.retain(|l| l.expires > now);
    server.line.retain(|p| p.expires > now);
}

/// One script's run: what it runs with, on, and what it did so far.
pub(crate) struct Run<'a, 'b> {
    pub(crate) x: &'a Ctx<'b>,
    pub(crate) server: &'a mut Server,
    pub(crate) served: Served,
}

impl<'a, 'b> Run<'a, 'b> {
    pub(crate) fn new(x: &'a Ctx<'b>, server: &'a mut Server) -> Run<'a, 'b> {
        Run {
            x,
            server,
            served: Served::default(),
        }
    }
}

impl Run<'_, '_> {
    fn acquire(&mut self, c: Client, arrival: u8) -> Reply {
        if self.server.key.is_some_and(|k| k.holder == c) {
            // Re-entry by token: the TTL reset, a new fencing token.
            let fence = self.grant(c, false);
            return Reply::Granted { fence };
        }
        if self.x.lean == Lean::KeyOnly && self.server.key.is_none() {
            // The key alone says nothing of a line whose holder's key expired under it.
            let fence = self.grant(c, true);
            return Reply::Granted { fence };
        }
        let placed = self.take_place(c, arrival);
        if self.server.key.is_none() {
            match self.walk_line(Some(c)) {
                Walk::Handed(w) => self.hand_over(w),
                Walk::Woke => {}
                Walk::Caller | Walk::Nobody => {
                    let fence = self.grant(c, true);
                    // A grant keeps a place the caller had, and takes none it had not.
                    if !placed {
                        self.server.line.retain(|p| p.client != c);
                    }
                    return Reply::Granted { fence };
                }
            }
        }
        Reply::Refused {
            counter: self.server.counter,
        }
    }

    /// `release.lua`: with `leave` the caller's place leaves the line (a holder's release),
    /// without it stays (a failed attempt's undo); the caller's key is deleted and handed to
    /// the first listening waiter in line, who may be the caller itself after an undo.
    pub(crate) fn release(&mut self, c: Client, leave: bool) -> Reply {
        if leave {
            self.server.line.retain(|p| p.client != c);
        }
        match self.server.key {
            Some(key) if key.holder == c => {
                self.server.key = None;
                if let Walk::Handed(w) = self.walk_line(None) {
                    self.hand_over(w);
                }
                Reply::Released
            }
            key => Reply::NotHeld {
                taken: key.is_some(),
            },
        }
    }

    /// Takes or refreshes `c`'s place (a new one goes where its arrival puts it); returns
    /// whether it had one.
    pub(crate) fn take_place(&mut self, c: Client, arrival: u8) -> bool {
        let expires = self.x.now + self.x.place_life;
        let line = &mut self.server.line;
        if let Some(place) = line.iter_mut().find(|p| p.client == c) {
            place.expires = expires;
            return true;
        }
        let at = line
            .iter()
            .position(|p| (p.arrival, p.client) > (arrival, c))
            .unwrap_or(line.len());
        let place = Place {
            client: c,
            arrival,
            expires,
        };
        line.insert(at, place);
        false
    }

    /// Walks the line to the first client the server sees listen, or is `caller`; places of
    /// clients that do not listen are passed over (and kept), and told nothing. As
    /// `hand_over` in `queue.lua`, the walk asks whether a waiter listens before anything is
    /// sent to it, and the counter is raised only by the grant that follows
    /// ([`Run::hand_over`]). A listening waiter of several names is woken (and the walk stops
    /// there); on a Redis 6.2 cluster so is the first waiter the server does not see listen
    /// (it may, on another node).
    pub(crate) fn walk_line(&mut self, caller: Option<Client>) -> Walk {
        if self.x.pubsub == Pubsub::BroadcastBefore51 {
            return self.walk_line_before51(caller);
        }
        for w in self.server.line.iter().map(|p| p.client) {
            if Some(w) == caller {
                return Walk::Caller;
            }
            if self.x.heard[w] && self.x.many[w] {
                self.served.woken = Some(w);
                return Walk::Woke;
            }
            if self.x.heard[w] {
                return Walk::Handed(w);
            }
            if self.x.pubsub == Pubsub::Broadcast {
                self.served.unheard = Some(w);
                return Walk::Woke;
            }
        }
        Walk::Nobody
    }

    /// The walk before issue 51 on a Redis 6.2 cluster: "handed to you" published to each
    /// waiter of this name alone in turn, at the counter the walk took, and the lock given to
    /// the first whose publish the server counted; a waiter subscribed on another node heard
    /// it though the count said nobody, and took the lock the script went on to give another.
    fn walk_line_before51(&mut self, caller: Option<Client>) -> Walk {
        for w in self.server.line.iter().map(|p| p.client) {
            if Some(w) == caller {
                return Walk::Caller;
            }
            if self.x.many[w] {
                if self.x.heard[w] {
                    self.served.woken = Some(w);
                    return Walk::Woke;
                }
                continue;
            }
            if self.x.heard[w] {
                return Walk::Handed(w);
            }
            if self.x.listening[w] {
                let fence = self.server.counter + 1;
                self.served.handed.push((w, fence));
            }
        }
        Walk::Nobody
    }

    /// A grant to `c`: the counter incremented, the key set. `new`: not a re-entry, so it
    /// must not pass a listening waiter ahead of `c`'s place.
    pub(crate) fn grant(&mut self, c: Client, new: bool) -> u32 {
        self.server.counter += 1;
        let fence = self.server.counter;
        self.server.key = Some(Key {
            holder: c,
            expires: self.x.now + self.x.ttl,
            fence,
        });
        self.granted(c, fence, new);
        fence
    }

    /// Notes a grant of `fence` to `c` (`new`: not a re-entry, so it must not pass a
    /// listening waiter ahead of `c`'s place, or anywhere in line when `c` has none).
    pub(crate) fn granted(&mut self, c: Client, fence: u32, new: bool) {
        let mut ahead = self.server.line.iter().take_while(|p| p.client != c);
        if new && ahead.any(|p| self.x.listening[p.client]) {
            self.served.passed_a_waiter = true;
        }
        self.served.granted.push(fence);
    }

    /// The key to waiter `w`, told by a message.
    pub(crate) fn hand_over(&mut self, w: Client) {
        let fence = self.grant(w, true);
        self.served.handed.push((w, fence));
    }
}
