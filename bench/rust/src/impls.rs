//! The three implementations behind one interface: try once, acquire waiting, release.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use redis::aio::MultiplexedConnection;
use tracing_subscriber::Layer as _;

use crate::cli::ImplKind;

/// The compare-and-delete release script of the floor.
const RELEASE_LUA: &str = r#"if redis.call("get",KEYS[1])==ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end"#;

/// The guarantee-equivalent floor's acquire (`floor-fenced`): granted only when nobody waits
/// in line (the queue's key does not exist) and the key is free, with a fencing token.
/// KEYS: the lock's key, its queue's, its fencing counter's; ARGV: token, TTL in ms.
const FENCED_ACQUIRE_LUA: &str = r#"if redis.call("exists",KEYS[2])==0 and redis.call("set",KEYS[1],ARGV[1],"nx","px",ARGV[2]) then return redis.call("incr",KEYS[3]) else return 0 end"#;

/// Its release: compare-and-delete, then a wake-up for the line when there is one.
/// KEYS: the lock's key, its queue's; ARGV: token.
const FENCED_RELEASE_LUA: &str = r#"if redis.call("get",KEYS[1])~=ARGV[1] then return 0 end redis.call("del",KEYS[1]) if redis.call("exists",KEYS[2])==1 then redis.call("publish",KEYS[2],ARGV[1]) end return 1"#;

/// The floor's retry interval while waiting in `contend` (the floor has no waiting acquire of
/// its own). The same as the Python floor's (redis-py Lock's default `sleep`, 0.1 s).
const FLOOR_RETRY: Duration = Duration::from_millis(100);

/// After a connection to a floor server broke, do not try to reconnect more often than this.
const FLOOR_RECONNECT_EVERY: Duration = Duration::from_millis(100);

/// rslock's default retry delay (private in the crate: `DEFAULT_RETRY_DELAY`).
const RSLOCK_DEFAULT_RETRY_DELAY: Duration = Duration::from_millis(200);

pub enum Impl {
    Ours(fencelock::LockManager),
    Rslock {
        /// Default settings (3 tries, 200 ms random delay) for the waiting acquire, which
        /// loops on those tries forever.
        waiting: rslock::LockManager,
        /// Same connections, one try: a try-once acquire (`lock()` with its default three
        /// tries would sleep and retry, which is not "try once").
        once: rslock::LockManager,
    },
    Floor(Floor),
}

pub enum Held {
    Ours(fencelock::Lock),
    Rslock(rslock::Lock),
    Floor { name: String, token: String },
}

/// An error of one operation, as text (logged once per kind, counted always).
pub type OpError = String;

impl Impl {
    pub fn new(kind: ImplKind, servers: &[String]) -> Result<Impl, String> {
        match kind {
            ImplKind::Ours => fencelock::LockManager::new(servers)
                .map(Impl::Ours)
                .map_err(|e| e.to_string()),
            ImplKind::OursObserved => {
                observe()?;
                fencelock::LockManager::new(servers)
                    .map(Impl::Ours)
                    .map_err(|e| e.to_string())
            }
            ImplKind::OursHolder => fencelock::LockManager::builder(servers)
                .holder_label(fencelock::default_holder_label())
                .build()
                .map(Impl::Ours)
                .map_err(|e| e.to_string()),
            ImplKind::Rslock => {
                // rslock::LockManager::new panics on a bad URL: check them first.
                let clients = servers
                    .iter()
                    .map(|u| redis::Client::open(u.as_str()).map_err(|e| format!("{u}: {e}")))
                    .collect::<Result<Vec<_>, _>>()?;
                let waiting = rslock::LockManager::from_clients(clients);
                let mut once = waiting.clone();
                once.set_retry(1, RSLOCK_DEFAULT_RETRY_DELAY);
                Ok(Impl::Rslock { waiting, once })
            }
            ImplKind::Floor => Floor::new(servers, false).map(Impl::Floor),
            ImplKind::FloorFenced => Floor::new(servers, true).map(Impl::Floor),
        }
    }

    /// One attempt. `Ok(None)`: not acquired (held by another, or too few servers said yes).
    pub async fn try_acquire(&self, name: &str, ttl: Duration) -> Result<Option<Held>, OpError> {
        match self {
            Impl::Ours(m) => match m.try_acquire(name, ttl).await {
                Ok(lock) => Ok(lock.map(Held::Ours)),
                Err(e) => Err(format!("{:?}: {e}", e.kind())),
            },
            Impl::Rslock { once, .. } => match once.lock(name.as_bytes(), ttl).await {
                Ok(lock) => Ok(Some(Held::Rslock(lock))),
                // rslock reports "not acquired" and "servers unreachable" alike.
                Err(rslock::LockError::Unavailable) => Ok(None),
                Err(e) => Err(format!("rslock: {e}")),
            },
            Impl::Floor(f) => Ok(f.try_acquire(name, ttl).await),
        }
    }

