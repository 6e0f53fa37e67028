//! What the bindings (Python, Node, C, and through C Java and Go), the command line and the
//! test kits need beyond the public API: the limits they check arguments against, the lock's
//! key layout, the measurement table and sinks, the span records, the event listeners, a
//! binding's event-loop lane. Hidden from the documentation and not part of the API a Rust
//! program uses: it may change in any release. Each module re-exports the core module of the
//! same name.

/// The keys of a lock and the name and prefix rules (`keys`).
/// A term held as its lock (the bindings' way): its value, proclaiming a new one.
pub mod election {
    pub use crate::election::{proclaim, term_value};
}

pub mod keys {
    pub use crate::keys::*;
}

/// What a lease holds of its name (`kind`).
pub mod kind {
    pub use crate::kind::*;
}

/// A binding's event-loop lane (`lane`).
pub mod lane {
    pub use crate::lane::*;
}

/// The measurements: the table, the sinks, the totals, the span records (`measure`).
pub mod measure {
    pub use crate::measure::*;
}

/// fencelock's events for listeners outside Rust (`observe`).
#[cfg(feature = "observe")]
pub mod observe {
    pub use crate::observe::*;
}

/// Quorum and validity arithmetic (`quorum`).
pub mod quorum {
    pub use crate::quorum::*;
}

/// Timing defaults and limits (`timing`).
pub mod timing {
    pub use crate::timing::*;
}

/// Token rules (`token`).
pub mod token {
    pub use crate::token::*;
}

/// A binding's seconds or milliseconds as a `Duration`, checked (`units`).
pub mod units {
    pub use crate::units::*;
}

/// The holder label's limits (`who`).
pub mod who {
    pub use crate::who::*;
}
