//! Random runs of the lock model written out for the conformance test
//! (`core/src/scripts/conformance.rs`), which replays each step of the server through the
//! real scripts on a real redis-server and compares what they answer and leave behind with
//! what the model says (docs/SAFETY.md, "The model held to the scripts").
//!
//! The runs are a seeded random walk through the model's actions (every fault but a
//! restart, whose closed connections the replay cannot reproduce in the same step), so the
//! same arguments always write the same file: `core/src/scripts/conformance.trace` is this
//! output, and stage 15-model checks that it still is.
//!
//! One line per step that reaches the server, words separated by spaces:
//!
//! ```text
//! model CLIENTS TTL PLACE_LIFE           the bounds, first (ticks)
//! run SEED                               a new run: an empty server, time 0
//! tick                                   one tick passes
//! OP CLIENT ARRIVAL LISTENING -> REPLY VALUE KEY LEFT COUNTER HANDED FENCE LINE...
//! ```
//!
//! `OP` is `acquire`, `extend` or `release`; `ARRIVAL` the acquire's arrival (its call's first
//! tick), `-` for the others; `LISTENING` the clients subscribed to their wake-up channel, as
//! `0,2`, or `-`. After the script: `REPLY` is `granted` (`VALUE` its fencing token),
//! `refused`, `extended`, `released`, `gone` or `taken` (`VALUE` `-`); `KEY LEFT` the key's
//! holder and the ticks it has left, or `- -`; `COUNTER` the fencing counter; `HANDED FENCE`
//! the waiter the script handed the lock to and its token, or `- -`; then the line, one
//! `CLIENT:ARRIVAL:LEFT` per place, in order.
//!
//! The runs of a semaphore and of a read-write lock (`traces --permits`,
//! `core/src/scripts/conformance/permits.trace`) have their own model lines, and a step says
//! what a permit script leaves:
//!
//! ```text
//! model semaphore CLIENTS TTL PLACE_LIFE LIMIT COUNTS      COUNTS as 1,1,2: client c's permits
//! model rwlock CLIENTS TTL PLACE_LIFE ROLES                ROLES as r,r,w: reader or writer
//! OP CLIENT ARRIVAL LISTENING -> REPLY VALUE COUNTER HANDED leases LEASE... line PLACE...
//! ```
//!
//! `VALUE` of a refusal is the ticks until the first lease ends (`-`: none held); `HANDED` the
//! waiters handed a lease with their tokens, as `1:5,2:6`, or `-`; each `LEASE` is
//! `CLIENT:LEFT`, each `PLACE` `CLIENT:ARRIVAL:LEFT`.
//!
//! The runs of a lock on two names (`traces --many`, `core/src/scripts/conformance/many.trace`)
//! say what each name holds after a step:
//!
//! ```text
//! model many CLIENTS TTL PLACE_LIFE WANTS    WANTS as 1,3,2: client c's names as a bitmask
//! OP CLIENT ARRIVAL LISTENING -> REPLY VALUE | NAME... | NAME...
//! NAME: KEY LEFT COUNTER HANDED FENCE WOKEN PLACE...
//! ```
//!
//! `VALUE` of a grant is the tokens of the client's names, as `4,2`; `WOKEN` the waiter of
//! several names the script woke on that name (`-`: none); a place is `CLIENT:ARRIVAL:LEFT`.
//!
//! The runs of the lock on a Redis 6.2 cluster's node (`traces --broadcast`,
//! `core/src/scripts/conformance/broadcast.trace`, header `model broadcast CLIENTS TTL
//! PLACE_LIFE`) are a lock's lines; their slot may move under the waiters, and `LISTENING`
//! names only the clients the server sees listen (a subscription left on another node is
//! none), so that the replay, calling the scripts as on such a cluster (`CPUBLISH`), finds a
//! waiter it cannot see woken and the name kept free for it, as the model does.

use std::fmt::Write as _;
use std::io::{self, Write};

use stateright::Model;

use crate::scripts::Served;
use crate::world::{
    Action, Family, Faults, LockModel, Phase, Pubsub, Reply, Request, Server, State,
};

/// The bounds of the runs: 3 clients, TTL 3, places living 2 ticks, 30 ticks at most, and
/// every fault but a restart.
pub fn model() -> LockModel {
    LockModel {
        max_time: 30,
        max_extends: 2,
        ..LockModel::small(
            3,
            Faults {
                pauses: true,
                ..Faults::ASSUMED
            },
        )
    }
}

/// The runs' models of the coordination family: a semaphore of 2 whose third client takes
/// both permits, and a read-write lock with two readers and a writer.
pub fn permit_models() -> [LockModel; 2] {
    [
        Family::semaphore(2, &[1, 1, 2]),
        Family::rwlock(&[false, false, true]),
    ]
    .map(|family| LockModel { family, ..model() })
}

/// The runs' model of a lock on two names: client 0 takes the first, client 2 the second,
/// client 1 both at once.
pub fn many_model() -> LockModel {
    LockModel {
        wants: vec![1, 3, 2],
        ..model()
    }
}

