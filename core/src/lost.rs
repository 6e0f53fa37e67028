//! Why a lease was lost: the reason every face reports (the lost signal, the `lock lost`
//! event), told apart by the engine's verdicts on extend and release.

/// Why a lock was lost: what [`Lock::lost`](crate::Lock::lost), [`Lock::lost_reason`](crate::Lock::lost_reason) and
/// [`Lock::on_lost`](crate::Lock::on_lost) report, and the `reason` field of the `lock lost` event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LostReason {
    /// Its validity ran out without a successful extension, or an extension found its key
    /// gone (expired or deleted) on the servers.
    Expired,
    /// An extension found its key held under another token: someone else acquired it after
    /// it expired, or overwrote it.
    Taken,
    /// Extensions could not reach a quorum of servers before its validity ran out.
    Unreachable,
}

impl LostReason {
    /// `"expired"`, `"taken"` or `"unreachable"`: the stable name the bindings expose.
    pub fn as_str(self) -> &'static str {
        match self {
            LostReason::Expired => "expired",
            LostReason::Taken => "taken",
            LostReason::Unreachable => "unreachable",
        }
    }
}

impl std::fmt::Display for LostReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LostReason::Expired => "its validity ran out (the key expired or was deleted)",
            LostReason::Taken => "another token holds its key",
            LostReason::Unreachable => {
                "no quorum of servers could be reached to extend it before its validity ran out"
            }
        })
    }
}
