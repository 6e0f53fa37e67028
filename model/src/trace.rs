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

use std::fmt::Write as _;
use std::io::{self, Write};

use stateright::Model;

use crate::lock::{Action, Faults, LockModel, Phase, Request, State};
use crate::scripts::Served;

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

/// Writes `runs` runs of at most `steps` actions each.
pub fn write(out: &mut impl Write, runs: u64, steps: usize) -> io::Result<()> {
    let m = model();
    writeln!(out, "model {} {} {}", m.clients, m.ttl, m.place_life)?;
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
                    let served = m.serve(&mut next, c, request);
                    writeln!(out, "{}", line(&s, &next, c, request, served))?;
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

/// The line of a script run for `c`'s `request` in `before`, leaving `after`.
fn line(before: &State, after: &State, c: usize, request: Request, served: Served) -> String {
    use crate::lock::Reply::*;
    let (op, arrival) = match request {
        Request::Acquire { arrival } => ("acquire", arrival.to_string()),
        Request::Extend { .. } => ("extend", "-".to_owned()),
        Request::Release => ("release", "-".to_owned()),
        Request::Undo | Request::Raise { .. } => unreachable!("Redlock's alone"),
    };
    let listening: Vec<String> = (0..before.clients.len())
        .filter(|&w| before.listening(w))
        .map(|w| w.to_string())
        .collect();
    let listening = if listening.is_empty() {
        "-".to_owned()
    } else {
        listening.join(",")
    };
    let (reply, value) = match served.reply.expect("a reply") {
        Granted { fence } => ("granted", fence.to_string()),
        Refused { .. } => ("refused", "-".to_owned()),
        Extended { .. } => ("extended", "-".to_owned()),
        Released => ("released", "-".to_owned()),
        NotHeld { taken: false } => ("gone", "-".to_owned()),
        NotHeld { taken: true } => ("taken", "-".to_owned()),
        Raised { .. } => unreachable!("the single-server lock raises no counter"),
    };
    let now = after.now;
    let server = &after.server;
    let key = server.key.map_or("- -".to_owned(), |k| {
        format!("{} {}", k.holder, k.expires - now)
    });
    let handed = served
        .handed
        .map_or("- -".to_owned(), |(w, f)| format!("{w} {f}"));
    let mut text = format!(
        "{op} {c} {arrival} {listening} -> {reply} {value} {key} {} {handed}",
        server.counter
    );
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
