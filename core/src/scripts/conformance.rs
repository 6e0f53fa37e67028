//! The model held to the scripts (docs/SAFETY.md, "The model held to the scripts"): the runs
//! the lock model (`model/`, `fencelock-model traces`) wrote to `conformance.trace` replayed
//! step by step through the real scripts, as the core calls them, on a real redis-server, and
//! after every step what the scripts answered, the message they published and what they left
//! (the key, its holder and TTL, the fencing counter, the line with each place's arrival and
//! lifetime) compared with what the model says. A script whose behaviour the model does not
//! know fails here, as does a model that no longer matches the scripts.
//!
//! The runs of a semaphore and a read-write lock (`conformance/permits.trace`, replayed by
//! [`permits`]) hold the permit scripts to the model the same way, and the lock's runs on a
//! Redis 6.2 cluster's node whose slot moves (`conformance/broadcast.trace`) hold the scripts
//! as such a cluster is told to run them (`CPUBLISH`: a waiter the server does not see listen
//! is woken and the name kept for it).
//!
//! The replay stands for what the model abstracts: a tick is [`TICK_MS`] of the server's time
//! (every TTL and place deadline moved back by it: nothing real waits), a client listening is
//! a subscription to its wake-up channel, its crash the subscription's end.

use std::time::Duration;

use redis::{Connection, Value};

mod election;
mod many;
mod permits;

use super::{parse_acquire, AcquireReply, ScriptCall};
use crate::conn::Route;
use crate::keys::LockKeys;
use crate::queue::Place;
use crate::token::WAKE_ID_LEN;

/// The runs `fencelock-model traces` writes with its defaults (stage 15-model checks that the
/// model still writes exactly this).
const TRACE: &str = include_str!("conformance.trace");

/// The runs of `fencelock-model traces --broadcast`.
const BROADCAST_TRACE: &str = include_str!("conformance/broadcast.trace");

/// A model tick on the server: long beside the time a whole run takes, so that no key or
/// place ends in another tick than the model's for the time the replay itself takes.
const TICK_MS: u64 = 10_000;

/// Moves the server's clock for a name's keys (`KEYS`: the name, the leases, the counter,
/// the queue, its deadlines, the waiters' entries) one tick on: every TTL, every lease's end
/// and every place's deadline `ARGV[1]` ms nearer (what has nothing left is deleted, as its
/// expiry would).
const TICK: &str = r"
local step = tonumber(ARGV[1])
for _, key in ipairs(KEYS) do
  local left = redis.call('PTTL', key)
  if left > 0 then
    if left <= step then redis.call('DEL', key) else redis.call('PEXPIRE', key, left - step) end
  end
end
for _, times in ipairs({KEYS[2], KEYS[5]}) do
  for _, token in ipairs(redis.call('ZRANGE', times, 0, -1)) do
    redis.call('ZINCRBY', times, -step, token)
  end
end
return 0
";

#[test]
fn the_scripts_do_what_the_model_of_the_lock_says() {
    replay_runs("FENCELOCK_CONFORMANCE_TRACE", TRACE);
}

#[test]
fn the_scripts_on_a_redis_6_2_cluster_do_what_the_model_says() {
    replay_runs("FENCELOCK_CONFORMANCE_BROADCAST_TRACE", BROADCAST_TRACE);
}

/// Replays the runs in the file the environment variable `env` names, or else `committed`,
/// and checks that there were many.
fn replay_runs(env: &str, committed: &str) {
    let trace = match std::env::var(env) {
        Ok(path) => std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}")),
        Err(_) => committed.to_owned(),
    };
    let (calls, election_calls) = replay(&trace);
    eprintln!("{calls} script calls matched the model, and {election_calls} of the election's");
    assert!(calls > 1000, "only {calls} script calls");
}

/// `Ok` when the script's answer `got` was `fine` by the model's `reply` and `value`.
fn answered(fine: bool, got: &Value, reply: &str, value: &str) -> Result<(), String> {
    match fine {
        true => Ok(()),
        false => Err(format!(
            "the script answered {got:?}, the model {reply} {value}"
        )),
    }
}

