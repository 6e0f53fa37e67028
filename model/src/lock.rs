//! The lock on one server: clients that acquire (waiting in line), hold, extend, write to a
//! fenced store and release; the server's scripts as atomic steps; time in ticks; replies
//! lost or delayed, clients that crash or pause, keys and places that expire, a server that
//! restarts empty.
//!
//! What each step stands for in the real thing (core/src/scripts):
//!
//! - `Serve(c)` runs one script for `c`'s request at the server's `now`, after expiring what
//!   is due (Redis expires keys lazily, at the access):
//!   - acquire (`acquire.lua`, its lean path when nobody is in line): the caller's own key is
//!     granted again (re-entry by token: TTL reset, a new fencing token); otherwise the
//!     caller takes or refreshes its place (by its call's arrival; it lives `place_life`
//!     ticks), and a free key goes to the first place in line whose client listens, or is
//!     the caller: to the caller, or handed over to that waiter, who is told by a message
//!     (a newcomer never passes a listening waiter; a place whose client does not listen
//!     is passed over and kept); a new grant increments the counter and takes it as its
//!     fencing token; a grant keeps a place its caller had (until the release) and takes
//!     none it had not (the lean path takes none);
//!   - extend: the caller's key gets a fresh TTL, else "not held" (gone, or another's);
//!   - release (`release.lua`): the caller's place leaves the line; its key is deleted and
//!     handed to the first listening waiter in line (a new grant: counter + 1), who is told
//!     by a message.
//! - A client's validity, on its own clock, counts from when it sent the attempt that was
//!   granted, or for a hand-off from its call's first attempt (the servers set the TTL later
//!   than both), minus the drift margin (`valid_until = from + ttl - margin`); a hand-off with
//!   no validity left that way is confirmed by one more attempt, as `acquire.rs` does.
//! - The timing assumptions (`Tick` waits for them): a client that is not paused leaves its
//!   critical section before its validity ends, and a waiter that is not paused retries
//!   before its place expires. A pause stops a client's clock: it may act on a validity that
//!   has passed (Kleppmann's counterexample), which the fencing store catches.

use stateright::{Model, Property};

use crate::many;
use crate::permits::Family;
use crate::scripts::{self, Ctx, Pubsub, Served};

/// A client's index.
pub type Client = usize;

/// Which faults the checker may inject.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Faults {
    /// A reply or a hand-off message is dropped.
    pub lost_replies: bool,
    /// A client stops for good (its key and place stay until they expire).
    pub crashes: bool,
    /// A client's clock stops, then runs again (a GC pause, a SIGSTOP).
    pub pauses: bool,
    /// The server restarts empty (no persistence): key, line and counter forgotten.
    pub restarts: bool,
    /// A waiter's call ends (its wait limit passed) while its process keeps listening on its
    /// wake-up channel (another call of the process waits): its place is given up by a
    /// request that may come late, and meanwhile a release may hand it the lock. As the core
    /// does with a caller's own token (`opts.token`, not re-entrant), the request leaves a key
    /// holding the token alone: the call does not know it holds it, and it may be another
    /// acquisition's with the same token (issue 36's open case; docs/SAFETY.md).
    pub gives_up: bool,
    /// The name's slot moves to another node of the cluster (once; with
    /// [`Pubsub::Broadcast`]): the wake-up subscriptions open then stay on the old node, where
    /// the new owner's messages still reach them and its count of listeners does not see them
    /// (Redis 6.2 moves no plain subscription with its slot). Nothing moves them back in the
    /// model, though the core subscribes again at the owner after the first wake-up that tells
    /// it: the scripts must be safe either way.
    pub moves: bool,
}

impl Faults {
    pub const NONE: Faults = Faults {
        lost_replies: false,
        crashes: false,
        pauses: false,
        restarts: false,
        gives_up: false,
        moves: false,
    };
    /// Every fault the timing assumptions allow: lost replies and crashes.
    pub const ASSUMED: Faults = Faults {
        lost_replies: true,
        crashes: true,
        pauses: false,
        restarts: false,
        gives_up: false,
        moves: false,
    };
}

