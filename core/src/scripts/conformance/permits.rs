//! The permit scripts (`permits*.lua`) held to the model of a semaphore and a read-write lock
//! (`model/src/permits.rs`; `fencelock-model traces --permits` wrote `permits.trace`): after
//! every script call the reply (a refusal's time until the first lease ends included), the
//! messages to each waiter handed a lease, the leases (holder, ticks left, weight), the
//! fencing counter and the line, compared with the model's; and the name's weights held kept
//! equal to the sum of its holders' weights.

use redis::Value;

use super::super::{parse_acquire, AcquireReply, ScriptCall};
use super::{client_of, number, ticks, token, Replay, TICK_MS};
use crate::kind::LeaseKind;

/// The runs `fencelock-model traces --permits` writes with its defaults (stage 15-model
/// checks that the model still writes exactly this).
const TRACE: &str = include_str!("permits.trace");

#[test]
fn the_permit_scripts_do_what_the_model_of_a_semaphore_and_a_read_write_lock_says() {
    super::replay_runs("FENCELOCK_CONFORMANCE_PERMITS_TRACE", TRACE);
}

/// A line as the replay compares it: `(client, arrival, ticks left)` per place.
type Line = Vec<(usize, u64, u64)>;

/// Each client's kind of lease.
pub(super) struct Kinds(Vec<LeaseKind>);

impl Kinds {
    /// `semaphore LIMIT COUNTS` or `rwlock ROLES` of a model line (`COUNTS` as `1,1,2`,
    /// `ROLES` as `r,r,w`).
    pub(super) fn parse(kind: &str, words: &[&str]) -> Result<Kinds, String> {
        let each = |list: &str, f: &dyn Fn(&str) -> Result<LeaseKind, String>| {
            list.split(',').map(f).collect::<Result<_, _>>().map(Kinds)
        };
        match (kind, words) {
            ("semaphore", [limit, counts]) => {
                let limit = number(limit)? as u32;
                each(counts, &|n| {
                    let count = number(n)? as u32;
                    Ok(LeaseKind::Permits { count, limit })
                })
            }
            ("rwlock", [roles]) => each(roles, &|r| match r {
                "r" => Ok(LeaseKind::Read),
                "w" => Ok(LeaseKind::Write),
                r => Err(format!("not a role: {r}")),
            }),
            _ => Err(format!("not a model of permits: {kind} {words:?}")),
        }
    }

    fn weight(&self, c: usize) -> u64 {
        self.0[c].weights().expect("permits").2
    }
}

impl Replay {
    /// Runs `c`'s `op` through the permit script the core would send, and checks what it
    /// answered, published and left against `rest`, the model's words after `->`.
    pub(super) fn permit_step(
        &mut self,
        op: &str,
        c: usize,
        arrival: &str,
        rest: &[&str],
    ) -> Result<(), String> {
        let [reply, value, counter, handed, rest @ ..] = rest else {
            return Err("the model's state is cut short".to_owned());
        };
        let at = |w: &str| rest.iter().position(|&x| x == w);
        let (Some(l), Some(q)) = (at("leases"), at("line")) else {
            return Err("no leases or line".to_owned());
        };
        let numbers = |words: &[&str]| -> Result<Vec<Vec<u64>>, String> {
            let split = |w: &&str| w.split(':').map(number).collect::<Result<Vec<_>, _>>();
            words.iter().map(split).collect()
        };
        let leases = numbers(&rest[l + 1..q])?;
        let line = numbers(&rest[q + 1..])?;
        let handed = match *handed {
            "-" => Vec::new(),
            h => numbers(&h.split(',').collect::<Vec<_>>())?,
        };
        // Where each waiter stood before the call: a message names its place's arrival.
        let before = self.line(0)?;
        let got = self.permit_call(op, c, arrival)?;
        self.calls += 1;
        let counter = number(counter)?;
        self.check_permit_reply(&got, reply, value, counter)?;
        let got = (self.leases()?, counter_of(self)?, self.line(0)?);
        let want: (Vec<(usize, u64)>, u64, Line) = (
            leases.iter().map(|l| (l[0] as usize, l[1])).collect(),
            counter,
            line.iter().map(|p| (p[0] as usize, p[1], p[2])).collect(),
        );
        if got != want {
            return Err(format!(
                "the server holds (leases, counter, line) {got:?}, the model {want:?}"
            ));
        }
        let messages: Vec<(usize, u64, u64)> = handed
            .iter()
            .map(|h| {
                let place = before.iter().find(|p| p.0 == h[0] as usize);
                (h[0] as usize, h[1], place.map_or(0, |p| p.1 + 1))
            })
            .collect();
        self.check_messages(0, &messages)
    }

