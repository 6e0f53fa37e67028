//! Several script calls of one process in one script call (issue 37; [`crate::batch`] decides
//! when).
//!
//! The batch script holds each batchable script's code unchanged as a function of its own
//! `KEYS` and `ARGV` (`batch.lua` around them), runs the calls one after the other, each in
//! `pcall`, and answers one reply per call: `{1, reply}`, or `{0, error}` for a call that
//! failed (a key of the wrong type, ...) with what it wrote before failing kept, as a script
//! of its own would have. One call's failure never touches another's. So each call's
//! semantics are exactly those of its own script: the same code runs, on the same keys, in
//! the same order the server would have run the separate calls.

use std::sync::LazyLock;

use redis::{Script, Value};

use super::{permits, ScriptCall, ACQUIRE, ACQUIRE_SRC, EXTEND, EXTEND_SRC, RELEASE, RELEASE_SRC};

/// The scripts a batch may carry, by their number in the batch (`OP` in `batch.lua`).
fn batchable() -> [(&'static Script, &'static str); 6] {
    let [p_acquire, p_release, p_extend] = permits::batchable();
    [
        (&ACQUIRE, ACQUIRE_SRC),
        (&RELEASE, RELEASE_SRC),
        (&EXTEND, EXTEND_SRC),
        p_acquire,
        p_release,
        p_extend,
    ]
}

/// The batch script's code, and the line each carried script's first line has in it (to
/// name a failed command by its line in its own script, as a call of its own would).
struct Assembled {
    source: String,
    first_lines: Vec<usize>,
}

static ASSEMBLED: LazyLock<Assembled> = LazyLock::new(|| {
    let (head, tail) = include_str!("batch.lua")
        .split_once("-- @CALLS@\n")
        .expect("batch.lua marks where the calls go");
    let mut source = head.to_owned();
    let mut first_lines = Vec::new();
    for (op, (_, code)) in batchable().iter().enumerate() {
        source.push_str(&format!("calls[{}] = function(KEYS, ARGV)\n", op + 1));
        first_lines.push(source.lines().count() + 1);
        source.push_str(code);
        source.push_str("\nend\n");
    }
    source.push_str(tail);
    Assembled {
        source,
        first_lines,
    }
});

static BATCH: LazyLock<Script> = LazyLock::new(|| Script::new(&ASSEMBLED.source));

/// One call as a batch carries it: which script, its keys and its arguments.
pub(crate) struct Carried {
    op: usize,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Carried {
    /// The carried script's code.
    pub fn source(&self) -> &'static str {
        batchable()[self.op].1
    }

    /// The call as a call of its own (a batch of one).
    pub fn alone(&self) -> ScriptCall {
        let keys: Vec<&[u8]> = self.keys.iter().map(Vec::as_slice).collect();
        let args: Vec<&[u8]> = self.args.iter().map(Vec::as_slice).collect();
        ScriptCall::unbounded(batchable()[self.op], &keys, (&args, false))
    }
}

impl ScriptCall {
    /// Whether a batch may carry this call.
    pub fn is_batchable(&self) -> bool {
        self.op().is_some()
    }

    fn op(&self) -> Option<usize> {
        batchable()
            .iter()
            .position(|(script, _)| std::ptr::eq(*script, self.script))
    }

    /// This call as a batch carries it, when its script is one a batch may carry.
    pub fn carried(&self) -> Option<Carried> {
        let op = self.op()?;
        let mut parts = self.cmd.args_iter().skip(3).filter_map(|a| match a {
            redis::Arg::Simple(b) => Some(b.to_vec()),
            _ => None,
        });
        let keys = parts.by_ref().take(self.keys).collect();
        Some(Carried {
            op,
            keys,
            args: parts.collect(),
        })
    }

    /// The batch of `calls`, in their order. Reply: [`parse_batch`].
    pub fn batch(calls: &[&Carried]) -> ScriptCall {
        let keys: Vec<&[u8]> = calls
            .iter()
            .flat_map(|c| c.keys.iter().map(Vec::as_slice))
            .collect();
        let heads: Vec<[String; 3]> = calls
            .iter()
            .map(|c| [c.op + 1, c.keys.len(), c.args.len()].map(|n| n.to_string()))
            .collect();
        let args: Vec<&[u8]> = calls
            .iter()
            .zip(&heads)
            .flat_map(|(c, head)| {
                head.iter()
                    .map(String::as_bytes)
                    .chain(c.args.iter().map(Vec::as_slice))
            })
            .collect();
        // The scripts carried publish with PUBLISH only off a cluster, where batches go.
        ScriptCall::unbounded((&BATCH, batch_source()), &keys, (&args, false))
    }
}

/// The batch script's code.
pub(crate) fn batch_source() -> &'static str {
    &ASSEMBLED.source
}

/// The replies of a batch of `calls`, one per call in their order: the call's own reply, or
/// its error as a call of its own would have had it (the server's words, the line in its own
/// script).
pub(crate) fn parse_batch(reply: Value, calls: &[&Carried]) -> Vec<redis::RedisResult<Value>> {
    let replies = match reply {
        Value::Array(replies) if replies.len() == calls.len() => replies,
        other => {
            let wrong = || {
                redis::RedisError::from((
                    redis::ErrorKind::UnexpectedReturnType,
                    "a batch's reply",
                    format!("{} calls, reply {other:?}", calls.len()),
                ))
            };
            return calls.iter().map(|_| Err(wrong())).collect();
        }
    };
    replies
        .into_iter()
        .zip(calls)
        .map(|(reply, call)| one_reply(reply, call.op))
        .collect()
}

fn one_reply(reply: Value, op: usize) -> redis::RedisResult<Value> {
    let mut parts = match reply {
        Value::Array(parts) => parts.into_iter(),
        other => return Err(unexpected(&other)),
    };
    match (parts.next(), parts.next()) {
        (Some(Value::Int(1)), reply) => Ok(reply.unwrap_or(Value::Nil)),
        (Some(Value::Int(0)), Some(Value::BulkString(error))) => {
            let said = String::from_utf8_lossy(&error);
            let own = in_own_script(&said, op);
            // The server's error as a reply of its own would have carried it.
            let raw = format!("-{}\r\n", own.replace(['\r', '\n'], " "));
            redis::parse_redis_value(raw.as_bytes())?.extract_error()
        }
        (first, _) => Err(unexpected(&first.unwrap_or(Value::Nil))),
    }
}

fn unexpected(value: &Value) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::UnexpectedReturnType,
        "a batched call's reply",
        format!("{value:?}"),
    ))
}

/// `said` with the line the server names (`@user_script:N`, a line of the batch script) made
/// a line of the carried script `op`.
fn in_own_script(said: &str, op: usize) -> String {
    const AT: &str = "@user_script:";
    let Some((before, rest)) = said.split_once(AT) else {
        return said.to_owned();
    };
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let Ok(line) = rest[..digits].parse::<usize>() else {
        return said.to_owned();
    };
    let own = (line + 1).saturating_sub(ASSEMBLED.first_lines[op]);
    format!("{before}{AT}{own}{}", &rest[digits..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_carried_script_s_lines_are_found_again() {
        let lines: Vec<&str> = ASSEMBLED.source.lines().collect();
        for (op, (_, code)) in batchable().iter().enumerate() {
            let first = ASSEMBLED.first_lines[op];
            assert_eq!(lines[first - 1], code.lines().next().unwrap());
            let said = format!("ERR boom script: x, on @user_script:{}.", first + 4);
            assert_eq!(
                in_own_script(&said, op),
                "ERR boom script: x, on @user_script:5."
            );
        }
    }
}
