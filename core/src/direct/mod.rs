//! A calling thread's own connection to a manager's single plain server: the caller lane of
//! [`crate::lane`].
//!
//! A blocking call that hands its commands to a runtime thread and sleeps until that thread
//! wakes it pays two thread wake-ups per round trip beyond the reply's, which on a small
//! machine are about half of an uncontended acquire's time (bench/notes.md, bench/JAVA.md).
//! Here the calling thread writes the script call and reads the reply itself, on a blocking
//! socket of its own, inside the poll of the call's future: the future is ready at its first
//! poll, as a call through a plain client library would be.
//!
//! Each thread that calls opens its own connection on its first call after the runtime's
//! connection to the server is up (a server that is down is found, and explained, there), and
//! it is closed when the thread ends or the manager goes. Only a manager with one server uses
//! it: several servers' calls must run at once, which one thread's blocking sockets cannot.
//! A connection that failed or timed out is dropped, never reused.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use redis::{ConnectionAddr, ConnectionInfo, ProtocolVersion, RedisResult, Value};

use crate::sync::lock;

mod wire;

use wire::Wire;

/// One thread's connection, used by that thread only (its mutex is never contended).
pub(crate) struct DirectConn {
    wire: Mutex<Wire>,
    db: i64,
}

impl DirectConn {
    /// Sends one packed command and reads its reply.
    pub fn command(&self, packed: &[u8]) -> RedisResult<Value> {
        lock(&self.wire).command(packed)
    }

    /// Sends a packed pipeline and reads `count` replies after the first `offset`.
    pub fn pipeline(&self, packed: &[u8], offset: usize, count: usize) -> RedisResult<Vec<Value>> {
        lock(&self.wire).pipeline(packed, offset, count)
    }

    /// The database it selected.
    pub fn db(&self) -> i64 {
        self.db
    }

    /// Limits each command's write and each reply's wait to `timeout`.
    pub fn limit(&self, timeout: Duration) {
        lock(&self.wire).set_timeout(timeout.max(Duration::from_millis(1)));
    }
}

/// The processors this process may use (read once).
pub(crate) fn processors() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The threads' connections of one server, each with the generation it was opened as.
type Conns = Mutex<HashMap<u64, (u64, Arc<DirectConn>)>>;

/// A server's per-thread connections.
pub(crate) struct Direct {
    info: ConnectionInfo,
    connect_timeout: Duration,
    conns: Arc<Conns>,
}

impl Direct {
    /// For a server reached over plain TCP or a Unix socket with RESP2 (`client`, not TLS,
    /// Sentinel or a cluster) of a manager that has only it (`only`); `None` otherwise.
    pub fn new(client: &redis::Client, connect_timeout: Duration, only: bool) -> Option<Direct> {
        let info = client.get_connection_info();
        let plain = matches!(
            info.addr(),
            ConnectionAddr::Tcp(..) | ConnectionAddr::Unix(_)
        );
        let resp2 = info.redis_settings().protocol() == ProtocolVersion::RESP2;
        (only && plain && resp2).then(|| Direct {
            info: info.clone(),
            connect_timeout,
            conns: Arc::default(),
        })
    }

    /// The calling thread's connection, if it has one.
    pub fn get(&self) -> Option<(u64, Arc<DirectConn>)> {
        // `try_with`: a call from another thread-local's destructor at thread exit rides the
        // runtime's connection instead.
        let id = OPENED.try_with(|o| o.id).ok()?;
        lock(&self.conns).get(&id).cloned()
    }

    /// Opens the calling thread's connection (blocking, within the connect timeout) as
    /// `generation`; `None` when that fails (the call then rides the runtime's connection,
    /// whose failure explains).
    pub fn open(&self, generation: u64) -> Option<(u64, Arc<DirectConn>)> {
        let id = OPENED.try_with(|o| o.remember(&self.conns)).ok()?;
        let wire = Wire::open(&self.info, self.connect_timeout).ok()?;
        let conn = Arc::new(DirectConn {
            wire: Mutex::new(wire),
            db: self.info.redis_settings().db(),
        });
        lock(&self.conns).insert(id, (generation, Arc::clone(&conn)));
        Some((generation, conn))
    }

    /// Drops the connection opened as `generation` (it failed), wherever it is.
    pub fn forget(&self, generation: u64) {
        lock(&self.conns).retain(|_, (g, _)| *g != generation);
    }
}

/// The servers this thread opened connections to, whose connections of its it closes when
/// it ends.
struct Opened {
    /// This thread's number among those that opened connections ([`NEXT_THREAD`]).
    id: u64,
    conns: RefCell<Vec<Weak<Conns>>>,
}

impl Opened {
    fn remember(&self, conns: &Arc<Conns>) -> u64 {
        let mut all = self.conns.borrow_mut();
        all.retain(|c| c.strong_count() > 0);
        let conns = Arc::downgrade(conns);
        if !all.iter().any(|c| c.ptr_eq(&conns)) {
            all.push(conns);
        }
        self.id
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        for conns in self.conns.get_mut().drain(..) {
            if let Some(conns) = conns.upgrade() {
                lock(&conns).remove(&self.id);
            }
        }
    }
}

/// Numbers the threads that use a connection of their own. Not `std::thread::current()`'s
/// id: that allocates the thread's handle, which a C program's forked child that exits without
/// returning from `main` leaves behind (valgrind counts it lost; see also `deadline.rs`).
static NEXT_THREAD: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static OPENED: Opened = Opened {
        id: NEXT_THREAD.fetch_add(1, Ordering::Relaxed),
        conns: RefCell::new(Vec::new()),
    };
}