    fn permit_call(&mut self, op: &str, c: usize, arrival: &str) -> Result<Value, String> {
        let kind = self.permits.as_ref().expect("permits").0[c];
        let (token, ttl) = (
            token(c),
            std::time::Duration::from_millis(self.ttl * TICK_MS),
        );
        let keys = &self.keys[0];
        let call = match op {
            "acquire" => {
                let place = self.place(arrival)?;
                ScriptCall::permits_acquire(keys, &token, (ttl, kind), Some(&place), true)
            }
            "extend" => ScriptCall::permits_extend(keys, &token, ttl, false),
            // A holder's release, and a holder's that waited in line: the same to the model.
            "release" => ScriptCall::permits_release(keys, &token, [1, 3][self.calls % 2]),
            _ => return Err(format!("unknown operation {op}")),
        };
        self.run(&call)
    }

    fn check_permit_reply(
        &self,
        got: &Value,
        reply: &str,
        value: &str,
        counter: u64,
    ) -> Result<(), String> {
        let fine = match (reply, got) {
            ("granted" | "refused", v) => match parse_acquire(v, 1)? {
                AcquireReply::Granted(f) => reply == "granted" && f[0] == number(value)?,
                AcquireReply::Held {
                    pttl,
                    fences,
                    same_token,
                } => {
                    let first_end = pttl.map(|p| ticks(p.as_millis() as i64).to_string());
                    reply == "refused"
                        && !same_token
                        && fences[0] == counter
                        && first_end.as_deref().unwrap_or("-") == value
                }
            },
            ("extended" | "released", Value::Int(1)) | ("gone", Value::Int(0)) => true,
            _ => false,
        };
        super::answered(fine, got, reply, value)
    }

    /// The leases that have not ended, as `(client, ticks left)` by client; each with its
    /// client's weight on the name's key, whose weights held are the sum of its holders'.
    fn leases(&mut self) -> Result<Vec<(usize, u64)>, String> {
        let (name, holders) = (self.keys[0].lock.clone(), self.keys[0].holders.clone());
        let (secs, micros): (u64, u64) = query(&mut redis::cmd("TIME"), self)?;
        let now = (secs * 1000 + micros / 1000) as i64;
        let ends: Vec<(Vec<u8>, i64)> = query(
            redis::cmd("ZRANGE")
                .arg(holders)
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES"),
            self,
        )?;
        let fields: Vec<(Vec<u8>, Vec<u8>)> = query(redis::cmd("HGETALL").arg(name), self)?;
        let kinds = self.permits.as_ref().expect("permits");
        let number_of = |v: &[u8]| String::from_utf8_lossy(v).parse::<u64>().ok();
        let mut held = None;
        let mut weights = Vec::new();
        for (field, value) in &fields {
            match field.split_first() {
                Some((b'=', t)) => weights.push((t.to_vec(), number_of(value))),
                _ if field == b"held" => held = number_of(value),
                _ => {}
            }
        }
        let sum: u64 = weights.iter().map(|w| w.1.unwrap_or(0)).sum();
        if !fields.is_empty() && held != Some(sum) {
            return Err(format!(
                "the name holds {held:?} but its holders weigh {sum}"
            ));
        }
        let mut leases = Vec::new();
        for (t, end) in ends.into_iter().filter(|e| e.1 > now) {
            let c = client_of(&t)?;
            let weight = weights.iter().find(|w| w.0 == t).and_then(|w| w.1);
            if weight != Some(kinds.weight(c)) {
                return Err(format!(
                    "client {c}'s lease weighs {weight:?} on the server"
                ));
            }
            leases.push((c, ticks(end - now)));
        }
        leases.sort();
        Ok(leases)
    }
}

fn counter_of(replay: &mut Replay) -> Result<u64, String> {
    let fence = replay.keys[0].fence.clone();
    let counter: Option<u64> = query(redis::cmd("GET").arg(fence), replay)?;
    Ok(counter.unwrap_or(0))
}

fn query<T: redis::FromRedisValue>(cmd: &mut redis::Cmd, replay: &mut Replay) -> Result<T, String> {
    cmd.query(&mut replay.con).map_err(|e| e.to_string())
}
