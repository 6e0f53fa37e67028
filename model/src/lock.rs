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
use crate::scripts::{self, Ctx, Served};
pub use crate::world::{
    Action, Client, ClientState, Family, Faults, History, Hold, Key, Lean, Lease, LockModel, Phase,
    Place, Pubsub, Reply, Request, Server, State, Store,
};

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
        let (key, now) = (s.names[0].key, s.now);
        s.history.observe(key, now);
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
            lean: self.lean,
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
