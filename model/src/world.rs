//! The models' shared vocabulary: clients, the server's keys, places and leases, requests and
//! replies, the fenced store, the faults explored, what the name is ([`Family`]) and how the
//! server's messages reach waiters ([`Pubsub`]); and the single-server model's bounds and
//! state ([`LockModel`], [`State`]), which the properties read. A leaf: the scripts
//! ([`crate::scripts`]), the models ([`crate::lock`], [`crate::redlock`]) and the properties
//! ([`crate::properties`]) use it.

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
    /// Which uncontended acquire the scripts run.
    pub lean: Lean,
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
            lean: Lean::QueueChecked,
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
    /// The highest term an election's observer read: the fencing token of name 0's live key,
    /// read at every step (`History::observe`).
    pub observed: u32,
    /// An observer read a term older than one it had read.
    pub observed_older: bool,
    /// An observer read a newer term after an earlier one (a leader replaced).
    pub observed_new_term: bool,
}

impl History {
    /// An election's observer reading the leader now (`Election::leader`: the holder of name
    /// 0's live key, its term the key's fencing token; a leader's note, which names that term,
    /// is written only while the key holds the leader's token).
    pub(crate) fn observe(&mut self, key: Option<Key>, now: u8) {
        let Some(key) = key.filter(|k| k.expires > now) else {
            return;
        };
        self.observed_older |= key.fence < self.observed;
        self.observed_new_term |= self.observed > 0 && key.fence > self.observed;
        self.observed = self.observed.max(key.fence);
    }
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
    pub(crate) fn clock(&self, c: Client) -> u8 {
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

/// What the model's name is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// A lock: one holder.
    Lock,
    /// Permits of `limit`, client `c`'s lease weighing `weights[c]`: a semaphore, or a
    /// read-write lock (`rw`: a writer weighs the whole `limit`, a reader 1).
    Permits {
        rw: bool,
        limit: u8,
        weights: Vec<u8>,
    },
}

impl Family {
    /// A semaphore of `limit` permits; client `c` takes `counts[c]`.
    pub fn semaphore(limit: u8, counts: &[u8]) -> Family {
        assert!(counts.iter().all(|&n| (1..=limit).contains(&n)));
        Family::Permits {
            rw: false,
            limit,
            weights: counts.to_vec(),
        }
    }

    /// A read-write lock; client `c` writes when `writers[c]`, else reads. Its capacity is
    /// the number of clients: more than all readers together.
    pub fn rwlock(writers: &[bool]) -> Family {
        let limit = writers.len() as u8;
        Family::Permits {
            rw: true,
            limit,
            weights: writers.iter().map(|&w| if w { limit } else { 1 }).collect(),
        }
    }

    pub fn is_permits(&self) -> bool {
        matches!(self, Family::Permits { .. })
    }

    /// The capacity, and client `c`'s weight (a lock: 1 of 1).
    pub fn weight(&self, c: Client) -> (u8, u8) {
        match self {
            Family::Lock => (1, 1),
            Family::Permits { limit, weights, .. } => (*limit, weights[c]),
        }
    }

    /// Whether client `c` is a read-write lock's writer.
    pub fn writes(&self, c: Client) -> bool {
        matches!(self, Family::Permits { rw: true, limit, weights } if weights[c] == *limit)
    }
}

/// Which uncontended acquire a lock's script runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Lean {
    /// `acquire.lua`'s: granted only when nobody is in line (the queue's key does not exist)
    /// and the key is free.
    QueueChecked,
    /// Issue 56 item 5's candidate, kept so that the checker shows its fault: an acquire that
    /// reads only the lock's key (a plain `SET NX PX` and the counter's `INCR`, which a mark
    /// on the key saying that someone waits would allow), granted whenever the key is free.
    /// A key that expired under a waiter takes no mark with it.
    KeyOnly,
}

/// How a server's wake-up messages reach waiters, and which hand-over its scripts run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pubsub {
    /// A message reaches only the subscribers the server counts (a standalone or Sentinel
    /// server; sharded pub/sub on a cluster): every listener is heard.
    Exact,
    /// A node of a Redis 6.2 cluster: `PUBLISH` reaches subscribers on every node, the count
    /// (`PUBSUB NUMSUB`) sees the node's own; a subscription left on a node its slot moved away
    /// from still hears, unseen. The scripts wake a waiter they cannot see listen ("? ARRIVAL
    /// TOKEN") and keep the name free for it (`queue.lua`'s `listening`, 'maybe').
    Broadcast,
    /// The same cluster under the hand-over before issue 51, kept so that the checker shows
    /// its fault: it published "handed to you" before it knew whether anyone listened, and
    /// took a count of 0 for nobody, so a waiter heard elsewhere was told of a grant that the
    /// script then made to another.
    BroadcastBefore51,
}
