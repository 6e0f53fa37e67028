//! The election's scripts held to the lock model's runs (issue 54): after every step of the
//! lock's runs, each client notes a term's value as a leader would (`note.lua`, announced),
//! which only the holder the model names may do, and which changes nothing the model knows;
//! the inspection then shows the holder's note and no other; a resign's announcement
//! (`announce.lua`) is heard. An observer's subscription to the lock's release channel hears
//! exactly one empty message per note written and per announcement, and nothing else.

use redis::Value;

use super::{token, Expected, Replay, Sub};
use crate::scripts::{parse_inspect, Holder, ScriptCall};

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
            let call = ScriptCall::note(&self.keys[0], &token(c), &note, true);
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
        let heard = self.observer.as_mut().map(Sub::drain).transpose()?;
        let heard = heard.unwrap_or_default();
        if heard.len() != written + 1 || heard.iter().any(|m| !m.is_empty()) {
            return Err(format!(
                "the observer heard {heard:?}: {written} notes and an announcement were made"
            ));
        }
        redis::cmd("DEL")
            .arg(&self.keys[0].who)
            .query::<i64>(&mut self.con)
            .map(|_| ())
            .map_err(|e| e.to_string())
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
