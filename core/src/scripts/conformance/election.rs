//! The election's scripts held to the lock model's runs (issue 54): after every step of the
//! lock's runs, each client notes a term's value as a leader would (`note.lua`, announced),
//! which only the holder the model names may do, and which changes nothing the model knows;
//! the inspection then shows the holder's note and no other; a resign's announcement
//! (`announce.lua`) is heard. The holder then renews its note as an extension does, announced
//! as a renewal. An observer's subscription to the lock's release channel hears exactly one
//! empty message per note written and per announcement, one renewal naming the observers, the
//! term and the key's PTTL, and nothing else.

use redis::Value;

use super::{token, Expected, Replay, Sub};
use crate::queue::{parse_wake, OBSERVERS};
use crate::scripts::{parse_inspect, Announce, Holder, ScriptCall};

/// The term the holder's renewal names.
const RENEWED_TERM: u64 = 2;

impl Replay {
    /// The election's scripts at this step: see the module doc.
    pub(super) fn check_terms(&mut self, expected: &Expected) -> Result<(), String> {
        if self.observer.is_none() {
            let channel = self.keys[0].channel.clone();
            self.observer = Some(Sub::open(&self.client, &channel)?);
        }
        let holder = expected.key.map(|k| k.0);
        let mut written = 0;
        for c in 0..self.subs.len() {
            let note = [&token(c)[..], format!("\n1\n2\n\nvalue {c}").as_bytes()].concat();
            let call = ScriptCall::note(&self.keys[0], &token(c), &note, Announce::Change);
            let got = self.run(&call)?;
            self.election_calls += 1;
            let want = i64::from(holder == Some(c));
            if got != Value::Int(want) {
                return Err(format!(
                    "client {c}'s term note answered {got:?}; the model's holder is {holder:?}"
                ));
            }
            written += want as usize;
        }
        self.check_name(0, expected)
            .map_err(|e| format!("a term's note changed the lock: {e}"))?;
        self.check_noted(holder)?;
        self.run(&ScriptCall::announce(&self.keys[0]))?;
        self.election_calls += 1;
        let renewed = match holder {
            Some(c) => Some(self.renew(c)?),
            None => None,
        };
        let heard = self.observer.as_mut().map(Sub::drain).transpose()?;
        let mut heard = heard.unwrap_or_default();
        let renewal = renewed.and_then(|_| heard.pop());
        if heard.len() != written + 1 || heard.iter().any(|m| !m.is_empty()) {
            return Err(format!(
                "the observer heard {heard:?}: {written} notes and an announcement were made"
            ));
        }
        if let (Some(pttl), Some(message)) = (renewed, renewal) {
            let (to, told) = parse_wake(&message);
            let fine = to == OBSERVERS
                && told.is_some_and(|h| h.fence == RENEWED_TERM && h.arrival <= pttl);
            if !fine {
                return Err(format!(
                    "a renewal of term {RENEWED_TERM} (PTTL at most {pttl}) was told as {:?}",
                    String::from_utf8_lossy(&message)
                ));
            }
        }
        redis::cmd("DEL")
            .arg(&self.keys[0].who)
            .query::<i64>(&mut self.con)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// The holder `c` renews its term's note as an extension does; the key's PTTL before.
    fn renew(&mut self, c: usize) -> Result<u64, String> {
        let pttl: i64 = redis::cmd("PTTL")
            .arg(&self.keys[0].lock)
            .query(&mut self.con)
            .map_err(|e| e.to_string())?;
        let note = [&token(c)[..], format!("\n1\n2\n\nvalue {c}").as_bytes()].concat();
        let renewal = Announce::Renewal { term: RENEWED_TERM };
        let got = self.run(&ScriptCall::note(&self.keys[0], &token(c), &note, renewal))?;
        self.election_calls += 1;
        match got {
            Value::Int(1) => Ok(pttl.max(0) as u64),
            got => Err(format!("the holder's renewal answered {got:?}")),
        }
    }

    /// The inspection shows the note of the model's holder, and none when nobody holds.
    fn check_noted(&mut self, holder: Option<usize>) -> Result<(), String> {
        let got = self.run(&ScriptCall::inspect(&self.keys[0]))?;
        let (seen, _) = parse_inspect(&got)?;
        let fine = match (&seen, holder) {
            (Holder::Free, None) => true,
            (
                Holder::Held {
                    token: t,
                    note: Some(n),
                    ..
                },
                Some(c),
            ) => {
                *t == token(c)
                    && n.starts_with(&token(c))
                    && n.ends_with(format!("value {c}").as_bytes())
            }
            _ => false,
        };
        match fine {
            true => Ok(()),
            false => Err(format!(
                "the inspection shows {got:?}; the model's holder is {holder:?}"
            )),
        }
    }
}