/// The runs' model of the lock on a Redis 6.2 cluster's node ([`Pubsub::Broadcast`]), whose
/// slot may move under the waiters: a waiter it does not see listen is woken and the name kept
/// for it (the replay calls the scripts as on such a cluster, `CPUBLISH`).
pub fn broadcast_model() -> LockModel {
    let mut m = LockModel {
        pubsub: Pubsub::Broadcast,
        ..model()
    };
    m.faults.moves = true;
    m
}

/// Which runs to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traces {
    /// A lock's ([`model`]).
    Lock,
    /// A semaphore's and a read-write lock's ([`permit_models`]), as many of each.
    Permits,
    /// A lock's on two names ([`many_model`]).
    Many,
    /// A lock's on a Redis 6.2 cluster's node whose slot may move ([`broadcast_model`]).
    Broadcast,
}

/// Writes `runs` runs of at most `steps` actions each.
pub fn write(out: &mut impl Write, runs: u64, steps: usize, traces: Traces) -> io::Result<()> {
    if traces == Traces::Lock {
        let m = model();
        writeln!(out, "model {} {} {}", m.clients, m.ttl, m.place_life)?;
        return write_runs(out, &m, runs, steps);
    }
    if traces == Traces::Broadcast {
        let m = broadcast_model();
        writeln!(
            out,
            "model broadcast {} {} {}",
            m.clients, m.ttl, m.place_life
        )?;
        return write_runs(out, &m, runs, steps);
    }
    if traces == Traces::Many {
        let m = many_model();
        let wants: Vec<String> = m.wants.iter().map(u8::to_string).collect();
        let wants = wants.join(",");
        writeln!(out, "model many 3 {} {} {wants}", m.ttl, m.place_life)?;
        return write_runs(out, &m, runs, steps);
    }
    for m in permit_models() {
        let Family::Permits { rw, limit, weights } = &m.family else {
            unreachable!("permits")
        };
        let (ttl, life) = (m.ttl, m.place_life);
        match rw {
            false => {
                let counts: Vec<String> = weights.iter().map(u8::to_string).collect();
                let counts = counts.join(",");
                writeln!(out, "model semaphore 3 {ttl} {life} {limit} {counts}")?;
            }
            true => {
                let roles: Vec<&str> = (0..m.clients)
                    .map(|c| if m.family.writes(c) { "w" } else { "r" })
                    .collect();
                writeln!(out, "model rwlock 3 {ttl} {life} {}", roles.join(","))?;
            }
        }
        write_runs(out, &m, runs, steps)?;
    }
    Ok(())
}

fn write_runs(out: &mut impl Write, m: &LockModel, runs: u64, steps: usize) -> io::Result<()> {
    for seed in 1..=runs {
        writeln!(out, "run {seed}")?;
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        let mut s = m.init_states().remove(0);
        for _ in 0..steps {
            let mut actions = Vec::new();
            m.actions(&s, &mut actions);
            actions.retain(|a| *a != Action::Restart);
            let over = s
                .clients
                .iter()
                .all(|c| matches!(c.phase, Phase::Done | Phase::Crashed));
            if actions.is_empty() || over {
                break;
            }
            let action = pick(&actions, &mut rng);
            s = match action {
                Action::Tick => {
                    writeln!(out, "tick")?;
                    m.next_state(&s, action).expect("a tick")
                }
                Action::Serve(c) => {
                    let mut next = s.clone();
                    let request = next.clients[c].request.take().expect("a request");
                    let (served, reply) = m.serve(&mut next, c, request);
                    let reply = reply.expect("a reply");
                    let text = match m.family {
                        Family::Lock if m.wants.is_empty() => {
                            line(&s, &next, c, request, &served[0], reply)
                        }
                        Family::Lock => many_line(m, &s, &next, c, request, &served, reply),
                        Family::Permits { .. } => {
                            permit_line(&s, &next, c, request, &served[0], reply)
                        }
                    };
                    writeln!(out, "{text}")?;
                    next
                }
                _ => match m.next_state(&s, action) {
                    Some(next) => next,
                    None => continue,
                },
            };
        }
    }
    Ok(())
}

/// One of `actions`, faults and ticks less often than the clients' own steps: a run where
/// every client crashes at the start tells little.
fn pick(actions: &[Action], rng: &mut Rng) -> Action {
    let weight = |a: &Action| match a {
        Action::Crash(_) | Action::Pause(_) => 1,
        Action::Lose(_) => 4,
        Action::Tick => 8,
        _ => 16,
    };
    let mut at = rng.below(actions.iter().map(weight).sum());
    for a in actions {
        if at < weight(a) {
            return *a;
        }
        at -= weight(a);
    }
    unreachable!("a pick within the weights")
}

