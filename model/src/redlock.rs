//! Redlock: the lock on several servers (three in the checks), each running the same scripts
//! ([`crate::scripts`]) on its own key, line and counter, and clients that act as the core's
//! quorum engine (`core/src/attempt.rs`, `queue.rs`):
//!
//! - an attempt sends the acquire script to every server at once; a server runs a request
//!   and its reply comes back or is lost, or the reply does not come in time and the
//!   request runs later (the vote counts as lost either way); the client tallies once every
//!   vote is in; servers are alike, so states that differ by their order are one
//!   ([`Representative`]);
//! - on a quorum of grants the fencing token is the largest counter any server reported
//!   (grants and refusals alike), written back where it was less (`raise_fence.lua`, a round
//!   of its own); a quorum at the token and validity left (counted from the attempt's
//!   sending) make a hold; otherwise, and without a quorum of grants, the attempt is undone
//!   (`release.lua` keeping the place) on every server that may hold it;
//! - a release hands the lock over on each server to the first listening waiter there, who
//!   is told per server; the waiter holds once a quorum of messages name the same token with
//!   at least half the TTL left counted from its call's first attempt (`judge_handoffs`),
//!   and otherwise confirms with its next attempt (re-entry by token).
//!
//! Time, the timing assumptions and the faults are the single-server model's
//! ([`crate::lock`]); a restart empties one server, once.
//!
//! The name may also be a semaphore or a read-write lock ([`RedlockModel::family`]): the
//! servers run the permits scripts, and a lease counts on the quorum the core asks of its kind
//! (`LeaseKind::quorum`, core/src/kind.rs): a majority, but for a semaphore of limit `k > 1`
//! `floor(k n / (k + 1)) + 1` of `n` servers.

use stateright::{Model, Property, Representative};

use crate::scripts::{self, Ctx};
pub use crate::votes::{Action, ClientState, History, Phase, RedlockModel, Stage, State, Vote};
use crate::world::{Client, Hold, Lean, Pubsub, Reply, Request, Server, Store};

