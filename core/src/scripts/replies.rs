//! The scripts' replies, parsed into what the callers use; anything else says what came.

use std::time::Duration;

use redis::Value;

/// One server's answer to an acquire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum AcquireReply {
    /// Granted, at these fencing counters (one per name).
    Granted(Vec<u64>),
    /// Held by another owner, for this long (`None`: no expiry), the counters at these values
    /// (one per name); `same_token`: the owner holds it with this call's token (another
    /// caller's acquisition with the same token).
    Held {
        pttl: Option<Duration>,
        fences: Vec<u64>,
        same_token: bool,
    },
}

/// Parses the acquire scripts' reply for `names` names: `{1, counter...}` or
/// `{0, pttl, counter..., same}`.
pub(crate) fn parse_acquire(v: &Value, names: usize) -> Result<AcquireReply, String> {
    let bad = || format!("acquire script returned {v:?}");
    let Value::Array(items) = v else {
        return Err(bad());
    };
    let ints: Vec<i64> = items
        .iter()
        .map(|i| match i {
            Value::Int(n) => Some(*n),
            _ => None,
        })
        .collect::<Option<_>>()
        .ok_or_else(bad)?;
    let counters = |c: &[i64]| -> Option<Vec<u64>> {
        (c.len() == names)
            .then(|| c.iter().map(|f| u64::try_from(*f).ok()).collect())
            .flatten()
    };
    match ints.as_slice() {
        [1, fences @ ..] => counters(fences).map(AcquireReply::Granted).ok_or_else(bad),
        [0, pttl, fences @ .., same @ (0 | 1)] => Ok(AcquireReply::Held {
            pttl: u64::try_from(*pttl).ok().map(Duration::from_millis),
            fences: counters(fences).ok_or_else(bad)?,
            same_token: *same == 1,
        }),
        _ => Err(bad()),
    }
}

/// One server's view of a lock: free, or held by a token for a PTTL (`None`: no expiry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Holder {
    Free,
    Held {
        token: Vec<u8>,
        pttl: Option<Duration>,
        /// The holder's note, when it left one (`who.rs`).
        note: Option<Vec<u8>>,
    },
}

/// Parses the inspect script's reply: `{waiters}` or `{token, pttl, waiters, note}`; the
/// holder and how many wait in line (`None`: not counted, the server's ACL lacks `zcard`).
pub(crate) fn parse_inspect(v: &Value) -> Result<(Holder, Option<u64>), String> {
    let bad = || format!("inspect script returned {v:?}");
    let Value::Array(items) = v else {
        return Err(bad());
    };
    let count = |n: &i64| match *n {
        -1 => Ok(None),
        n => u64::try_from(n).map(Some).map_err(|_| bad()),
    };
    match items.as_slice() {
        [Value::Int(waiters)] => Ok((Holder::Free, count(waiters)?)),
        [Value::BulkString(token), Value::Int(pttl), Value::Int(waiters), note] => Ok((
            Holder::Held {
                token: token.clone(),
                pttl: u64::try_from(*pttl).ok().map(Duration::from_millis),
                note: match note {
                    Value::BulkString(n) => Some(n.clone()),
                    _ => None,
                },
            },
            count(waiters)?,
        )),
        _ => Err(bad()),
    }
}

/// One server's view of a semaphore or read-write lock (the permit inspect script).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PermitsView {
    /// `"semaphore"` or `"rwlock"`; empty when the name is free.
    pub kind: String,
    /// The capacity (a semaphore's limit).
    pub limit: u64,
    /// The weights held by leases that have not ended.
    pub held: u64,
    /// How many leases have not ended.
    pub holders: u64,
    /// Places in line.
    pub waiters: u64,
    /// How long the asked token's lease lasts, if it holds one.
    pub mine: Option<Duration>,
}

/// Parses the permit inspect script's reply: `{}` or
/// `{kind, limit, held, holders, waiters, mine}`.
pub(crate) fn parse_permits(v: &Value) -> Result<PermitsView, String> {
    let bad = || format!("permit inspect script returned {v:?}");
    let Value::Array(items) = v else {
        return Err(bad());
    };
    let int = |i: &Value| match i {
        Value::Int(n) => Some(*n),
        _ => None,
    };
    match items.as_slice() {
        [] => Ok(PermitsView::default()),
        [Value::BulkString(kind), rest @ ..] if rest.len() == 5 => {
            let n: Vec<i64> = rest
                .iter()
                .map(int)
                .collect::<Option<_>>()
                .ok_or_else(bad)?;
            let count = |i: usize| u64::try_from(n[i].max(0)).unwrap_or(0);
            Ok(PermitsView {
                kind: String::from_utf8_lossy(kind).into_owned(),
                limit: count(0),
                held: count(1),
                holders: count(2),
                waiters: count(3),
                mine: u64::try_from(n[4]).ok().map(Duration::from_millis),
            })
        }
        _ => Err(bad()),
    }
}

