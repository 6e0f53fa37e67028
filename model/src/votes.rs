//! Redlock's bounds and state ([`RedlockModel`], [`State`]): each client's votes, stage and
//! phase, and what happened. A leaf beside [`crate::world`]: the Redlock model
//! ([`crate::redlock`]) moves it and the properties ([`crate::properties`]) read it.

use crate::world::{Client, Family, Faults, Hold, Reply, Request, Server, Store};

#[derive(Clone, Debug)]
pub struct RedlockModel {
    pub clients: usize,
    pub servers: usize,
    pub ttl: u8,
    pub margin: u8,
    pub place_life: u8,
    pub max_time: u8,
    /// Grants explored on any one server.
    pub max_grants: u32,
    /// Faults injected in one run at most (replies lost, requests delayed, hand-off messages
    /// lost, crashes): the bound that keeps three servers' interleavings checkable.
    pub max_faults: u8,
    pub faults: Faults,
    /// What the name is: a lock, a semaphore, a read-write lock.
    pub family: Family,
    /// How many servers must grant (and hold the token): a majority for a lock
    /// ([`RedlockModel::small`]), the core's quorum of the kind for the family
    /// ([`RedlockModel::family`]); a test lowers it to show what a smaller one breaks.
    pub quorum: usize,
}

impl RedlockModel {
    /// The bounds CI checks: `clients` clients on three servers, TTL 3, places living 2
    /// ticks, 4 ticks (the tests cut time and faults further).
    pub fn small(clients: usize, faults: Faults) -> RedlockModel {
        RedlockModel {
            clients,
            servers: 3,
            ttl: 3,
            margin: 1,
            place_life: 2,
            max_time: 4,
            max_grants: 3,
            max_faults: 2,
            faults,
            family: Family::Lock,
            quorum: 2,
        }
    }

    /// The same bounds for a semaphore or a read-write lock, on the quorum the core asks of
    /// its kind (`LeaseKind::quorum`): a majority, but for a semaphore of limit `k > 1`
    /// `floor(k n / (k + 1)) + 1` of the `n` servers (all three once `k >= 2`), since
    /// holders of `k + 1` permits through different majorities fit on every server.
    pub fn family(clients: usize, faults: Faults, family: Family) -> RedlockModel {
        let mut m = RedlockModel::small(clients, faults);
        m.family = family;
        m.quorum = m.kind_quorum();
        m
    }

    /// The core's quorum for the family on [`servers`](Self::servers).
    pub fn kind_quorum(&self) -> usize {
        let n = self.servers;
        match self.family {
            Family::Permits {
                rw: false, limit, ..
            } if limit > 1 => {
                let k = usize::from(limit);
                (k * n / (k + 1) + 1).min(n)
            }
            _ => n / 2 + 1,
        }
    }

    pub(crate) fn quorum(&self) -> usize {
        self.quorum
    }
}

/// What an attempt heard from one server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Vote {
    Got(Reply),
    /// No reply in time: the server may have run the request, or may still.
    Lost,
    /// Not asked in this round (a write-back goes only to the servers behind).
    NotAsked,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Between attempts.
    Between,
    /// Waiting for the votes of its attempt.
    Voting,
    /// A quorum granted; writing token `fence` back on the servers behind, `at` of them
    /// already at it.
    Raising { fence: u32, at: u8 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    Idle,
    /// In its acquire call since `started`; `attempt`: when it sent its latest attempt.
    Acquiring {
        started: u8,
        attempt: u8,
        stage: Stage,
    },
    Holding(Hold),
    Done,
    Crashed,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientState {
    pub phase: Phase,
    /// The current round (an attempt or a write-back): replies of earlier ones are not read.
    pub round: u8,
    /// Per server, requests on their way, in the order the connection carries them.
    pub requests: Vec<Vec<(u8, Request)>>,
    /// Per server, what the current round heard.
    pub votes: Vec<Option<Vote>>,
    /// Per server, a hand-off message on its way, and the ones received (their tokens).
    pub handoffs: Vec<Option<u32>>,
    pub handed: Vec<Option<u32>>,
    pub paused_at: Option<u8>,
    pub was_paused: bool,
    /// Of a semaphore or read-write lock: the largest token of a lease released before this
    /// client's acquire call started, which the lease it gets must exceed (every grant and
    /// hand-out for the call comes later, on a quorum that meets the released lease's).
    pub floor: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct History {
    /// The token of the latest hold taken by a client never paused.
    pub last_hold: u32,
    /// Of a semaphore or read-write lock (whose leases overlap, so that two may be granted
    /// in either order): the largest token of a lease released so far.
    pub last_released: u32,
    /// A hold's token was not larger than an earlier hold's (a lock), or than a lease's that
    /// was released before the hold's acquire call started (a semaphore, a read-write lock).
    pub fence_regressed: bool,
    /// A script granted past a listening waiter ahead in its line.
    pub passed_a_waiter: bool,
    /// A client held through a quorum of hand-off messages.
    pub held_by_handoff: bool,
    /// A script left a listening waiter untold that the name could go to
    /// ([`scripts::left_untold`]).
    pub lost_wakeup: bool,
    /// A server granted a key or lease to an attempt that was given up, and no undo (or later
    /// request of the client) was on its way there to take it back.
    pub left_behind: bool,
    /// An undo took back a key or lease a server had granted.
    pub undid: bool,
    /// Faults injected so far.
    pub faults: u8,
    pub restarted: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub now: u8,
    pub servers: Vec<Server>,
    pub clients: Vec<ClientState>,
    pub store: Store,
    pub history: History,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    Tick,
    /// The next attempt, to every server.
    Attempt(Client),
    /// Server `.1` runs the first request of client `.0` on its way there.
    Serve(Client, usize),
    /// The same, its reply lost.
    ServeLost(Client, usize),
    /// No reply from a server in time: the request is delayed (it runs later, or never).
    Lose(Client, usize),
    Tally(Client),
    DeliverHandoff(Client, usize),
    LoseHandoff(Client, usize),
    Enter(Client),
    Write(Client),
    Leave(Client),
    Release(Client),
    Crash(Client),
    Pause(Client),
    Resume(Client),
    Restart(usize),
}

impl State {
    pub(crate) fn clock(&self, c: Client) -> u8 {
        self.clients[c].paused_at.unwrap_or(self.now)
    }

    pub fn in_cs(&self) -> usize {
        self.clients_in_cs().len()
    }

    /// Clients in their critical section.
    pub fn clients_in_cs(&self) -> Vec<Client> {
        (0..self.clients.len())
            .filter(|&c| matches!(self.clients[c].phase, Phase::Holding(h) if h.in_cs))
            .collect()
    }

    /// The permits (or, with a lock, holders) in critical sections.
    pub fn weight_in_cs(&self, family: &Family) -> u8 {
        let weights = self.clients_in_cs().into_iter().map(|c| family.weight(c).1);
        weights.sum()
    }

    pub fn any_paused(&self) -> bool {
        self.clients.iter().any(|c| c.was_paused)
    }

    /// No client was paused and no server restarted: what exclusion and limits rest on.
    pub fn assumptions_hold(&self) -> bool {
        !self.any_paused() && !self.history.restarted
    }

    pub(crate) fn listening(&self) -> Vec<bool> {
        let on = |c: &ClientState| matches!(c.phase, Phase::Acquiring { .. });
        self.clients.iter().map(on).collect()
    }

    pub(crate) fn hold(&mut self, c: Client) -> Option<&mut Hold> {
        match &mut self.clients[c].phase {
            Phase::Holding(h) => Some(h),
            _ => None,
        }
    }
}
