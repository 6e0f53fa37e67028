//! The server's scripts as atomic steps on one server (core/src/scripts: `acquire.lua` with
//! its lean path and `acquire_queued.lua`, `extend.lua`, `release.lua` with
//! `release_queued.lua`'s hand-off, its undo mode, `raise_fence.lua`; for a semaphore or a
//! read-write lock the `permits*.lua` scripts, in [`crate::permits`]), run at the server's
//! `now` after what is due has expired. The single-server model ([`crate::lock`]) and Redlock
//! ([`crate::redlock`]) both run them. The conformance test (`core/src/scripts/conformance.rs`,
//! from [`crate::trace`]) holds these steps to the real scripts on a real server.

use crate::lock::{Client, Key, Place, Reply, Request, Server};
use crate::permits::Family;

/// What a script runs with: the time, the lock's TTL and a place's life (ticks), which
/// clients listen on their wake-up channels, and what the name is (a lock, a semaphore, a
/// read-write lock).
pub struct Ctx<'a> {
    pub now: u8,
    pub ttl: u8,
    pub place_life: u8,
    pub listening: &'a [bool],
    pub family: &'a Family,
}

/// What a script did: its reply (none for an undo, whose reply nobody waits for), the
/// waiters it handed the lock (or leases) to with their tokens, the tokens of the grants it
/// made in order, and whether a grant passed a listening waiter ahead in line (which it must
/// never).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub reply: Option<Reply>,
    pub handed: Vec<(Client, u32)>,
    pub granted: Vec<u32>,
    pub passed_a_waiter: bool,
}

/// Runs `c`'s `request` on `server`.
pub fn serve(x: &Ctx, server: &mut Server, c: Client, request: Request) -> Served {
    expire(server, x.now);
    let mut run = Run {
        x,
        server,
        served: Served {
            reply: None,
            handed: Vec::new(),
            granted: Vec::new(),
            passed_a_waiter: false,
        },
    };
    if x.family.is_permits() {
        run.served.reply = run.permits(c, request);
        return run.served;
    }
    let reply = match request {
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
        Request::Raise { fence } => {
            run.server.counter = run.server.counter.max(fence);
            Some(Reply::Raised {
                counter: run.server.counter,
            })
        }
    };
    Served {
        reply,
        ..run.served
    }
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

impl Run<'_, '_> {
    fn acquire(&mut self, c: Client, arrival: u8) -> Reply {
        if self.server.key.is_some_and(|k| k.holder == c) {
            // Re-entry by token: the TTL reset, a new fencing token.
            let fence = self.grant(c, false, false);
            return Reply::Granted { fence };
        }
        let placed = self.take_place(c, arrival);
        if self.server.key.is_none() {
            match self.walk_line(Some(c)) {
                Some(w) if w != c => self.hand_over(w),
                _ => {
                    let fence = self.grant(c, true, false);
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
    fn release(&mut self, c: Client, leave: bool) -> Reply {
        if leave {
            self.server.line.retain(|p| p.client != c);
        }
        match self.server.key {
            Some(key) if key.holder == c => {
                self.server.key = None;
                if let Some(w) = self.walk_line(None) {
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

    /// The first client in line that listens, or is `caller`; places of clients that do not
    /// listen are passed over (and kept). As `hand_over` in `queue.lua`, the walk takes the
    /// waiters' fencing token from the counter at the first place that is not the caller's,
    /// before it knows whether anyone listens: a walk that finds nobody listening still
    /// raises the counter.
    fn walk_line(&mut self, caller: Option<Client>) -> Option<Client> {
        let mut counted = false;
        for w in self.server.line.iter().map(|p| p.client) {
            if Some(w) == caller {
                return Some(w);
            }
            if !counted {
                counted = true;
                self.server.counter += 1;
            }
            if self.x.listening[w] {
                return Some(w);
            }
        }
        None
    }

    /// A grant to `c`: the counter incremented (unless `counted`: a hand-over's walk did),
    /// the key set. `new`: not a re-entry, so it must not pass a listening waiter ahead of
    /// `c`'s place.
    fn grant(&mut self, c: Client, new: bool, counted: bool) -> u32 {
        if !counted {
            self.server.counter += 1;
        }
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
    fn hand_over(&mut self, w: Client) {
        let fence = self.grant(w, true, true);
        self.served.handed.push((w, fence));
    }
}