/// One server's answer to a compare-and-X by token (release, extend).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compared {
    /// The token held the key: done.
    Done,
    /// The key was gone (expired or deleted).
    Gone,
    /// Another token holds the key.
    Other,
    /// Leaving the queue only: the token holds the key (its place still in line) or a lease
    /// (its place gone), which a release may have handed to that place (see `undo.rs`).
    MaybeHanded,
}

impl Compared {
    /// From the additive extend's reply: the new TTL in ms when done, 0 gone, -1 another token.
    pub fn parse_added(reply: i64) -> Result<(Compared, Option<Duration>), String> {
        match reply {
            ms if ms >= 1 => Ok((Compared::Done, Some(Duration::from_millis(ms as u64)))),
            other => Compared::parse(other).map(|c| (c, None)),
        }
    }

    /// From the scripts' reply: 1 done, 0 gone, -1 another token (2: see `MaybeHanded`).
    pub fn parse(reply: i64) -> Result<Compared, String> {
        match reply {
            1 => Ok(Compared::Done),
            0 => Ok(Compared::Gone),
            -1 => Ok(Compared::Other),
            2 => Ok(Compared::MaybeHanded),
            other => Err(format!("compare script returned {other}")),
        }
    }
}

/// One lease's note as `whos.lua` returns it: its token, the note, and how long the lease
/// still runs.
pub(crate) type LeaseNote = (Vec<u8>, Vec<u8>, Duration);

/// Parses `whos.lua`'s reply: `{token, note, ms left, ...}`.
pub(crate) fn parse_whos(v: &Value) -> Result<Vec<LeaseNote>, String> {
    let bad = || format!("whos script returned {v:?}");
    let Value::Array(items) = v else {
        return Err(bad());
    };
    items
        .chunks(3)
        .map(|c| match c {
            [Value::BulkString(token), Value::BulkString(note), Value::Int(left)] => Ok((
                token.clone(),
                note.clone(),
                Duration::from_millis(u64::try_from(*left).unwrap_or(0)),
            )),
            _ => Err(bad()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acquire_replies_parse_or_say_what_came() {
        let arr = |v: &[i64]| Value::Array(v.iter().map(|&i| Value::Int(i)).collect());
        assert_eq!(
            parse_acquire(&arr(&[1, 9]), 1),
            Ok(AcquireReply::Granted(vec![9]))
        );
        assert_eq!(
            parse_acquire(&arr(&[0, 250, 9, 0]), 1),
            Ok(AcquireReply::Held {
                pttl: Some(Duration::from_millis(250)),
                fences: vec![9],
                same_token: false,
            })
        );
        assert_eq!(
            parse_acquire(&arr(&[0, -1, 9, 1]), 1),
            Ok(AcquireReply::Held {
                pttl: None,
                fences: vec![9],
                same_token: true,
            })
        );
        // Several names: one counter each.
        assert_eq!(
            parse_acquire(&arr(&[1, 9, 10, 3]), 3),
            Ok(AcquireReply::Granted(vec![9, 10, 3]))
        );
        assert_eq!(
            parse_acquire(&arr(&[0, -2, 9, 3, 0]), 2),
            Ok(AcquireReply::Held {
                pttl: None,
                fences: vec![9, 3],
                same_token: false,
            })
        );
        assert!(parse_acquire(&arr(&[1, 9]), 2).is_err());
        assert!(parse_acquire(&arr(&[1, -9]), 1).is_err());
        assert!(parse_acquire(&arr(&[0, 250, 9]), 1).is_err());
        assert!(parse_acquire(&arr(&[0, 250, 9, 2]), 1).is_err());
        assert!(parse_acquire(&arr(&[2, 9]), 1)
            .unwrap_err()
            .contains("returned"));
        assert!(parse_acquire(&Value::Nil, 1).is_err());
        assert_eq!(Compared::parse(-1), Ok(Compared::Other));
        assert!(Compared::parse(5).is_err());
    }
}
