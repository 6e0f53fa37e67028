//! A lock on several names at once, all or none (core/src/scripts: `acquire_many.lua`,
//! `extend_many.lua`, `release_many.lua`), as atomic steps on the names' servers (one each:
//! names in different hash slots, each with its own counter), run after what is due has
//! expired:
//!
//! - acquire: the caller takes or refreshes its place in every name's line (by its call's
//!   arrival, marked as a waiter of several names); a name is free for it when its key is the
//!   caller's, or when the key is free and the first listening place in line is the caller's
//!   (a waiter of that name alone ahead is handed it; a waiter of several names ahead is woken
//!   and the name stays free for it). When every name is free, each gets a new token and the
//!   caller's key, and the caller keeps only the places it had; else nothing is granted and
//!   its places stay;
//! - extend: every key the caller's, all get a fresh TTL; else none does;
//! - release: each name as a lock's release (the place leaves the line, a key of the
//!   caller's is deleted and handed to the first listening waiter of that name alone, or a
//!   waiter of several names is woken); the undo keeps the places.
//!
//! A waiter of several names is never handed one name alone, which would have it hold one
//! while it waits for another.

use crate::scripts::{expire, Ctx, Run, Served, Walk};
use crate::world::{Client, Reply, Request, Server};

/// The names in bitmask `want`, in order.
pub fn names_in(want: u8) -> impl Iterator<Item = usize> {
    (0..8).filter(move |i| want & (1 << i) != 0)
}

/// Runs `c`'s `request` for the names in `want`; its reply (none for an undo), and what the
/// script did on each name (by index).
pub fn serve(
    x: &Ctx,
    names: &mut [Server],
    want: u8,
    c: Client,
    request: Request,
) -> (Option<Reply>, Vec<Served>) {
    let mut served = vec![Served::default(); names.len()];
    for i in names_in(want) {
        expire(&mut names[i], x.now);
    }
    let reply = match request {
        Request::Acquire { arrival } => Some(acquire(x, names, want, c, arrival, &mut served)),
        Request::Extend { sent } => Some(extend(x, names, want, c, sent)),
        Request::Release => Some(release(x, names, want, c, true, &mut served)),
        Request::Undo => {
            release(x, names, want, c, false, &mut served);
            None
        }
        Request::Leave => {
            for i in names_in(want) {
                names[i].line.retain(|p| p.client != c);
            }
            Some(Reply::NotHeld { taken: false })
        }
        Request::Raise { .. } => unreachable!("several names are modelled on one server"),
    };
    (reply, served)
}

fn acquire(
    x: &Ctx,
    names: &mut [Server],
    want: u8,
    c: Client,
    arrival: u8,
    served: &mut [Served],
) -> Reply {
    let mut placed = [false; 8];
    for i in names_in(want) {
        placed[i] = Run::new(x, &mut names[i]).take_place(c, arrival);
    }
    let mut blocked = false;
    for i in names_in(want) {
        let mut run = Run::new(x, &mut names[i]);
        let free = match run.server.key {
            Some(key) => key.holder == c,
            None => match run.walk_line(Some(c)) {
                Walk::Handed(w) => {
                    run.hand_over(w);
                    false
                }
                Walk::Woke => false,
                Walk::Caller | Walk::Nobody => true,
            },
        };
        blocked |= !free;
        served[i] = run.served;
    }
    let first = names_in(want).next().expect("a name");
    if blocked {
        return Reply::Refused {
            counter: names[first].counter,
        };
    }
    let mut fence = None;
    for i in names_in(want) {
        let mut run = Run::new(x, &mut names[i]);
        let new = run.server.key.is_none();
        let f = run.grant(c, new);
        fence.get_or_insert(f);
        // A grant keeps a place the caller had, and takes none it had not.
        if !placed[i] {
            run.server.line.retain(|p| p.client != c);
        }
        served[i].granted.extend(run.served.granted);
        served[i].passed_a_waiter |= run.served.passed_a_waiter;
    }
    Reply::Granted {
        fence: fence.expect("a name"),
    }
}

fn extend(x: &Ctx, names: &mut [Server], want: u8, c: Client, sent: u8) -> Reply {
    let keys = || names_in(want).map(|i| names[i].key);
    if keys().all(|k| k.is_some_and(|k| k.holder == c)) {
        for i in names_in(want) {
            if let Some(key) = &mut names[i].key {
                key.expires = x.now + x.ttl;
            }
        }
        return Reply::Extended { sent };
    }
    Reply::NotHeld {
        taken: keys().any(|k| k.is_some_and(|k| k.holder != c)),
    }
}

/// Each name released as a lock's release (`leave`: the places too); released when every
/// name was the caller's, else "taken" when another holds one, else "gone".
fn release(
    x: &Ctx,
    names: &mut [Server],
    want: u8,
    c: Client,
    leave: bool,
    served: &mut [Served],
) -> Reply {
    let (mut taken, mut gone) = (false, false);
    for i in names_in(want) {
        let mut run = Run::new(x, &mut names[i]);
        match run.release(c, leave) {
            Reply::NotHeld { taken: true } => taken = true,
            Reply::NotHeld { taken: false } => gone = true,
            _ => {}
        }
        served[i] = run.served;
    }
    match (taken, gone) {
        (false, false) => Reply::Released,
        (taken, _) => Reply::NotHeld { taken },
    }
}
