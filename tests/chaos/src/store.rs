//! The storage a lock protects, in two flavours, both kept on a separate redis-server:
//!
//! - [`FencedStore`] remembers the largest fencing token it accepted per resource and rejects
//!   a write with a smaller one, atomically with the write (a Lua check-and-set): what
//!   `docs/SAFETY.md` asks of any storage that must never be written by a stale holder;
//! - [`UnfencedStore`] just writes (the last writer wins, however stale).
//!
//! Keys: `fenced:<resource>:token` (the largest token accepted), `fenced:<resource>:data` and
//! `unfenced:<resource>`.

use redis::{Client, Commands, RedisResult, Script};

/// Check-and-set: accept the write when the token is not smaller than the largest seen.
/// Tokens are compared as decimal strings (length first), exactly, with no float rounding.
/// An equal token is accepted: the same holder may write more than once.
///
/// The script lives in `tests/chaos/workers/fenced_write.lua`, which the workers there read
/// and send with `EVAL` from their `hold` mode; [`crate::paused`] checks that through the store's script cache (the script's
/// SHA1, see [`fenced_write_sha1`]).
pub const FENCED_WRITE: &str = include_str!("../workers/fenced_write.lua");

/// The SHA1 (hex) of [`FENCED_WRITE`], under which a server caches it once it ran it.
pub fn fenced_write_sha1() -> String {
    Script::new(FENCED_WRITE).get_hash().to_string()
}

fn client(url: &str) -> Client {
    Client::open(url).unwrap_or_else(|e| panic!("store: bad url {url}: {e}"))
}

/// A store that rejects writes carrying a fencing token older than one it accepted.
#[derive(Debug, Clone)]
pub struct FencedStore {
    client: Client,
}

impl FencedStore {
    /// A fenced store on the redis-server at `url`.
    pub fn new(url: &str) -> FencedStore {
        FencedStore {
            client: client(url),
        }
    }

    /// Writes `value` to `resource` with `token`: `Ok(true)` when accepted, `Ok(false)` when
    /// rejected because a larger token was already accepted.
    pub fn write(&self, resource: &str, token: u64, value: &str) -> RedisResult<bool> {
        let mut con = self.client.get_connection()?;
        let accepted: i64 = Script::new(FENCED_WRITE)
            .key(format!("fenced:{resource}:token"))
            .key(format!("fenced:{resource}:data"))
            .arg(token.to_string())
            .arg(value)
            .invoke(&mut con)?;
        Ok(accepted == 1)
    }

    /// The value stored for `resource`.
    pub fn read(&self, resource: &str) -> RedisResult<Option<String>> {
        self.client
            .get_connection()?
            .get(format!("fenced:{resource}:data"))
    }
}

/// A store that accepts every write: the last writer wins.
#[derive(Debug, Clone)]
pub struct UnfencedStore {
    client: Client,
}

impl UnfencedStore {
    /// An unfenced store on the redis-server at `url`.
    pub fn new(url: &str) -> UnfencedStore {
        UnfencedStore {
            client: client(url),
        }
    }

    /// Writes `value` to `resource`.
    pub fn write(&self, resource: &str, value: &str) -> RedisResult<()> {
        self.client
            .get_connection()?
            .set(format!("unfenced:{resource}"), value)
    }

    /// The value stored for `resource`.
    pub fn read(&self, resource: &str) -> RedisResult<Option<String>> {
        self.client
            .get_connection()?
            .get(format!("unfenced:{resource}"))
    }
}
