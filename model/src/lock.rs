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
//!     acquired again (re-entry by token: TTL reset, same fencing token); a free key goes to
//!     the first *listening* waiter in line, which may be the caller (a newcomer never passes
//!     a listening waiter; a place whose client no longer listens is passed over); a new
//!     grant increments the counter and takes it as its fencing token; a refusal takes or
//!     refreshes the caller's place (it lives `place_life` ticks);
//!   - extend: the caller's key gets a fresh TTL, else "not held";
//!   - release (`release.lua`): the caller's key is deleted and handed to the first
//!     listening waiter in line (a new grant: counter + 1), who is told by a message.
//! - A client's validity, on its own clock, counts from when it sent the attempt that was
//!   granted, or for a hand-off from its call's first attempt (the servers set the TTL later
//!   than both), minus the drift margin (`valid_until = from + ttl - margin`); a hand-off with
//!   no validity left that way is confirmed by one more attempt, as `acquire.rs` does.
//! - The timing assumptions (`Tick` waits for them): a client that is not paused leaves its
//!   critical section before its validity ends, and a waiter that is not paused retries
//!   before its place expires. A pause stops a client's clock: it may act on a validity that
//!   has passed (Kleppmann's counterexample), which the fencing store catches.

use stateright::{Model, Property};

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
}

impl Faults {
    pub const NONE: Faults = Faults {
        lost_replies: false,
        crashes: false,
        pauses: false,
        restarts: false,
    };
    /// Every fault the timing assumptions allow: lost replies and crashes.
    pub const ASSUMED: Faults = Faults {
        lost_replies: true,
        crashes: true,
        pauses: false,
        restarts: false,
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
    pub faults: Faults,
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
            faults,
        }
    }
}

/// The server's key of the name: its holder, when it expires, its fencing token.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub holder: Client,
    pub expires: u8,
    pub fence: u32,
}

/// A waiter's place in line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Place {
    pub client: Client,
    pub expires: u8,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Server {
    pub key: Option<Key>,
    /// The fencing counter.
    pub counter: u32,
    /// Places in order of arrival.
    pub line: Vec<Place>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Request {
    Acquire,
    /// Sent at the client's clock: the new validity counts from then.
    Extend {
        sent: u8,
    },
    Release,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reply {
    Granted { fence: u32 },
    Refused,
    Extended { sent: u8 },
    NotHeld,
    Released,
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
}

/// The fenced store: it accepts a write whose token is at least the largest it accepted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Store {
    pub max_fence: u32,
    /// A write was rejected (its token below one accepted before).
    pub rejected: bool,
}

/// What happened, for the properties.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct History {
    /// The fencing token of the latest new grant.
    pub last_grant: u32,
    /// A new grant's token was not larger than the one before.
    pub fence_regressed: bool,
    /// A grant went to a client while a listening client had an older place.
    pub passed_a_waiter: bool,
    pub handed_off: bool,
    pub restarted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub now: u8,
    pub server: Server,
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
    Restart,
}

impl State {
    fn clock(&self, c: Client) -> u8 {
        self.clients[c].paused_at.unwrap_or(self.now)
    }

    /// Clients in their critical section.
    pub fn in_cs(&self) -> Vec<Client> {
        (0..self.clients.len())
            .filter(|&c| matches!(self.clients[c].phase, Phase::Holding(h) if h.in_cs))
            .collect()
    }

    pub fn any_paused(&self) -> bool {
        self.clients.iter().any(|c| c.was_paused)
    }

    /// Whether `c` listens for a hand-off: it is trying to acquire and alive (a paused
    /// process's subscription stays open; a crashed one's is gone).
    pub(crate) fn listening(&self, c: Client) -> bool {
        matches!(self.clients[c].phase, Phase::Acquiring { .. })
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
        };
        vec![State {
            now: 0,
            server: Server::default(),
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
        for c in 0..self.clients {
            self.client_actions(s, c, actions);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut s = s.clone();
        match action {
            Action::Tick => s.now += 1,
            Action::Restart => {
                s.server = Server::default();
                s.history.restarted = true;
            }
            Action::Send(c, request) => self.send(&mut s, c, request),
            Action::Serve(c) => {
                let request = s.clients[c].request.take()?;
                crate::scripts::serve(self, &mut s, c, request);
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
                let fence = hold(&mut s, c)?.fence;
                hold(&mut s, c)?.wrote = true;
                if fence >= s.store.max_fence {
                    s.store.max_fence = fence;
                } else {
                    s.store.rejected = true;
                }
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
        }
        Some(s)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        crate::properties::lock()
    }

    fn within_boundary(&self, s: &State) -> bool {
        s.now <= self.max_time
    }
}

fn hold(s: &mut State, c: Client) -> Option<&mut Hold> {
    match &mut s.clients[c].phase {
        Phase::Holding(h) => Some(h),
        _ => None,
    }
}

impl LockModel {
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
                            .server
                            .line
                            .iter()
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
        if client.handoff.is_some() {
            actions.push(Action::DeliverHandoff(c));
        }
        let idle = client.request.is_none() && client.reply.is_none();
        match client.phase {
            Phase::Idle => actions.push(Action::Send(c, Request::Acquire)),
            Phase::Acquiring { .. } if idle => actions.push(Action::Send(c, Request::Acquire)),
            Phase::Holding(h) => {
                let clock = s.clock(c);
                if !h.in_cs && clock < h.valid_until && !h.wrote {
                    actions.push(Action::Enter(c));
                }
                if h.in_cs && !h.wrote {
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
            (Phase::Idle, Request::Acquire) => {
                client.phase = Phase::Acquiring {
                    started: clock,
                    attempt: clock,
                }
            }
            (Phase::Acquiring { started, .. }, Request::Acquire) => {
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
            (Phase::Holding(_), Reply::NotHeld) => s.clients[c].phase = Phase::Done,
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
