//! Listening to fencelock's own events from outside Rust.
//!
//! The core emits `tracing` events under the target `fencelock` (see `docs/SECURITY.md`).
//! A Rust application sees them with any `tracing` subscriber. The bindings cannot expect their
//! host to install one, so this module does it for them: [`add_listener`] installs (once per
//! process) a global subscriber that turns each fencelock event into an [`Event`] and hands it
//! to every registered listener. Python forwards them to `logging`, Node to a hook, C to a
//! callback.
//!
//! Nothing is installed, and events cost nothing, until the first listener is added.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock, RwLock};

use tracing::field::{Field, Visit};
use tracing::{Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::error::{Error, Result};

/// Severity of an [`Event`], most verbose first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventLevel {
    /// Every acquire attempt.
    Trace,
    /// Acquired, acquire failed, extend, release.
    Debug,
    /// Not used yet.
    Info,
    /// A lock was lost.
    Warn,
    /// Not used yet.
    Error,
}

impl EventLevel {
    /// Lower-case name: `"trace"` ... `"error"`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventLevel::Trace => "trace",
            EventLevel::Debug => "debug",
            EventLevel::Info => "info",
            EventLevel::Warn => "warn",
            EventLevel::Error => "error",
        }
    }

    fn from_tracing(level: &Level) -> EventLevel {
        match *level {
            Level::TRACE => EventLevel::Trace,
            Level::DEBUG => EventLevel::Debug,
            Level::INFO => EventLevel::Info,
            Level::WARN => EventLevel::Warn,
            _ => EventLevel::Error,
        }
    }
}

/// One fencelock event: what happened and its fields (lock name, attempts, elapsed time, ...).
/// Never contains a token or a password.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// Severity.
    pub level: EventLevel,
    /// What happened: `"acquired"`, `"acquire failed"`, `"release"`, `"lock lost"`, ...
    pub message: String,
    /// The structured fields, in the order they were recorded, values as text.
    pub fields: Vec<(String, String)>,
}

impl Event {
    /// `message field=value field=value`, as one line.
    pub fn to_line(&self) -> String {
        let mut line = self.message.clone();
        for (k, v) in &self.fields {
            let _ = write!(line, " {k}={v}");
        }
        line
    }
}

type Listener = Arc<dyn Fn(&Event) + Send + Sync>;

struct Registry {
    next_id: u64,
    listeners: Vec<(u64, EventLevel, Listener)>,
}

fn registry() -> &'static RwLock<Registry> {
    static REGISTRY: OnceLock<RwLock<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        RwLock::new(Registry {
            next_id: 1,
            listeners: Vec::new(),
        })
    })
}

/// Registers `listener` for fencelock events at `min_level` or more severe; returns an id for
/// [`remove_listener`]. The first call installs the process-wide `tracing` subscriber that
/// feeds the listeners.
///
/// Listeners are called on whatever thread emitted the event (often a runtime thread), must
/// not block, and must not panic (a panic is caught and the event dropped for that listener).
///
/// # Errors
/// [`ErrorKind::InvalidArgument`](crate::ErrorKind::InvalidArgument) when another global `tracing` subscriber is already installed
/// in this process (then install a layer of your own on it instead).
pub fn add_listener(
    min_level: EventLevel,
    listener: impl Fn(&Event) + Send + Sync + 'static,
) -> Result<u64> {
    static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let subscriber = tracing_subscriber::registry().with(ListenerLayer);
            tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| {
            Error::invalid_argument(format!(
                "cannot listen to fencelock events: another tracing subscriber is installed ({e})"
            ))
        })?;
    let id = {
        let mut reg = registry().write().unwrap_or_else(|e| e.into_inner());
        let id = reg.next_id;
        reg.next_id += 1;
        reg.listeners.push((id, min_level, Arc::new(listener)));
        id
    };
    // `tracing` caches, per event site, whether anyone listens: recompute it, or a site already
    // passed while no listener wanted its level would stay silent.
    tracing::callsite::rebuild_interest_cache();
    Ok(id)
}

/// Unregisters a listener; returns whether it was registered.
pub fn remove_listener(id: u64) -> bool {
    let removed = {
        let mut reg = registry().write().unwrap_or_else(|e| e.into_inner());
        let before = reg.listeners.len();
        reg.listeners.retain(|(i, _, _)| *i != id);
        reg.listeners.len() != before
    };
    tracing::callsite::rebuild_interest_cache();
    removed
}

struct ListenerLayer;

impl<S: Subscriber> Layer<S> for ListenerLayer {
    fn enabled(&self, metadata: &tracing::Metadata<'_>, _: Context<'_, S>) -> bool {
        // Events only: the spans (`fencelock.acquire`, `fencelock.hold`) are for a Rust
        // application's own subscriber; the bindings make their own from the measurements.
        metadata.is_event() && metadata.target().starts_with("fencelock") && {
            let level = EventLevel::from_tracing(metadata.level());
            let reg = registry().read().unwrap_or_else(|e| e.into_inner());
            reg.listeners.iter().any(|(_, min, _)| level >= *min)
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let level = EventLevel::from_tracing(event.metadata().level());
        let listeners: Vec<Listener> = {
            let reg = registry().read().unwrap_or_else(|e| e.into_inner());
            reg.listeners
                .iter()
                .filter(|(_, min, _)| level >= *min)
                .map(|(_, _, l)| Arc::clone(l))
                .collect()
        };
        if listeners.is_empty() {
            return;
        }
        let mut visitor = Collect::default();
        event.record(&mut visitor);
        let out = Event {
            level,
            message: visitor.message,
            fields: visitor.fields,
        };
        for listener in listeners {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| listener(&out)));
        }
    }
}

#[derive(Default)]
struct Collect {
    message: String,
    fields: Vec<(String, String)>,
}

impl Visit for Collect {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.message = format!("{value:?}");
        } else {
            self.fields
                .push((field.name().to_owned(), format!("{value:?}")));
        }
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message = value.to_owned();
        } else {
            self.fields
                .push((field.name().to_owned(), value.to_owned()));
        }
    }
}
