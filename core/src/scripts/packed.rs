//! The packed argument of the scripts that publish: `PUBLISH` (which `ScriptCall::cmd_for`
//! turns into `SPUBLISH` or `CPUBLISH` on a cluster), then the numbers and names each script
//! reads with one `string.match`. A command may have at most `MAX_PARTS` parts before the
//! client has authenticated, so the arguments travel as one.

use std::time::Duration;

use super::PUBLISH;
use crate::keys::decimal;
use crate::queue::Place;
use crate::token::WAKE_ID_LEN;

/// A packed argument: [`PUBLISH`], then each part after a space, written at once into one
/// buffer (an acquire packs one and a release another: `format!` cost each about 1,900
/// instructions, bench/notes.md).
pub(super) struct Packed(Vec<u8>);

impl Packed {
    pub(super) fn new() -> Packed {
        let mut buf = Vec::with_capacity(96);
        buf.extend_from_slice(PUBLISH);
        Packed(buf)
    }

    pub(super) fn bytes(mut self, part: &[u8]) -> Packed {
        self.0.push(b' ');
        self.0.extend_from_slice(part);
        self
    }

    /// A number in decimal (a value past `u64::MAX` is written as `u64::MAX`: no duration
    /// that long passes the checks).
    pub(super) fn num(self, n: impl TryInto<u64>) -> Packed {
        let mut digits = [0u8; 20];
        self.bytes(decimal(n.try_into().unwrap_or(u64::MAX), &mut digits))
    }

    /// What every acquire packs first: the TTL in ms, the wake-id length, the place's arrival
    /// and how long it lasts in ms (`0 0` without a place), and whether a key already holding
    /// the token is the call's own (`1`) or not (`0`).
    pub(super) fn acquiring(ttl: Duration, place: Option<&Place>, own: bool) -> Packed {
        let (arrival, lasts) = place.map_or((0, 0), |p| (p.arrival, p.lasts.as_millis().max(1)));
        Packed::new()
            .num(ttl.as_millis())
            .num(WAKE_ID_LEN)
            .num(arrival)
            .num(lasts)
            .num(u8::from(own))
    }

    /// The argument's bytes.
    pub(super) fn done(self) -> Vec<u8> {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_arguments_are_spaced_decimals() {
        let packed = Packed::new()
            .num(0u8)
            .num(u64::MAX)
            .num(u128::from(u64::MAX) + 1)
            .num(10_007usize)
            .bytes(b"chan")
            .done();
        let max = u64::MAX.to_string();
        assert_eq!(
            String::from_utf8(packed).unwrap(),
            format!("PUBLISH 0 {max} {max} 10007 chan")
        );
        assert_eq!(Packed::new().done(), b"PUBLISH");
    }
}