/// Replays `trace` (or the file `FENCELOCK_CONFORMANCE_TRACE` names) on a new server.
fn replay(trace: &str) -> (usize, usize) {
    let srv = fencelock_testkit::RedisServer::start();
    let mut replay = Replay::new(redis::Client::open(srv.url()).unwrap());
    for (no, line) in trace.lines().enumerate() {
        if let Err(e) = replay.step(line) {
            panic!("conformance trace line {}: {line}\n{e}", no + 1);
        }
    }
    (replay.calls, replay.election_calls)
}

/// The real side of a run: a server, the keys of two names (in different hash slots: each
/// with a counter of its own), a subscription per listening client and name it waits for, for
/// a lock on several names the names each client takes (a bitmask), and for a semaphore or
/// read-write lock each client's kind of lease.
struct Replay {
    client: redis::Client,
    con: Connection,
    keys: [LockKeys; 2],
    ttl: u64,
    place_life: u64,
    subs: Vec<[Option<Sub>; 2]>,
    wants: Vec<u8>,
    permits: Option<permits::Kinds>,
    /// How the scripts are called: as on one server, or (`model broadcast`) as on a cluster
    /// without sharded pub/sub.
    route: Route,
    calls: usize,
    /// The election's script calls made beside the model's (`election.rs`), counted apart:
    /// `calls` picks which release each step runs.
    election_calls: usize,
    /// A subscription to name 0's release channel, where the election's scripts announce.
    observer: Option<Sub>,
}

/// What the model says a step leaves: `(holder, ticks left)`, the counter, the waiter handed
/// the lock with its token, and the line's `(client, arrival, ticks left)`.
struct Expected {
    key: Option<(usize, u64)>,
    counter: u64,
    handed: Option<(usize, u64)>,
    line: Vec<(usize, u64, u64)>,
}

impl Replay {
    fn new(client: redis::Client) -> Replay {
        Replay {
            con: client.get_connection().unwrap(),
            client,
            keys: [&b"name"[..], b"other"].map(|name| LockKeys::new(b"conformance:", name)),
            ttl: 0,
            place_life: 0,
            subs: Vec::new(),
            wants: Vec::new(),
            permits: None,
            route: Route::Single,
            calls: 0,
            election_calls: 0,
            observer: None,
        }
    }