/// The bounds of one check.
#[derive(Clone, Debug)]
pub struct LockModel {
    pub clients: usize,
    /// The lock's TTL, in ticks.
    pub ttl: u8,
    /// What a client subtracts from its validity for clock drift (ttl × factor + 2 ms).
    pub margin: u8,
    /// How long a waiter's place lives without a retry.
    pub place_life: u8,
    /// The last tick explored.
    pub max_time: u8,
    /// Extensions per hold.
    pub max_extends: u8,
    /// Grants explored (the fencing counter's bound): every attempt that re-enters after a
    /// lost reply takes a new token, so the counter bounds the runs as the ticks do.
    pub max_grants: u32,
    pub faults: Faults,
    /// A lock, a semaphore or a read-write lock.
    pub family: Family,
    /// A lock's names each client takes at once, as a bitmask (of two names at most): empty,
    /// every client takes name 0 alone.
    pub wants: Vec<u8>,
    /// How the server's messages reach waiters (a Redis 6.2 cluster's reach every node).
    pub pubsub: Pubsub,
}

impl LockModel {
    /// The bounds CI checks: `clients` clients, TTL 3, places living 2 ticks, 8 ticks.
    pub fn small(clients: usize, faults: Faults) -> LockModel {
        LockModel {
            clients,
            ttl: 3,
            margin: 1,
            place_life: 2,
            max_time: 8,
            max_extends: 1,
            max_grants: 4,
            faults,
            family: Family::Lock,
            wants: Vec::new(),
            pubsub: Pubsub::Exact,
        }
    }

    /// The names client `c` takes, as a bitmask.
    pub fn wants(&self, c: Client) -> u8 {
        self.wants.get(c).copied().unwrap_or(1)
    }

    /// How many names there are.
    pub fn names(&self) -> usize {
        let all = self.wants.iter().fold(1, |all, w| all | w);
        8 - all.leading_zeros() as usize
    }

    /// Whether `c` takes several names at once.
    pub fn many(&self, c: Client) -> bool {
        self.wants(c).count_ones() > 1
    }
}

/// The server's key of the name: its holder, when it expires, its fencing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub holder: Client,
    pub expires: u8,
    pub fence: u32,
}

/// A waiter's place in line, ordered by its arrival (the tick its call started, on its own
/// clock: the same on every server), then by client (the real queue breaks ties by token).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Place {
    pub client: Client,
    pub arrival: u8,
    pub expires: u8,
}

