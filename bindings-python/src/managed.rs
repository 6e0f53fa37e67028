//! What both Python managers share: the core's blocking manager (which owns the Tokio
//! runtime), rebuilt from its `Config` when used in a process forked after it was made.

use std::mem::ManuallyDrop;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use fencelock::{blocking, Config};
use pyo3::prelude::*;
use tokio::runtime::Handle;

use crate::convert::{py_repr, Text};
use crate::errors::{to_py, Failure};
use crate::options::Options;

/// A running manager: the blocking facade, and its runtime's handle for the asyncio bridge.
#[derive(Clone)]
pub struct Live {
    /// The core's blocking manager; `as_async()` gives the async one sharing its connections.
    pub manager: blocking::LockManager,
    /// The runtime of `manager`, where the asyncio flavour spawns the core's futures.
    pub handle: Handle,
}

impl Live {
    fn start(config: Config) -> Result<Live, fencelock::Error> {
        let manager = blocking::LockManager::from_config(config)?;
        // The manager's runtime is private to the core; a future run on it reports its handle.
        let handle = manager.block_on(async { Handle::current() })?;
        Ok(Live { manager, handle })
    }
}

struct State {
    /// The process the runtime was started in.
    pid: u32,
    live: Option<Live>,
    closed: bool,
}

/// The fork-aware holder of a [`Live`] manager.
pub struct Managed {
    config: Config,
    state: Mutex<State>,
    /// Turns true at [`close`](Self::close): what a blocked election observer ends on.
    closing: tokio::sync::watch::Sender<bool>,
}

impl Managed {
    /// Checks the options (no network call) and starts the runtime.
    pub fn new(py: Python<'_>, o: Options) -> PyResult<Managed> {
        let config = o.builder()?.config().map_err(|e| to_py(py, e))?;
        crate::events::on_manager_created(py);
        let live = Live::start(config.clone()).map_err(|e| to_py(py, e))?;
        Ok(Managed {
            config,
            state: Mutex::new(State {
                pid: std::process::id(),
                live: Some(live),
                closed: false,
            }),
            closing: tokio::sync::watch::channel(false).0,
        })
    }

    /// Turns true when the manager closes.
    pub fn closing(&self) -> tokio::sync::watch::Receiver<bool> {
        self.closing.subscribe()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The running manager, rebuilt first when this is a child process forked since it was
    /// made (the parent's runtime threads do not exist in the child).
    pub fn live(&self) -> Result<Live, Failure> {
        let mut st = self.state();
        let pid = std::process::id();
        if st.pid != pid {
            // Never drop the parent's runtime here: its threads are gone and its locks may
            // have been held by them at fork time. Leak it instead.
            if let Some(stale) = st.live.take() {
                std::mem::forget(stale);
            }
            st.pid = pid;
            if !st.closed {
                st.live = Some(Live::start(self.config.clone())?);
            }
        }
        st.live
            .clone()
            .ok_or_else(|| Failure::Usage("this LockManager is closed".into()))
    }

    /// Stops the runtime (without waiting) once the locks made by it are gone.
    pub fn close(&self) {
        self.closing.send_replace(true);
        let mut st = self.state();
        st.closed = true;
        if let Some(live) = st.live.take() {
            if st.pid == std::process::id() {
                drop(live);
            } else {
                std::mem::forget(live);
            }
        }
    }

    /// `<fencelock.LockManager servers=[...] ...>`; never a password.
    pub fn repr(&self, py: Python<'_>, class: &str) -> String {
        let prefix = self.config.key_prefix();
        let prefix = match std::str::from_utf8(prefix) {
            Ok(s) => Text::Str(s.to_owned()),
            Err(_) => Text::Bytes(prefix.to_vec()),
        };
        let prefix = py_repr(prefix.to_object(py).bind(py));
        let servers = match self.config.server_labels().into_pyobject(py) {
            Ok(list) => py_repr(&list),
            Err(_) => String::new(),
        };
        let closed = if self.state().closed { " closed" } else { "" };
        format!("<{class} servers={servers} key_prefix={prefix}{closed}>")
    }
}

/// How often a blocking wait wakes up to run Python's signal handlers (Ctrl-C).
pub const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// A value that belongs to the process that made it: in a child forked since, `get` gives
/// `None` and dropping leaks it, since it may refer to the parent's runtime, whose threads do
/// not exist in the child (and whose locks they may have held at fork time).
pub struct ProcessLocal<T> {
    value: ManuallyDrop<T>,
    pid: u32,
}

impl<T> ProcessLocal<T> {
    /// Binds `value` to this process.
    pub fn new(value: T) -> ProcessLocal<T> {
        ProcessLocal {
            value: ManuallyDrop::new(value),
            pid: std::process::id(),
        }
    }

    /// The value, in the process that made it.
    pub fn get(&self) -> Option<&T> {
        (self.pid == std::process::id()).then_some(&*self.value)
    }

    /// The process that made it.
    pub fn pid(&self) -> u32 {
        self.pid
    }
}

impl<T> Drop for ProcessLocal<T> {
    fn drop(&mut self) {
        if self.pid == std::process::id() {
            // SAFETY: dropped once, here, and never used again.
            unsafe { ManuallyDrop::drop(&mut self.value) }
        }
    }
}

/// The `LockError` for a lock used in a process forked after it was acquired.
pub fn other_process(name: &str, pid: u32) -> Failure {
    Failure::Usage(format!(
        "lock {name} was acquired in process {pid} before a fork; a lock does not cross \
         fork(): acquire it again in this process"
    ))
}