    /// The implementation's waiting acquire, never giving up.
    pub async fn acquire(&self, name: &str, ttl: Duration) -> Result<Held, OpError> {
        match self {
            Impl::Ours(m) => match m.acquire(name, ttl, None).await {
                Ok(lock) => Ok(Held::Ours(lock)),
                Err(e) => Err(format!("{:?}: {e}", e.kind())),
            },
            // `acquire` loops on `lock()` (default tries and delay) until acquired.
            Impl::Rslock { waiting, .. } => match waiting.acquire(name.as_bytes(), ttl).await {
                Ok(guard) => Ok(Held::Rslock(guard.lock)),
                Err(e) => Err(format!("rslock: {e}")),
            },
            Impl::Floor(f) => loop {
                if let Some(h) = f.try_acquire(name, ttl).await {
                    return Ok(h);
                }
                tokio::time::sleep(FLOOR_RETRY).await;
            },
        }
    }

    pub async fn release(&self, held: Held) -> Result<(), OpError> {
        match (self, held) {
            (Impl::Ours(_), Held::Ours(lock)) => lock
                .release()
                .await
                .map_err(|e| format!("{:?}: {e}", e.kind())),
            // rslock's release is best effort and reports nothing: it cannot fail here.
            (Impl::Rslock { .. }, Held::Rslock(lock)) => {
                lock.release().await;
                Ok(())
            }
            (Impl::Floor(f), Held::Floor { name, token }) => {
                let deleted = f.delete_all(&name, &token).await;
                if deleted >= f.need {
                    Ok(())
                } else {
                    Err(format!(
                        "floor release: {deleted} of {} servers deleted the key",
                        f.n()
                    ))
                }
            }
            _ => Err("internal: lock from another implementation".into()),
        }
    }
}

/// redis-rs itself: `SET key token NX PX ttl`, then the compare-and-delete script by EVALSHA
/// (`Script::invoke_async` sends EVALSHA, loading the script once on NOSCRIPT). With several
/// servers each step goes to all of them in parallel; success when a majority answered OK.
/// Fenced (`floor-fenced`), both steps are the scripts above instead.
pub struct Floor {
    servers: Vec<FloorServer>,
    script: redis::Script,
    /// The fenced acquire script, `None` for the plain `SET NX`.
    acquire: Option<redis::Script>,
    need: usize,
}

struct FloorServer {
    client: redis::Client,
    /// The multiplexed connection, `None` until connected or after it broke. A plain mutex:
    /// held only to clone the handle, never across an await.
    conn: Mutex<Option<MultiplexedConnection>>,
    /// Serialises (re)connecting, so that many tasks do not all dial at once.
    connecting: tokio::sync::Mutex<Option<Instant>>,
}

impl FloorServer {
    fn cached(&self) -> Option<MultiplexedConnection> {
        self.conn.lock().unwrap().clone()
    }

    async fn connection(&self) -> Option<MultiplexedConnection> {
        if let Some(c) = self.cached() {
            return Some(c);
        }
        let mut last_failed = self.connecting.lock().await;
        if let Some(c) = self.cached() {
            return Some(c);
        }
        if matches!(*last_failed, Some(t) if t.elapsed() < FLOOR_RECONNECT_EVERY) {
            return None;
        }
        match self.client.get_multiplexed_async_connection().await {
            Ok(c) => {
                *self.conn.lock().unwrap() = Some(c.clone());
                Some(c)
            }
            Err(_) => {
                *last_failed = Some(Instant::now());
                None
            }
        }
    }

    fn forget_if_broken(&self, e: &redis::RedisError) {
        if e.is_unrecoverable_error() || e.is_connection_dropped() || e.is_io_error() {
            *self.conn.lock().unwrap() = None;
        }
    }

    async fn set_nx(
        &self,
        acquire: Option<&redis::Script>,
        key: &str,
        token: &str,
        ttl_ms: u64,
    ) -> bool {
        let Some(mut c) = self.connection().await else {
            return false;
        };
        if let Some(script) = acquire {
            let r: redis::RedisResult<i64> = script
                .key(key)
                .key(format!("{key}:queue"))
                .key(format!("{key}:fence"))
                .arg(token)
                .arg(ttl_ms)
                .invoke_async(&mut c)
                .await;
            return match r {
                Ok(fence) => fence > 0,
                Err(e) => {
                    self.forget_if_broken(&e);
                    false
                }
            };
        }
        let r: redis::RedisResult<redis::Value> = redis::cmd("SET")
            .arg(key)
            .arg(token)
            .arg("NX")
            .arg("PX")
            .arg(ttl_ms)
            .query_async(&mut c)
            .await;
        match r {
            Ok(redis::Value::Okay) => true,
            Ok(_) => false,
            Err(e) => {
                self.forget_if_broken(&e);
                false
            }
        }
    }

    async fn delete(&self, script: &redis::Script, fenced: bool, key: &str, token: &str) -> bool {
        let Some(mut c) = self.connection().await else {
            return false;
        };
        let mut call = script.key(key);
        if fenced {
            call.key(format!("{key}:queue"));
        }
        let r: redis::RedisResult<i64> = call.arg(token).invoke_async(&mut c).await;
        match r {
            Ok(n) => n == 1,
            Err(e) => {
                self.forget_if_broken(&e);
                false
            }
        }
    }
}