    fn step(&mut self, line: &str) -> Result<(), String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["model", clients, ttl, place_life] => self.model(clients, ttl, place_life, None),
            ["model", "broadcast", clients, ttl, place_life] => {
                self.model(clients, ttl, place_life, None)?;
                self.route = Route::Cluster(false);
                Ok(())
            }
            ["model", "many", clients, ttl, place_life, wants] => {
                self.model(clients, ttl, place_life, None)?;
                self.wants = wants
                    .split(',')
                    .map(|w| number(w).map(|w| w as u8))
                    .collect::<Result<_, _>>()?;
                Ok(())
            }
            ["model", kind, clients, ttl, place_life, kinds @ ..] => {
                let kinds = permits::Kinds::parse(kind, kinds)?;
                self.model(clients, ttl, place_life, Some(kinds))
            }
            ["run", _] => {
                for sub in self.subs.iter_mut().flatten() {
                    sub.take().map(Sub::close).transpose()?;
                }
                self.observer.take().map(Sub::close).transpose()?;
                redis::cmd("FLUSHALL")
                    .query::<()>(&mut self.con)
                    .map_err(|e| e.to_string())
            }
            ["tick"] => self.tick(),
            [op, c, arrival, listening, "->", rest @ ..] if self.permits.is_some() => {
                self.listen(listening)?;
                self.permit_step(op, number(c)? as usize, arrival, rest)
            }
            [op, c, arrival, listening, "->", rest @ ..] if !self.wants.is_empty() => {
                self.listen(listening)?;
                self.many_step(op, number(c)? as usize, arrival, rest)
            }
            [op, c, arrival, listening, "->", reply, value, rest @ ..] => {
                let c = number(c)? as usize;
                self.listen(listening)?;
                let got = self.call(op, c, arrival)?;
                self.calls += 1;
                let expected = parse_expected(rest)?;
                self.check_reply(&got, reply, value, &expected)?;
                self.check_name(0, &expected)?;
                let want: Vec<_> = expected.handed_message().into_iter().collect();
                self.check_messages(0, &want)?;
                self.check_terms(&expected)
            }
            _ => Err("not a trace line".to_owned()),
        }
    }

    /// A model's bounds (ticks), and `kinds` of a semaphore's or read-write lock's clients.
    fn model(
        &mut self,
        clients: &str,
        ttl: &str,
        place_life: &str,
        kinds: Option<permits::Kinds>,
    ) -> Result<(), String> {
        self.subs = (0..number(clients)?).map(|_| [None, None]).collect();
        self.route = Route::Single;
        (self.ttl, self.place_life) = (number(ttl)?, number(place_life)?);
        (self.permits, self.wants) = (kinds, Vec::new());
        Ok(())
    }

    /// The names client `c` waits for, as a bitmask.
    fn wants(&self, c: usize) -> u8 {
        self.wants.get(c).copied().unwrap_or(1)
    }

    fn tick(&mut self) -> Result<(), String> {
        for k in &self.keys {
            redis::cmd("EVAL")
                .arg(TICK)
                .arg(6)
                .arg(&k.lock)
                .arg(&k.holders)
                .arg(&k.fence)
                .arg(&k.queue)
                .arg(&k.deadlines)
                .arg(&k.ttls)
                .arg(TICK_MS)
                .query::<i64>(&mut self.con)
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Subscribes the clients the model has listening, and only them.
    fn listen(&mut self, listening: &str) -> Result<(), String> {
        let on: Vec<usize> = match listening {
            "-" => Vec::new(),
            l => l
                .split(',')
                .map(|c| number(c).map(|c| c as usize))
                .collect::<Result<_, _>>()?,
        };
        for c in 0..self.subs.len() {
            for i in 0..2 {
                let wanted = on.contains(&c) && self.wants(c) & (1 << i) != 0;
                match (wanted, self.subs[c][i].is_some()) {
                    (true, false) => {
                        self.subs[c][i] = Some(Sub::open(&self.client, &self.channel(c, i))?)
                    }
                    (false, true) => self.subs[c][i].take().unwrap().close()?,
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// The place of an acquire with the model's `arrival`.
    fn place(&self, arrival: &str) -> Result<Place, String> {
        Ok(Place {
            // The model's ticks start at 0; an arrival of 0 asks for no place.
            arrival: number(arrival)? + 1,
            lasts: Duration::from_millis(self.place_life * TICK_MS),
        })
    }

    /// Runs the script the core would send for `op`, as `c`.
    fn call(&mut self, op: &str, c: usize, arrival: &str) -> Result<Value, String> {
        let (token, ttl) = (token(c), Duration::from_millis(self.ttl * TICK_MS));
        let call = match op {
            "acquire" => {
                let place = self.place(arrival)?;
                ScriptCall::acquire(&self.keys[0], &token, ttl, Some(&place), true)
            }
            "extend" => ScriptCall::extend(&self.keys[0], &token, ttl),
            // Both releases, which must do the same: the lean path's and the one of a holder
            // that waited in line.
            "release" if self.calls % 2 == 0 => ScriptCall::release(&self.keys[0], &token, true),
            "release" => ScriptCall::release_after_waiting(&self.keys[0], &token),
            _ => return Err(format!("unknown operation {op}")),
        };
        self.run(&call)
    }

    /// Runs `call` (loading its script when the server does not have it).
    fn run(&mut self, call: &ScriptCall) -> Result<Value, String> {
        let cmd = call.cmd_for(self.route);
        match cmd.query::<Value>(&mut self.con) {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                redis::cmd("SCRIPT")
                    .arg("LOAD")
                    .arg(call.source())
                    .query::<String>(&mut self.con)
                    .map_err(|e| e.to_string())?;
                cmd.query(&mut self.con).map_err(|e| e.to_string())
            }
            r => r.map_err(|e| e.to_string()),
        }
    }

    fn check_reply(
        &self,
        got: &Value,
        reply: &str,
        value: &str,
        expected: &Expected,
    ) -> Result<(), String> {
        let fine = match (reply, got) {
            ("granted" | "refused", v) => match parse_acquire(v, 1)? {
                AcquireReply::Granted(f) => reply == "granted" && f[0] == number(value)?,
                AcquireReply::Held { pttl, fences, .. } => {
                    let left = pttl.map(|p| ticks(p.as_millis() as i64));
                    reply == "refused"
                        && fences[0] == expected.counter
                        && left == expected.key.map(|k| k.1)
                }
            },
            ("extended" | "released", Value::Int(1)) => true,
            ("gone", Value::Int(0)) | ("taken", Value::Int(-1)) => true,
            _ => false,
        };
        answered(fine, got, reply, value)
    }

    /// Name `i`'s key, counter and line, read from the server, against the model's.
    fn check_name(&mut self, i: usize, expected: &Expected) -> Result<(), String> {
        let q = |cmd: &mut redis::Cmd, con: &mut Connection| {
            cmd.query::<Value>(con).map_err(|e| e.to_string())
        };
        let k = &self.keys[i];
        let holder = q(redis::cmd("GET").arg(&k.lock), &mut self.con)?;
        let pttl: i64 = redis::cmd("PTTL")
            .arg(&k.lock)
            .query(&mut self.con)
            .unwrap();
        let key = match holder {
            Value::Nil => None,
            Value::BulkString(t) => Some((client_of(&t)?, ticks(pttl))),
            v => return Err(format!("the lock key holds {v:?}")),
        };
        let counter: Option<u64> = redis::cmd("GET")
            .arg(&k.fence)
            .query(&mut self.con)
            .unwrap();
        let line = self.line(i)?;
        let got = (key, counter.unwrap_or(0), line);
        let want = (expected.key, expected.counter, expected.line.clone());
        match got == want {
            true => Ok(()),
            false => Err(format!(
                "the server holds (key, counter, line) {got:?}, the model {want:?}"
            )),
        }
    }

    /// Name `i`'s places whose time has not come, as `(client, arrival, ticks left)` in order.
    fn line(&mut self, i: usize) -> Result<Vec<(usize, u64, u64)>, String> {
        let k = &self.keys[i];
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(&mut self.con).unwrap();
        let now = secs * 1000 + micros / 1000;
        let places: Vec<(Vec<u8>, u64)> = redis::cmd("ZRANGE")
            .arg(&k.queue)
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut self.con)
            .map_err(|e| e.to_string())?;
        let mut line = Vec::new();
        for (token, arrival) in places {
            let deadline: Option<f64> = redis::cmd("ZSCORE")
                .arg(&k.deadlines)
                .arg(&token)
                .query(&mut self.con)
                .unwrap();
            let left = deadline.map_or(0, |d| d as i64 - now as i64);
            if left > 0 {
                line.push((client_of(&token)?, arrival - 1, ticks(left)));
            }
        }
        Ok(line)
    }

    /// The messages every client subscribed for name `i` got: the hand-offs (and wake-ups)
    /// the model made, as `(waiter, token or 0, its place's arrival on the server)`, and no
    /// other.
    fn check_messages(&mut self, i: usize, handed: &[(usize, u64, u64)]) -> Result<(), String> {
        for c in 0..self.subs.len() {
            let Some(sub) = &mut self.subs[c][i] else {
                continue;
            };
            let got = sub.drain()?;
            let want: Vec<Vec<u8>> = handed
                .iter()
                .filter(|h| h.0 == c)
                .map(|&(_, fence, arrival)| {
                    [format!("{fence} {arrival} ").as_bytes(), &token(c)].concat()
                })
                .collect();
            if got != want {
                let show = |m: &[Vec<u8>]| {
                    m.iter()
                        .map(|b| String::from_utf8_lossy(b).into_owned())
                        .collect::<Vec<_>>()
                };
                return Err(format!(
                    "client {c} was told {:?}, the model says {:?}",
                    show(&got),
                    show(&want)
                ));
            }
        }
        match handed.iter().find(|h| self.subs[h.0][i].is_none()) {
            Some((w, ..)) => Err(format!(
                "the model handed the lock to client {w}, who does not listen"
            )),
            None => Ok(()),
        }
    }

    /// Client `c`'s wake-up channel for name `i`.
    fn channel(&self, c: usize, i: usize) -> Vec<u8> {
        [&self.keys[i].channel[..], b"|", &token(c)[..WAKE_ID_LEN]].concat()
    }
}

/// Client `c`'s token: its first [`WAKE_ID_LEN`] bytes name its wake-up channel, and tokens
/// sort as their clients do (the queue orders equal arrivals by token, the model by client).
fn token(c: usize) -> Vec<u8> {
    format!("conformance{c:05}.token").into_bytes()
}

fn client_of(token: &[u8]) -> Result<usize, String> {
    std::str::from_utf8(token.get(11..16).unwrap_or_default())
        .ok()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("not a client's token: {}", String::from_utf8_lossy(token)))
}

/// Whole ticks left in `ms` (a part of one counts: nothing has moved it on yet).
fn ticks(ms: i64) -> u64 {
    (ms.max(0) as u64).div_ceil(TICK_MS)
}

fn number(word: &str) -> Result<u64, String> {
    word.parse()
        .map_err(|_| format!("{word:?} is not a number"))
}

impl Expected {
    /// The message to the waiter the model handed the lock: `(waiter, token, its place's
    /// arrival on the server)`.
    fn handed_message(&self) -> Option<(usize, u64, u64)> {
        let (w, fence) = self.handed?;
        let place = self.line.iter().find(|p| p.0 == w);
        Some((w, fence, place.map_or(0, |p| p.1 + 1)))
    }
}

/// `KEY LEFT COUNTER HANDED FENCE LINE...` of a trace line.
fn parse_expected(rest: &[&str]) -> Result<Expected, String> {
    let [holder, left, counter, handed, fence, line @ ..] = rest else {
        return Err("the model's state is cut short".to_owned());
    };
    let pair = |a: &str, b: &str| -> Result<Option<(usize, u64)>, String> {
        match a {
            "-" => Ok(None),
            a => Ok(Some((number(a)? as usize, number(b)?))),
        }
    };
    let place = |p: &&str| -> Result<(usize, u64, u64), String> {
        let n: Vec<u64> = p.split(':').map(number).collect::<Result<_, _>>()?;
        match n.as_slice() {
            [c, arrival, left] => Ok((*c as usize, *arrival, *left)),
            _ => Err(format!("not a place: {p}")),
        }
    };
    Ok(Expected {
        key: pair(holder, left)?,
        counter: number(counter)?,
        handed: pair(handed, fence)?,
        line: line.iter().map(place).collect::<Result<_, _>>()?,
    })
}

/// A client's subscription to its wake-up channel, on a connection of its own. Every
/// exchange waits for the server's answer, so the server knows a subscription before the
/// next script runs, and a message published before it is read before the answer.
struct Sub {
    con: Connection,
}

impl Sub {
    fn open(client: &redis::Client, channel: &[u8]) -> Result<Sub, String> {
        let con = client.get_connection().map_err(|e| e.to_string())?;
        con.set_read_timeout(Some(Duration::from_secs(10)))
            .map_err(|e| e.to_string())?;
        let mut sub = Sub { con };
        let early = sub.exchange(redis::cmd("SUBSCRIBE").arg(channel), "subscribe")?;
        match early.is_empty() {
            true => Ok(sub),
            false => Err(format!("messages before the subscription: {early:?}")),
        }
    }

    /// The messages published to the channel so far.
    fn drain(&mut self) -> Result<Vec<Vec<u8>>, String> {
        self.exchange(&redis::cmd("PING"), "pong")
    }

    fn close(mut self) -> Result<(), String> {
        let left = self.exchange(&redis::cmd("UNSUBSCRIBE"), "unsubscribe")?;
        match left.is_empty() {
            true => Ok(()),
            false => Err(format!("messages nobody expected: {left:?}")),
        }
    }

    /// Sends `cmd` and reads up to its answer, whose first word is `answer`; returns the
    /// messages read before it.
    fn exchange(&mut self, cmd: &redis::Cmd, answer: &str) -> Result<Vec<Vec<u8>>, String> {
        self.con
            .send_packed_command(&cmd.get_packed_command())
            .map_err(|e| e.to_string())?;
        let mut messages = Vec::new();
        loop {
            let v = self.con.recv_response().map_err(|e| e.to_string())?;
            let Value::Array(parts) = &v else {
                return Err(format!("{v:?} on a subscribed connection"));
            };
            match parts.as_slice() {
                [Value::BulkString(kind), ..] if kind == answer.as_bytes() => return Ok(messages),
                [Value::BulkString(kind), _, Value::BulkString(payload)] if kind == b"message" => {
                    messages.push(payload.clone())
                }
                _ => return Err(format!("{v:?} on a subscribed connection")),
            }
        }
    }
}