/// A semaphore's or read-write lock's lease: its holder, and when it ends (its weight is
/// the holder's, [`Family::weight`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Lease {
    pub client: Client,
    pub expires: u8,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Server {
    /// A lock's key.
    pub key: Option<Key>,
    /// A semaphore's or read-write lock's leases, by client.
    pub leases: Vec<Lease>,
    /// The fencing counter.
    pub counter: u32,
    /// Places in order of arrival, those passed over and the holder's included (a release
    /// removes its caller's). A place whose time has come is gone (the scripts sweep before
    /// anything that reads the line's order).
    pub line: Vec<Place>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Request {
    /// With the call's arrival: its place in line if refused.
    Acquire {
        arrival: u8,
    },
    /// Sent at the client's clock: the new validity counts from then.
    Extend {
        sent: u8,
    },
    Release,
    /// A failed Redlock attempt's undo (`release.lua` keeping the place): no reply awaited.
    Undo,
    /// An ended call's place given up, and nothing else (`release.lua`'s mode 2).
    Leave,
    /// Redlock's fencing write-back (`raise_fence.lua`).
    Raise {
        fence: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reply {
    Granted {
        fence: u32,
    },
    /// With the counter's value, which Redlock's attempt takes the largest of.
    Refused {
        counter: u32,
    },
    Extended {
        sent: u8,
    },
    /// Extend or release found the key gone, or (`taken`) held by another.
    NotHeld {
        taken: bool,
    },
    Released,
    Raised {
        counter: u32,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    /// Trying to acquire since `started` (its clock at the call's first attempt); `attempt`:
    /// its clock when it sent its latest attempt.
    Acquiring {
        started: u8,
        attempt: u8,
    },
    Holding(Hold),
    Releasing,
    Done,
    Crashed,
    /// Its call ended while waiting; its process still listens (`Faults::gives_up`).
    Ended,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Hold {
    pub fence: u32,
    pub valid_until: u8,
    pub in_cs: bool,
    pub wrote: bool,
    pub extends: u8,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientState {
    pub phase: Phase,
    /// A request on its way to the server (it may be served late).
    pub request: Option<Request>,
    /// The server's reply on its way back.
    pub reply: Option<Reply>,
    /// A hand-off message on its way (its fencing token).
    pub handoff: Option<u32>,
    /// Its clock stopped at this tick.
    pub paused_at: Option<u8>,
    pub was_paused: bool,
    /// Its wake-up subscription is on a node that no longer owns the name's slot
    /// ([`Faults::moves`]).
    pub elsewhere: bool,
}

/// The fenced store: it accepts a write whose token is at least the largest it accepted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Store {
    pub max_fence: u32,
    /// A write was rejected (its token below one accepted before).
    pub rejected: bool,
}

impl Store {
    /// A write with token `fence`: accepted when at least the largest accepted, else
    /// rejected.
    pub fn write(&mut self, fence: u32) {
        if fence >= self.max_fence {
            self.max_fence = fence;
        } else {
            self.rejected = true;
        }
    }
}

/// What happened, for the properties.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct History {
    /// The fencing token of the latest new grant, per name.
    pub last_grant: [u32; 2],
    /// A new grant's token was not larger than the one before.
    pub fence_regressed: bool,
    /// A grant went to a client while a listening client had an older place.
    pub passed_a_waiter: bool,
    pub handed_off: bool,
    /// A waiter of several names was woken.
    pub woke: bool,
    /// A script left a listening waiter untold that the name could go to
    /// ([`scripts::left_untold`]).
    pub lost_wakeup: bool,
    /// A script refreshed or moved a place in line other than its caller's.
    pub moved_a_place: bool,
    pub restarted: bool,
    /// The name's slot moved ([`Faults::moves`]).
    pub slot_moved: bool,
    /// A script woke a waiter it did not see listen ([`Pubsub::Broadcast`]).
    pub unheard_woken: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub now: u8,
    /// The server's keys, line and counter of each name.
    pub names: Vec<Server>,
    pub clients: Vec<ClientState>,
    pub store: Store,
    pub history: History,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Tick,
    Send(Client, Request),
    Serve(Client),
    Deliver(Client),
    DeliverHandoff(Client),
    Lose(Client),
    Enter(Client),
    Write(Client),
    Leave(Client),
    Crash(Client),
    Pause(Client),
    Resume(Client),
    GiveUp(Client),
    Restart,
    MoveSlot,
}

impl State {
    fn clock(&self, c: Client) -> u8 {
        self.clients[c].paused_at.unwrap_or(self.now)
    }

    /// The permits (or, with a lock, holders) in critical sections: each client in one
    /// counts its weight.
    pub fn weight_in_cs(&self, family: &Family) -> u8 {
        self.in_cs().into_iter().map(|c| family.weight(c).1).sum()
    }

    /// Whether no two clients in their critical sections share a name.
    pub fn exclusive(&self, m: &LockModel) -> bool {
        let mut taken = 0;
        self.in_cs().into_iter().all(|c| {
            let mine = m.wants(c);
            let free = taken & mine == 0;
            taken |= mine;
            free
        })
    }

    /// The names whose key `c` holds (and has not expired), as a bitmask.
    pub fn held_names(&self, c: Client) -> u8 {
        let held = |n: &Server| n.key.is_some_and(|k| k.holder == c && k.expires > self.now);
        (0..self.names.len())
            .filter(|&i| held(&self.names[i]))
            .fold(0, |mask, i| mask | 1 << i)
    }

    /// Clients in their critical section.
    pub fn in_cs(&self) -> Vec<Client> {
        (0..self.clients.len())
            .filter(|&c| matches!(self.clients[c].phase, Phase::Holding(h) if h.in_cs))
            .collect()
    }

    /// Whether a crashed client's place (not yet ended) is ahead of a listening waiter's in
    /// some line.
    pub fn dead_place_ahead(&self) -> bool {
        let live = |p: &&Place| p.expires > self.now;
        self.names.iter().any(|n| {
            let mut places = n.line.iter().filter(live).map(|p| p.client);
            places
                .position(|c| matches!(self.clients[c].phase, Phase::Crashed))
                .is_some_and(|_| places.any(|w| self.listening(w)))
        })
    }

    pub fn any_paused(&self) -> bool {
        self.clients.iter().any(|c| c.was_paused)
    }

    /// Whether `c` listens for a hand-off: it is trying to acquire and alive (a paused
    /// process's subscription stays open; a crashed one's is gone).
    pub(crate) fn listening(&self, c: Client) -> bool {
        matches!(
            self.clients[c].phase,
            Phase::Acquiring { .. } | Phase::Ended
        )
    }

    /// The client whose call ended, holding name `i`'s key (a hand-off that came too late).
    pub fn ended_holder(&self, i: usize) -> Option<Key> {
        let key = self.names[i].key.filter(|k| k.expires > self.now)?;
        (self.clients[key.holder].phase == Phase::Ended).then_some(key)
    }
}

impl Model for LockModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let client = ClientState {
            phase: Phase::Idle,
            request: None,
            reply: None,
            handoff: None,
            paused_at: None,
            was_paused: false,
            elsewhere: false,
        };
        vec![State {
            now: 0,
            names: vec![Server::default(); self.names()],
            clients: vec![client; self.clients],
            store: Store::default(),
            history: History::default(),
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        if self.may_tick(s) {
            actions.push(Action::Tick);
        }
        if self.faults.restarts && !s.history.restarted {
            actions.push(Action::Restart);
        }
        if self.faults.moves && !s.history.slot_moved {
            actions.push(Action::MoveSlot);
        }
        for c in 0..self.clients {
            self.client_actions(s, c, actions);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut s = s.clone();
        match action {
            Action::Tick => s.now += 1,
            Action::Restart => {
                s.names.fill(Server::default());
                s.history.restarted = true;
            }
            Action::MoveSlot => {
                for c in 0..s.clients.len() {
                    s.clients[c].elsewhere |= s.listening(c);
                }
                s.history.slot_moved = true;
            }
            Action::Send(c, request) => self.send(&mut s, c, request),
            Action::Serve(c) => {
                let request = s.clients[c].request.take()?;
                self.serve(&mut s, c, request);
            }
            Action::Deliver(c) => {
                let reply = s.clients[c].reply.take()?;
                self.deliver(&mut s, c, reply);
            }
            Action::DeliverHandoff(c) => {
                let fence = s.clients[c].handoff.take()?;
                if let Phase::Acquiring { started, .. } = s.clients[c].phase {
                    // A hand-off's validity counts from the call's first attempt.
                    self.granted(&mut s, c, fence, started);
                }
            }
            Action::Lose(c) => {
                let client = &mut s.clients[c];
                if client.reply.take().is_none() {
                    client.handoff = None;
                }
            }
            Action::Enter(c) => hold(&mut s, c)?.in_cs = true,
            Action::Write(c) => {
                let h = hold(&mut s, c)?;
                h.wrote = true;
                let fence = h.fence;
                s.store.write(fence);
            }
            Action::Leave(c) => hold(&mut s, c)?.in_cs = false,
            Action::Crash(c) => {
                let client = &mut s.clients[c];
                client.phase = Phase::Crashed;
                client.reply = None;
                client.handoff = None;
            }
            Action::Pause(c) => {
                s.clients[c].paused_at = Some(s.now);
                s.clients[c].was_paused = true;
            }
            Action::Resume(c) => s.clients[c].paused_at = None,
            Action::GiveUp(c) => {
                s.clients[c].phase = Phase::Ended;
                s.clients[c].request = Some(Request::Leave);
            }
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        match self.family {
            Family::Lock if self.wants.is_empty() => crate::properties::lock(),
            Family::Lock => crate::properties::many(),
            Family::Permits { .. } => crate::properties::permits(),
        }
    }

    fn within_boundary(&self, s: &State) -> bool {
        s.now <= self.max_time && s.names.iter().all(|n| n.counter <= self.max_grants)
    }
}

fn hold(s: &mut State, c: Client) -> Option<&mut Hold> {
    match &mut s.clients[c].phase {
        Phase::Holding(h) => Some(h),
        _ => None,
    }
}

impl LockModel {
    /// Runs `c`'s `request` on the server, and delivers what it sends: the reply (a client
    /// that crashed never reads it), a hand-off message; what happened goes in the history.
    ///
    /// Returns what the script did on each name (by index), and its reply.
    pub fn serve(
        &self,
        s: &mut State,
        c: Client,
        request: Request,
    ) -> (Vec<Served>, Option<Reply>) {
        let (listening, heard, many) = self.who_listens(s);
        let x = self.ctx(s, (&listening, &heard), &many);
        let want = self.wants(c);
        let before: Vec<_> = s.names.iter().map(|n| scripts::untold(&x, n)).collect();
        let had: Vec<_> = s
            .names
            .iter()
            .map(|n| scripts::holds(n, c, x.now))
            .collect();
        let lines: Vec<_> = s.names.iter().map(|n| n.line.clone()).collect();
        let (reply, served) = if many[c] {
            many::serve(&x, &mut s.names, want, c, request)
        } else {
            let i = want.trailing_zeros() as usize;
            let mut served = vec![Served::default(); s.names.len()];
            served[i] = scripts::serve(&x, &mut s.names[i], c, request);
            (served[i].reply, served)
        };
        if !matches!(s.clients[c].phase, Phase::Crashed) {
            s.clients[c].reply = reply;
        }
        for (i, served) in served.iter().enumerate() {
            let freed = had[i] && !scripts::holds(&s.names[i], c, x.now);
            let after = scripts::untold(&x, &s.names[i]);
            s.history.lost_wakeup |= scripts::left_untold(before[i], after, c, freed);
            s.history.moved_a_place |= scripts::moved_a_place(&lines[i], &s.names[i], c);
            for &(w, fence) in &served.handed {
                s.clients[w].handoff = Some(fence);
                s.history.handed_off = true;
            }
            s.history.woke |= served.woken.is_some();
            s.history.unheard_woken |= served.unheard.is_some();
            let last = &mut s.history.last_grant[i];
            for &fence in &served.granted {
                s.history.fence_regressed |= fence <= *last;
                *last = (*last).max(fence);
            }
            s.history.passed_a_waiter |= served.passed_a_waiter;
        }
        (served, reply)
    }

    /// Which clients listen, which of them the server sees listen (not those whose
    /// subscription stayed on another node), and which wait for several names.
    fn who_listens(&self, s: &State) -> (Vec<bool>, Vec<bool>, Vec<bool>) {
        let listening: Vec<bool> = (0..s.clients.len()).map(|w| s.listening(w)).collect();
        let heard = (0..s.clients.len())
            .map(|w| listening[w] && !s.clients[w].elsewhere)
            .collect();
        let many = (0..s.clients.len()).map(|w| self.many(w)).collect();
        (listening, heard, many)
    }

    fn ctx<'a>(
        &'a self,
        s: &State,
        (listening, heard): (&'a [bool], &'a [bool]),
        many: &'a [bool],
    ) -> Ctx<'a> {
        Ctx {
            now: s.now,
            ttl: self.ttl,
            place_life: self.place_life,
            listening,
            heard,
            many,
            family: &self.family,
            pubsub: self.pubsub,
        }
    }

    /// Whether a lock's line goes on past the places of crashed clients as if they were not
    /// there (the walk passes a place whose client does not listen). A semaphore's waiter
    /// that does not fit beside the leases held stops the line, listening or not (first come,
    /// first served), until its place ends: a place's life after its client's last request,
    /// since no script refreshes a place but its caller's ([`History::moved_a_place`]). So
    /// does any waiter the server does not see listen on a Redis 6.2 cluster, where it may
    /// listen on another node ([`Pubsub::Broadcast`]).
    pub fn passes_the_dead(&self, s: &State) -> bool {
        let dead = |p: &Place| s.clients[p.client].phase == Phase::Crashed;
        let stops = self.family.is_permits() || self.pubsub != Pubsub::Exact;
        if stops || !s.names.iter().flat_map(|n| &n.line).any(dead) {
            return true;
        }
        let (listening, heard, many) = self.who_listens(s);
        let x = self.ctx(s, (&listening, &heard), &many);
        s.names.iter().all(|n| {
            let mut alive = n.clone();
            alive
                .line
                .retain(|p| s.clients[p.client].phase != Phase::Crashed);
            scripts::untold(&x, n) == scripts::untold(&x, &alive)
        })
    }

    /// Time passes unless that would break a timing assumption: a client that is not paused
    /// leaves its critical section before its validity ends, and a waiter that is not paused
    /// retries before its place expires.
    fn may_tick(&self, s: &State) -> bool {
        if s.now >= self.max_time {
            return false;
        }
        let next = s.now + 1;
        s.clients.iter().enumerate().all(|(c, client)| {
            if client.paused_at.is_some() {
                return true;
            }
            match client.phase {
                Phase::Holding(h) => !(h.in_cs && next >= h.valid_until),
                Phase::Acquiring { .. } => {
                    client.request.is_some()
                        || !s
                            .names
                            .iter()
                            .flat_map(|n| &n.line)
                            .any(|p| p.client == c && p.expires <= next)
                }
                _ => true,
            }
        })
    }

    fn client_actions(&self, s: &State, c: Client, actions: &mut Vec<Action>) {
        let client = &s.clients[c];
        if client.request.is_some() {
            actions.push(Action::Serve(c));
        }
        if self.faults.lost_replies && (client.reply.is_some() || client.handoff.is_some()) {
            actions.push(Action::Lose(c));
        }
        let alive = !matches!(client.phase, Phase::Done | Phase::Crashed);
        if self.faults.crashes && alive {
            actions.push(Action::Crash(c));
        }
        if self.faults.pauses && alive && !client.was_paused {
            actions.push(Action::Pause(c));
        }
        if client.paused_at.is_some() {
            // A paused process does nothing until it wakes up; then it carries on with what
            // it was doing (a write in its critical section) on a validity that has passed.
            actions.push(Action::Resume(c));
            return;
        }
        if client.reply.is_some() {
            actions.push(Action::Deliver(c));
        }
        let waiting = matches!(client.phase, Phase::Acquiring { .. });
        if self.faults.gives_up && waiting && client.request.is_none() {
            actions.push(Action::GiveUp(c));
        }
        if client.handoff.is_some() {
            actions.push(Action::DeliverHandoff(c));
        }
        let idle = client.request.is_none() && client.reply.is_none();
        match client.phase {
            Phase::Idle => actions.push(Action::Send(
                c,
                Request::Acquire {
                    arrival: s.clock(c),
                },
            )),
            // A waiter retries at most once a tick (the core waits between attempts): each
            // attempt that re-enters takes a new fencing token, so retries without end in
            // one tick would make the states without end.
            Phase::Acquiring { started, attempt } if idle && attempt < s.clock(c) => {
                actions.push(Action::Send(c, Request::Acquire { arrival: started }))
            }
            Phase::Holding(h) => {
                let clock = s.clock(c);
                if !h.in_cs && clock < h.valid_until && !h.wrote {
                    actions.push(Action::Enter(c));
                }
                // The fenced store is the lock's on one name: a semaphore's holders write side
                // by side, a lock's on several names to each name's store.
                if h.in_cs && !h.wrote && self.family == Family::Lock && self.wants.is_empty() {
                    actions.push(Action::Write(c));
                }
                if h.in_cs {
                    actions.push(Action::Leave(c));
                }
                if idle && h.extends < self.max_extends {
                    actions.push(Action::Send(c, Request::Extend { sent: clock }));
                }
                if idle && !h.in_cs {
                    actions.push(Action::Send(c, Request::Release));
                }
            }
            _ => {}
        }
    }

    fn send(&self, s: &mut State, c: Client, request: Request) {
        let clock = s.clock(c);
        let client = &mut s.clients[c];
        match (client.phase, request) {
            (Phase::Idle, Request::Acquire { .. }) => {
                client.phase = Phase::Acquiring {
                    started: clock,
                    attempt: clock,
                }
            }
            (Phase::Acquiring { started, .. }, Request::Acquire { .. }) => {
                client.phase = Phase::Acquiring {
                    started,
                    attempt: clock,
                }
            }
            (Phase::Holding(mut h), Request::Extend { .. }) => {
                h.extends += 1;
                client.phase = Phase::Holding(h);
            }
            (Phase::Holding(_), Request::Release) => client.phase = Phase::Releasing,
            _ => {}
        }
        client.request = Some(request);
    }

    fn deliver(&self, s: &mut State, c: Client, reply: Reply) {
        let phase = s.clients[c].phase;
        match (phase, reply) {
            // An attempt's validity counts from when it was sent.
            (Phase::Acquiring { attempt, .. }, Reply::Granted { fence }) => {
                self.granted(s, c, fence, attempt)
            }
            (Phase::Holding(mut h), Reply::Extended { sent }) => {
                h.valid_until = h.valid_until.max(self.valid_from(sent));
                s.clients[c].phase = Phase::Holding(h);
            }
            // The extension found the key gone or taken: the lock is lost.
            (Phase::Holding(_), Reply::NotHeld { .. }) => s.clients[c].phase = Phase::Done,
            (Phase::Releasing, _) => s.clients[c].phase = Phase::Done,
            _ => {}
        }
    }

    /// The lock granted to `c`, its validity counted from `from` (the attempt's sending, or
    /// for a hand-off the call's first attempt): held while validity is left; with none left,
    /// the client stays in its call and confirms with one more attempt (re-entry).
    fn granted(&self, s: &mut State, c: Client, fence: u32, from: u8) {
        let valid_until = self.valid_from(from);
        if valid_until > s.clock(c) {
            s.clients[c].phase = Phase::Holding(Hold {
                fence,
                valid_until,
                in_cs: false,
                wrote: false,
                extends: 0,
            });
        }
    }

    fn valid_from(&self, start: u8) -> u8 {
        start + self.ttl - self.margin
    }
}
