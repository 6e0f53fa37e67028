//! The scripts of a lock on several names (`acquire_many.lua`, `extend_many.lua`,
//! `release_many.lua`), beside the single name's, held to the model of a lock on two names
//! (`model/src/many.rs`; `fencelock-model traces --many` wrote `many.trace`): client 0 takes
//! the first name, client 2 the second, client 1 both at once. After every call: the reply
//! (a grant's token per name, a refusal's counters and longest PTTL), each name's key, counter
//! and line, the hand-offs to waiters of one name and the wake-ups ("0 ARRIVAL TOKEN") of the
//! waiter of both, compared with the model's.

use std::time::Duration;

use redis::Value;

use super::super::{parse_acquire, AcquireReply, ScriptCall};
use super::{number, parse_expected, ticks, token, Expected, Replay, TICK_MS};

/// The runs `fencelock-model traces --many` writes with its defaults (stage 15-model checks
/// that the model still writes exactly this).
const TRACE: &str = include_str!("many.trace");

#[test]
fn the_scripts_of_several_names_do_what_the_model_of_a_lock_on_two_names_says() {
    super::replay_runs("FENCELOCK_CONFORMANCE_MANY_TRACE", TRACE);
}

/// What the model says a call left on one name, and the waiter of several names it woke there.
struct Name {
    expected: Expected,
    woken: Option<usize>,
}

impl Replay {
    /// Runs `c`'s `op` through the script the core would send (of several names for a client
    /// of both), and checks what it answered, published and left against `rest`, the model's
    /// words after `->`.
    pub(super) fn many_step(
        &mut self,
        op: &str,
        c: usize,
        arrival: &str,
        rest: &[&str],
    ) -> Result<(), String> {
        let [reply, value, "|", rest @ ..] = rest else {
            return Err("the model's state is cut short".to_owned());
        };
        let names: Vec<Name> = rest
            .split(|w| *w == "|")
            .map(parse_name)
            .collect::<Result<_, _>>()?;
        if names.len() != 2 {
            return Err(format!("{} names, not 2", names.len()));
        }
        let got = self.many_call(op, c, arrival)?;
        self.calls += 1;
        self.check_many_reply(&got, c, reply, value, &names)?;
        for (i, name) in names.iter().enumerate() {
            self.check_name(i, &name.expected)
                .map_err(|e| format!("name {i}: {e}"))?;
            let mut messages: Vec<_> = name.expected.handed_message().into_iter().collect();
            if let Some(w) = name.woken {
                let place = name.expected.line.iter().find(|p| p.0 == w);
                messages.push((w, 0, place.map_or(0, |p| p.1 + 1)));
            }
            self.check_messages(i, &messages)
                .map_err(|e| format!("name {i}: {e}"))?;
        }
        Ok(())
    }

    fn many_call(&mut self, op: &str, c: usize, arrival: &str) -> Result<Value, String> {
        let (token, ttl) = (token(c), Duration::from_millis(self.ttl * TICK_MS));
        let want = self.wants(c);
        if want.count_ones() == 1 {
            let k = &self.keys[want.trailing_zeros() as usize];
            let call = match op {
                "acquire" => ScriptCall::acquire(k, &token, ttl, Some(&self.place(arrival)?), true),
                "extend" => ScriptCall::extend(k, &token, ttl),
                "release" if self.calls % 2 == 0 => ScriptCall::release(k, &token, true),
                "release" => ScriptCall::release_after_waiting(k, &token),
                _ => return Err(format!("unknown operation {op}")),
            };
            return self.run(&call);
        }
        let keys = [&self.keys[0], &self.keys[1]];
        let call = match op {
            "acquire" => {
                let place = self.place(arrival)?;
                ScriptCall::acquire_many(&keys, &token, ttl, Some(&place), true)
            }
            "extend" => ScriptCall::extend_many(&keys, &token, ttl, false),
            "release" => ScriptCall::release_many(&keys, &token, 1),
            _ => return Err(format!("unknown operation {op}")),
        };
        self.run(&call)
    }

    /// A grant's tokens, one per name the client takes; a refusal's counters of those names,
    /// and the longest time left of their keys held by another (none: not held).
    fn check_many_reply(
        &self,
        got: &Value,
        c: usize,
        reply: &str,
        value: &str,
        names: &[Name],
    ) -> Result<(), String> {
        let want = self.wants(c);
        let mine: Vec<&Expected> = (0..2)
            .filter(|i| want & (1 << i) != 0)
            .map(|i| &names[i].expected)
            .collect();
        let fine = match (reply, got) {
            ("granted" | "refused", v) => match parse_acquire(v, mine.len())? {
                AcquireReply::Granted(f) => {
                    let fences: Vec<String> = f.iter().map(u64::to_string).collect();
                    reply == "granted" && fences.join(",") == value
                }
                AcquireReply::Held { pttl, fences, .. } => {
                    let left = pttl.map(|p| ticks(p.as_millis() as i64));
                    let others = mine.iter().filter_map(|e| e.key.filter(|k| k.0 != c));
                    reply == "refused"
                        && fences == mine.iter().map(|e| e.counter).collect::<Vec<_>>()
                        && left == others.map(|k| k.1).max()
                }
            },
            ("extended" | "released", Value::Int(1)) => true,
            ("gone", Value::Int(0)) | ("taken", Value::Int(-1)) => true,
            _ => false,
        };
        super::answered(fine, got, reply, value)
    }
}

/// `KEY LEFT COUNTER HANDED FENCE WOKEN PLACE...` of one name.
fn parse_name(words: &[&str]) -> Result<Name, String> {
    let [key, left, counter, handed, fence, woken, line @ ..] = words else {
        return Err(format!("a name's state is cut short: {words:?}"));
    };
    let ours = [*key, left, counter, handed, fence];
    let expected = parse_expected(&[&ours[..], line].concat())?;
    let woken = match *woken {
        "-" => None,
        w => Some(number(w)? as usize),
    };
    Ok(Name { expected, woken })
}