/// A reply's words in a trace line: `granted` with its token, the others with `-`.
fn outcome(reply: Reply) -> (&'static str, String) {
    use crate::world::Reply::*;
    let word = match reply {
        Granted { fence } => return ("granted", fence.to_string()),
        Refused { .. } => "refused",
        Extended { .. } => "extended",
        Released => "released",
        NotHeld { taken: false } => "gone",
        NotHeld { taken: true } => "taken",
        Raised { .. } => unreachable!("the single-server lock raises no counter"),
    };
    (word, "-".to_owned())
}

/// What a step says before `->`: the operation, its client, arrival and who listens.
fn call(before: &State, c: usize, request: Request) -> String {
    let (op, arrival) = match request {
        Request::Acquire { arrival } => ("acquire", arrival.to_string()),
        Request::Extend { .. } => ("extend", "-".to_owned()),
        Request::Release => ("release", "-".to_owned()),
        Request::Undo | Request::Raise { .. } | Request::Leave => {
            unreachable!("Redlock's alone, and calls that end (not traced)")
        }
    };
    // Those the server sees listen: a subscription left on another node ([`Faults::moves`])
    // is none on the server the replay runs.
    let listening: Vec<String> = (0..before.clients.len())
        .filter(|&w| before.listening(w) && !before.clients[w].elsewhere)
        .map(|w| w.to_string())
        .collect();
    let listening = if listening.is_empty() {
        "-".to_owned()
    } else {
        listening.join(",")
    };
    format!("{op} {c} {arrival} {listening}")
}

/// The line of a script run for `c`'s `request` in `before`, leaving `after`.
fn line(
    before: &State,
    after: &State,
    c: usize,
    request: Request,
    served: &Served,
    reply: Reply,
) -> String {
    let (reply, value) = outcome(reply);
    let name = name(after.now, &after.names[0], served, false);
    format!("{} -> {reply} {value} {name}", call(before, c, request))
}

/// What a name holds after a script, and what the script did there: `KEY LEFT COUNTER HANDED
/// FENCE`, then (`woken`: of a lock on several names) `WOKEN`, then `PLACE...`.
/// Keys and places whose time has come are gone (a name no script touched has not been
/// swept, which nobody can tell).
fn name(now: u8, server: &Server, served: &Served, woken: bool) -> String {
    let key = server.key.filter(|k| k.expires > now);
    let key = key.map_or("- -".to_owned(), |k| {
        format!("{} {}", k.holder, k.expires - now)
    });
    let handed = served
        .handed
        .first()
        .map_or("- -".to_owned(), |(w, f)| format!("{w} {f}"));
    let mut text = format!("{key} {} {handed}", server.counter);
    if woken {
        let w = served.woken.map_or("-".to_owned(), |w| w.to_string());
        write!(text, " {w}").unwrap();
    }
    for p in server.line.iter().filter(|p| p.expires > now) {
        write!(text, " {}:{}:{}", p.client, p.arrival, p.expires - now).unwrap();
    }
    text
}

/// The line of a script run for `c`'s `request` on a lock of several names.
fn many_line(
    m: &LockModel,
    before: &State,
    after: &State,
    c: usize,
    request: Request,
    served: &[Served],
    reply: Reply,
) -> String {
    let (reply, value) = match reply {
        Reply::Granted { .. } => {
            let fences: Vec<String> = crate::many::names_in(m.wants(c))
                .map(|i| after.names[i].key.expect("granted").fence.to_string())
                .collect();
            ("granted", fences.join(","))
        }
        reply => outcome(reply),
    };
    let mut text = format!("{} -> {reply} {value}", call(before, c, request));
    for (server, served) in after.names.iter().zip(served) {
        write!(text, " | {}", name(after.now, server, served, true)).unwrap();
    }
    text
}

/// The line of a permit script run for `c`'s `request` in `before`, leaving `after`.
fn permit_line(
    before: &State,
    after: &State,
    c: usize,
    request: Request,
    served: &Served,
    reply: Reply,
) -> String {
    let now = after.now;
    let server = &after.names[0];
    let first_end = server.leases.iter().map(|l| l.expires - now).min();
    let (reply, value) = match reply {
        Reply::Refused { .. } => (
            "refused",
            first_end.map_or("-".to_owned(), |t| t.to_string()),
        ),
        reply => outcome(reply),
    };
    let handed: Vec<String> = served
        .handed
        .iter()
        .map(|(w, f)| format!("{w}:{f}"))
        .collect();
    let handed = if handed.is_empty() {
        "-".to_owned()
    } else {
        handed.join(",")
    };
    let mut text = format!(
        "{} -> {reply} {value} {} {handed} leases",
        call(before, c, request),
        server.counter
    );
    for l in &server.leases {
        write!(text, " {}:{}", l.client, l.expires - now).unwrap();
    }
    text.push_str(" line");
    for p in &server.line {
        write!(text, " {}:{}:{}", p.client, p.arrival, p.expires - now).unwrap();
    }
    text
}

/// xorshift64*: the same runs on every machine, without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33) as usize % n
    }
}
