//! The server's scripts as atomic steps (core/src/scripts: `acquire.lua` with its lean path,
//! `extend.lua`, `release.lua` with the hand-off), run at the server's `now` after what is
//! due has expired.

use crate::lock::{Client, Key, LockModel, Place, Reply, Request, State};

pub fn serve(m: &LockModel, s: &mut State, c: Client, request: Request) {
    expire(s);
    let reply = match request {
        Request::Acquire => acquire(m, s, c),
        Request::Extend { sent } => match &mut s.server.key {
            Some(key) if key.holder == c => {
                key.expires = s.now + m.ttl;
                Reply::Extended { sent }
            }
            _ => Reply::NotHeld,
        },
        Request::Release => match s.server.key {
            Some(key) if key.holder == c => {
                s.server.key = None;
                hand_off(m, s);
                Reply::Released
            }
            _ => Reply::NotHeld,
        },
    };
    // A client that crashed meanwhile never reads it.
    if !matches!(s.clients[c].phase, crate::lock::Phase::Crashed) {
        s.clients[c].reply = Some(reply);
    }
}

/// Redis expires a key (and the script drops a place) once its time has come.
fn expire(s: &mut State) {
    let now = s.now;
    if s.server.key.is_some_and(|k| k.expires <= now) {
        s.server.key = None;
    }
    s.server.line.retain(|p| p.expires > now);
}

fn acquire(m: &LockModel, s: &mut State, c: Client) -> Reply {
    match s.server.key {
        // Re-entry by token: the TTL reset, the same fencing token.
        Some(mut key) if key.holder == c => {
            key.expires = s.now + m.ttl;
            s.server.key = Some(key);
            s.server.line.retain(|p| p.client != c);
            Reply::Granted { fence: key.fence }
        }
        Some(_) => refuse(m, s, c),
        None => match first_listening(s) {
            Some(w) if w != c => refuse(m, s, c),
            _ => Reply::Granted {
                fence: grant(m, s, c),
            },
        },
    }
}

/// Takes or refreshes `c`'s place (its arrival keeps its position).
fn refuse(m: &LockModel, s: &mut State, c: Client) -> Reply {
    let expires = s.now + m.place_life;
    match s.server.line.iter_mut().find(|p| p.client == c) {
        Some(place) => place.expires = expires,
        None => s.server.line.push(Place { client: c, expires }),
    }
    Reply::Refused
}

/// The first place in line whose client listens; the places ahead of it, whose clients do
/// not, are passed over (dropped).
fn first_listening(s: &mut State) -> Option<Client> {
    while let Some(p) = s.server.line.first().copied() {
        if s.listening(p.client) {
            return Some(p.client);
        }
        s.server.line.remove(0);
    }
    None
}

/// A new grant to `c`: the counter incremented, the key set, `c`'s place taken out.
fn grant(m: &LockModel, s: &mut State, c: Client) -> u32 {
    s.server.counter += 1;
    let fence = s.server.counter;
    s.server.key = Some(Key {
        holder: c,
        expires: s.now + m.ttl,
        fence,
    });
    let older = s.server.line.iter().take_while(|p| p.client != c);
    if older
        .clone()
        .any(|p| p.client != c && s.listening(p.client))
    {
        s.history.passed_a_waiter = true;
    }
    s.server.line.retain(|p| p.client != c);
    if fence <= s.history.last_grant {
        s.history.fence_regressed = true;
    }
    s.history.last_grant = s.history.last_grant.max(fence);
    fence
}

/// After a release: the key to the first listening waiter, told by a message.
fn hand_off(m: &LockModel, s: &mut State) {
    if let Some(w) = first_listening(s) {
        let fence = grant(m, s, w);
        s.clients[w].handoff = Some(fence);
        s.history.handed_off = true;
    }
}