impl Floor {
    fn new(servers: &[String], fenced: bool) -> Result<Floor, String> {
        let servers = servers
            .iter()
            .map(|u| {
                let client = redis::Client::open(u.as_str()).map_err(|e| format!("{u}: {e}"))?;
                Ok(FloorServer {
                    client,
                    conn: Mutex::new(None),
                    connecting: tokio::sync::Mutex::new(None),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let need = servers.len() / 2 + 1;
        Ok(Floor {
            servers,
            script: redis::Script::new(if fenced {
                FENCED_RELEASE_LUA
            } else {
                RELEASE_LUA
            }),
            acquire: fenced.then(|| redis::Script::new(FENCED_ACQUIRE_LUA)),
            need,
        })
    }

    fn n(&self) -> usize {
        self.servers.len()
    }

    async fn try_acquire(&self, name: &str, ttl: Duration) -> Option<Held> {
        let token = format!("{:032x}", rand::random::<u128>());
        let ttl_ms = ttl.as_millis().max(1) as u64;
        let won = join_all(
            self.servers
                .iter()
                .map(|s| s.set_nx(self.acquire.as_ref(), name, &token, ttl_ms)),
        )
        .await
        .into_iter()
        .filter(|ok| *ok)
        .count();
        if won >= self.need {
            return Some(Held::Floor {
                name: name.to_string(),
                token,
            });
        }
        if won > 0 {
            self.delete_all(name, &token).await; // undo the minority it won
        }
        None
    }

    async fn delete_all(&self, name: &str, token: &str) -> usize {
        join_all(
            self.servers
                .iter()
                .map(|s| s.delete(&self.script, self.acquire.is_some(), name, token)),
        )
        .await
        .into_iter()
        .filter(|ok| *ok)
        .count()
    }
}

/// Attaches what a service that looks at its locks runs: the `metrics` facade's Prometheus
/// recorder (rendered every second, as a scrape would; no HTTP listener here) and a `tracing`
/// subscriber that keeps fencelock's spans (`fencelock.acquire`, `fencelock.hold`) with their
/// fields. `FENCELOCK_BENCH_OBSERVE` picks other ways (bench/observing.py compares them):
/// `metrics` or `spans` alone; `fmt` (tracing-subscriber's fmt layer formatting every closed
/// span, to a sink) alone, or `metrics+fmt`.
fn observe() -> Result<(), String> {
    let way = std::env::var("FENCELOCK_BENCH_OBSERVE").unwrap_or_default();
    match way.as_str() {
        "" => {
            prometheus()?;
            spans_only()
        }
        "metrics" => prometheus(),
        "spans" => spans_only(),
        "fmt" => fmt_spans(),
        "metrics+fmt" => {
            prometheus()?;
            fmt_spans()
        }
        other => Err(format!(
            "FENCELOCK_BENCH_OBSERVE={other:?}: expected metrics, spans, fmt or metrics+fmt"
        )),
    }
}

/// The metrics part of [`observe`]: a Prometheus recorder, rendered every second.
fn prometheus() -> Result<(), String> {
    // Each histogram with the buckets docs/observability.md gives it (a Prometheus histogram,
    // as the Grafana dashboard reads it), not the exporter's default summary.
    let mut builder = metrics_exporter_prometheus::PrometheusBuilder::new();
    for m in fencelock::ffi_support::measure::MEASURES {
        if !m.buckets.is_empty() {
            builder = builder
                .set_buckets_for_metric(
                    metrics_exporter_prometheus::Matcher::Full(m.name.to_string()),
                    m.buckets,
                )
                .map_err(|e| format!("metrics buckets: {e}"))?;
        }
    }
    let handle = builder
        .install_recorder()
        .map_err(|e| format!("metrics recorder: {e}"))?;
    // The exporter's upkeep (histogram buckets drained), as its HTTP listener would run it.
    std::thread::spawn(move || loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        handle.run_upkeep();
        let _ = handle.render();
    });
    Ok(())
}

/// fencelock's spans kept by a subscriber that stores them and writes nothing
/// (`FENCELOCK_BENCH_OBSERVE=spans`): the cost of the spans themselves, without an exporter's.
fn spans_only() -> Result<(), String> {
    use tracing_subscriber::layer::SubscriberExt;
    let spans =
        tracing_subscriber::filter::Targets::new().with_target("fencelock", tracing::Level::INFO);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans))
        .map_err(|e| format!("tracing subscriber: {e}"))
}

/// fencelock's spans formatted by tracing-subscriber's fmt layer at every close, to a sink
/// (`FENCELOCK_BENCH_OBSERVE=fmt`): what a writing exporter adds.
fn fmt_spans() -> Result<(), String> {
    use tracing_subscriber::fmt::format::FmtSpan;
    use tracing_subscriber::layer::SubscriberExt;
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::sink)
        .with_span_events(FmtSpan::CLOSE)
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("fencelock", tracing::Level::INFO),
        );
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer))
        .map_err(|e| format!("tracing subscriber: {e}"))
}