impl Model for RedlockModel {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let n = self.servers;
        let client = ClientState {
            phase: Phase::Idle,
            round: 0,
            requests: vec![Vec::new(); n],
            votes: vec![None; n],
            handoffs: vec![None; n],
            handed: vec![None; n],
            paused_at: None,
            was_paused: false,
            floor: 0,
        };
        vec![State {
            now: 0,
            servers: vec![Server::default(); n],
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
            actions.extend((0..self.servers).map(Action::Restart));
        }
        for c in 0..self.clients {
            self.client_actions(s, c, actions);
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut s = s.clone();
        if let Action::ServeLost(..)
        | Action::Lose(..)
        | Action::LoseHandoff(..)
        | Action::Crash(_) = action
        {
            s.history.faults += 1;
        }
        match action {
            Action::Tick => s.now += 1,
            Action::Restart(i) => {
                s.servers[i] = Server::default();
                s.history.restarted = true;
            }
            Action::Attempt(c) => self.attempt(&mut s, c),
            Action::Serve(c, i) => self.serve(&mut s, c, i, false),
            Action::ServeLost(c, i) => self.serve(&mut s, c, i, true),
            Action::Lose(c, i) => s.clients[c].votes[i] = Some(Vote::Lost),
            Action::Tally(c) => self.tally(&mut s, c),
            Action::DeliverHandoff(c, i) => {
                let fence = s.clients[c].handoffs[i].take()?;
                s.clients[c].handed[i] = Some(fence);
                self.judge_handoffs(&mut s, c);
            }
            Action::LoseHandoff(c, i) => s.clients[c].handoffs[i] = None,
            Action::Enter(c) => s.hold(c)?.in_cs = true,
            Action::Write(c) => {
                let h = s.hold(c)?;
                h.wrote = true;
                let fence = h.fence;
                s.store.write(fence);
            }
            Action::Leave(c) => s.hold(c)?.in_cs = false,
            Action::Release(c) => {
                if let (Phase::Holding(h), true) = (s.clients[c].phase, self.family.is_permits()) {
                    s.history.last_released = s.history.last_released.max(h.fence);
                }
                let round = s.clients[c].round;
                for q in &mut s.clients[c].requests {
                    q.push((round, Request::Release));
                }
                s.clients[c].phase = Phase::Done;
            }
            Action::Crash(c) => {
                let client = &mut s.clients[c];
                client.phase = Phase::Crashed;
                client.handoffs.iter_mut().for_each(|h| *h = None);
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
        crate::properties::redlock()
    }

    fn within_boundary(&self, s: &State) -> bool {
        s.now <= self.max_time && s.servers.iter().all(|v| v.counter <= self.max_grants)
    }
}

impl RedlockModel {
    /// Time passes unless that would break a timing assumption (as in [`crate::lock`]): a
    /// client not paused leaves its critical section before its validity ends, and a waiter
    /// not paused retries before a place of its expires (or has a request on its way there).
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
                Phase::Acquiring { .. } => s.servers.iter().enumerate().all(|(i, v)| {
                    !client.requests[i].is_empty()
                        || !v.line.iter().any(|p| p.client == c && p.expires <= next)
                }),
                _ => true,
            }
        })
    }

    fn client_actions(&self, s: &State, c: Client, actions: &mut Vec<Action>) {
        let client = &s.clients[c];
        let more = s.history.faults < self.max_faults;
        let lost = self.faults.lost_replies && more;
        for i in 0..self.servers {
            if !client.requests[i].is_empty() {
                actions.push(Action::Serve(c, i));
                if lost {
                    actions.push(Action::ServeLost(c, i));
                }
            }
            if lost && client.handoffs[i].is_some() {
                actions.push(Action::LoseHandoff(c, i));
            }
        }
        let alive = !matches!(client.phase, Phase::Done | Phase::Crashed);
        if self.faults.crashes && alive && more {
            actions.push(Action::Crash(c));
        }
        if self.faults.pauses && alive && !client.was_paused {
            actions.push(Action::Pause(c));
        }
        if client.paused_at.is_some() {
            actions.push(Action::Resume(c));
            return;
        }
        for i in 0..self.servers {
            if client.handoffs[i].is_some() {
                actions.push(Action::DeliverHandoff(c, i));
            }
            let waiting = client.votes[i].is_none();
            if lost && waiting && self.in_round(client) {
                actions.push(Action::Lose(c, i));
            }
        }
        let clock = s.clock(c);
        match client.phase {
            Phase::Idle => actions.push(Action::Attempt(c)),
            Phase::Acquiring { stage, attempt, .. } => match stage {
                Stage::Between if attempt < clock => actions.push(Action::Attempt(c)),
                Stage::Voting | Stage::Raising { .. }
                    if client.votes.iter().all(Option::is_some) =>
                {
                    actions.push(Action::Tally(c))
                }
                _ => {}
            },
            Phase::Holding(h) => {
                if !h.in_cs && clock < h.valid_until && !h.wrote {
                    actions.push(Action::Enter(c));
                }
                if h.in_cs && !h.wrote {
                    actions.push(Action::Write(c));
                }
                if h.in_cs {
                    actions.push(Action::Leave(c));
                } else {
                    actions.push(Action::Release(c));
                }
            }
            _ => {}
        }
    }

    fn in_round(&self, client: &ClientState) -> bool {
        matches!(
            client.phase,
            Phase::Acquiring {
                stage: Stage::Voting | Stage::Raising { .. },
                ..
            }
        )
    }

    /// A new attempt: the acquire script on every server, its votes awaited.
    fn attempt(&self, s: &mut State, c: Client) {
        let clock = s.clock(c);
        let released = s.history.last_released;
        let client = &mut s.clients[c];
        let started = match client.phase {
            Phase::Acquiring { started, .. } => started,
            _ => {
                client.floor = released;
                clock
            }
        };
        client.phase = Phase::Acquiring {
            started,
            attempt: clock,
            stage: Stage::Voting,
        };
        client.round += 1;
        let round = client.round;
        for i in 0..self.servers {
            client.requests[i].push((round, Request::Acquire { arrival: started }));
            client.votes[i] = None;
        }
    }

    /// Server `i` runs `c`'s first request on its way there. Its reply (unless `lost`) is
    /// read only by the round that sent it, still waiting for it.
    fn serve(&self, s: &mut State, c: Client, i: usize, lost: bool) {
        let (round, request) = s.clients[c].requests[i].remove(0);
        let listening = s.listening();
        let x = Ctx {
            now: s.now,
            ttl: self.ttl,
            place_life: self.place_life,
            listening: &listening,
            heard: &listening,
            many: &vec![false; listening.len()],
            family: &self.family,
            pubsub: Pubsub::Exact,
            lean: Lean::QueueChecked,
        };
        let before = scripts::untold(&x, &s.servers[i]);
        let had = scripts::holds(&s.servers[i], c, s.now);
        let served = scripts::serve(&x, &mut s.servers[i], c, request);
        let holds = scripts::holds(&s.servers[i], c, s.now);
        let after = scripts::untold(&x, &s.servers[i]);
        s.history.lost_wakeup |= scripts::left_untold(before, after, c, had && !holds);
        s.history.left_behind |= !had && holds && self.given_up(&s.clients[c], i);
        s.history.undid |= had && request == Request::Undo;
        s.history.passed_a_waiter |= served.passed_a_waiter;
        for &(w, fence) in &served.handed {
            if !matches!(s.clients[w].phase, Phase::Crashed) {
                s.clients[w].handoffs[i] = Some(fence);
            }
        }
        let client = &mut s.clients[c];
        if round == client.round && self.in_round(client) && client.votes[i].is_none() {
            client.votes[i] = match (lost, served.reply) {
                (false, Some(reply)) => Some(Vote::Got(reply)),
                _ => Some(Vote::Lost),
            };
        }
    }

    /// Whether `client`'s attempt was given up with nothing on its way to server `i` that
    /// would take back what the server just granted it: between attempts (an undone attempt),
    /// with no undo, new attempt or release queued there. (A grant read by the current round,
    /// or one a hold or a write-back round goes on from, is the client's to release.)
    fn given_up(&self, client: &ClientState, i: usize) -> bool {
        let between = matches!(
            client.phase,
            Phase::Acquiring {
                stage: Stage::Between,
                ..
            }
        );
        between && client.requests[i].is_empty()
    }

    /// Every vote of the round is in.
    fn tally(&self, s: &mut State, c: Client) {
        let Phase::Acquiring { stage, .. } = s.clients[c].phase else {
            return;
        };
        let votes = s.clients[c].votes.clone();
        let counter = |v: &Option<Vote>| match v {
            Some(Vote::Got(Reply::Granted { fence })) => Some(*fence),
            Some(Vote::Got(Reply::Refused { counter })) => Some(*counter),
            Some(Vote::Got(Reply::Raised { counter })) => Some(*counter),
            _ => None,
        };
        match stage {
            Stage::Voting => {
                let granted = votes
                    .iter()
                    .filter(|v| matches!(v, Some(Vote::Got(Reply::Granted { .. }))))
                    .count();
                if granted < self.quorum() {
                    // Undone where the server may hold it: it granted, or no reply came.
                    let mine = |v: &Option<Vote>| {
                        matches!(v, Some(Vote::Got(Reply::Granted { .. }) | Vote::Lost))
                    };
                    let may_hold: Vec<bool> = votes.iter().map(mine).collect();
                    return self.undo(s, c, &may_hold);
                }
                let fence = votes.iter().filter_map(counter).max().unwrap_or(0);
                let at = votes.iter().filter(|v| counter(v) >= Some(fence)).count();
                let behind: Vec<bool> = votes
                    .iter()
                    .map(|v| counter(v) < Some(fence) && counter(v).is_some())
                    .collect();
                if !behind.contains(&true) {
                    return self.finish(s, c, fence, at);
                }
                let client = &mut s.clients[c];
                client.round += 1;
                for (i, &b) in behind.iter().enumerate() {
                    client.votes[i] = if b { None } else { Some(Vote::NotAsked) };
                    if b {
                        client.requests[i].push((client.round, Request::Raise { fence }));
                    }
                }
                set_stage(
                    client,
                    Stage::Raising {
                        fence,
                        at: at as u8,
                    },
                );
            }
            Stage::Raising { fence, at } => {
                let raised = votes.iter().filter(|v| counter(v) >= Some(fence)).count();
                self.finish(s, c, fence, usize::from(at) + raised);
            }
            Stage::Between => {}
        }
    }

    /// A quorum granted and `at` servers hold token `fence` or more: a hold if that is a
    /// quorum and validity is left, else the attempt undone on every server.
    fn finish(&self, s: &mut State, c: Client, fence: u32, at: usize) {
        let Phase::Acquiring { attempt, .. } = s.clients[c].phase else {
            return;
        };
        let valid_until = attempt + self.ttl - self.margin;
        if at < self.quorum() || valid_until <= s.clock(c) {
            return self.undo(s, c, &vec![true; self.servers]);
        }
        self.hold(s, c, fence, valid_until);
    }

    fn undo(&self, s: &mut State, c: Client, may_hold: &[bool]) {
        let client = &mut s.clients[c];
        for (i, &m) in may_hold.iter().enumerate() {
            if m {
                client.requests[i].push((client.round, Request::Undo));
            }
        }
        client.round += 1;
        set_stage(client, Stage::Between);
    }

    /// The messages received so far: a quorum at one token, with at least half the TTL left
    /// counted from the call's first attempt, is a hold (`queue::judge_handoffs`); anything
    /// less waits for the next attempt, which confirms it.
    fn judge_handoffs(&self, s: &mut State, c: Client) {
        let Phase::Acquiring { started, .. } = s.clients[c].phase else {
            return;
        };
        let handed = &s.clients[c].handed;
        let Some(fence) = handed.iter().flatten().max().copied() else {
            return;
        };
        let at = handed.iter().filter(|&&f| f == Some(fence)).count();
        let valid_until = started + self.ttl - self.margin;
        let fresh = valid_until >= s.clock(c) + self.ttl / 2;
        if at >= self.quorum() && fresh && valid_until > s.clock(c) {
            s.clients[c].round += 1;
            s.history.held_by_handoff = true;
            self.hold(s, c, fence, valid_until);
        }
    }

    fn hold(&self, s: &mut State, c: Client, fence: u32, valid_until: u8) {
        let client = &mut s.clients[c];
        client.phase = Phase::Holding(Hold {
            fence,
            valid_until,
            in_cs: false,
            wrote: false,
            extends: 0,
        });
        client.votes.iter_mut().for_each(|v| *v = None);
        if self.family.is_permits() {
            s.history.fence_regressed |= fence <= client.floor;
        } else if !client.was_paused {
            s.history.fence_regressed |= fence <= s.history.last_hold;
            s.history.last_hold = s.history.last_hold.max(fence);
        }
    }
}

fn set_stage(client: &mut ClientState, to: Stage) {
    if let Phase::Acquiring { stage, .. } = &mut client.phase {
        *stage = to;
    }
}

/// Servers are alike: a state is the same as one with its servers (and every client's view
/// of each) in another order.
impl Representative for State {
    fn representative(&self) -> State {
        let column = |i: usize| {
            let views: Vec<_> = self
                .clients
                .iter()
                .map(|c| {
                    (
                        c.requests[i].clone(),
                        c.votes[i],
                        c.handoffs[i],
                        c.handed[i],
                    )
                })
                .collect();
            (self.servers[i].clone(), views)
        };
        let mut columns: Vec<_> = (0..self.servers.len()).map(column).collect();
        columns.sort();
        let mut s = self.clone();
        for (i, (server, views)) in columns.into_iter().enumerate() {
            s.servers[i] = server;
            for (c, (requests, vote, handoff, handed)) in views.into_iter().enumerate() {
                let client = &mut s.clients[c];
                (client.requests[i], client.votes[i]) = (requests, vote);
                (client.handoffs[i], client.handed[i]) = (handoff, handed);
            }
        }
        s
    }
}
