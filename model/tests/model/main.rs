//! The protocol model checked at the bounds CI uses, one module per part of the protocol. One
//! test binary for all of them: each check runs on one thread, and libtest then keeps both of
//! CI's cores busy to the end (four binaries, run one after another, left a core idle while
//! each one's longest check finished).

mod lock;
mod many;
mod permits;
mod redlock;
