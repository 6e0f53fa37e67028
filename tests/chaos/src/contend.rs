//! Holders contending for a few names until a deadline, recording every hold in a
//! [`History`] and every failure, for the fault tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fencelock::{AcquireOptions, ErrorKind, Lock, LockManager};

use crate::history::{now_us, History, Hold, HoldKind};

/// What the holders take of each name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Locks.
    Lock,
    /// Permits of semaphores of `limit`: each acquisition 1 to `max_count` of them.
    Semaphore {
        /// The semaphores' limit.
        limit: u32,
        /// The most permits one acquisition takes.
        max_count: u32,
    },
    /// Read-write locks: one acquisition in `write_one_in` writes, the others read.
    RwLock {
        /// How rare writes are.
        write_one_in: u64,
    },
}

impl Family {
    /// Acquires the next lease of this family on `name` (its kind drawn with `rng`).
    async fn acquire(
        self,
        m: &LockManager,
        name: &str,
        opts: &AcquireOptions,
        rng: &mut Rng,
    ) -> fencelock::Result<(Lock, HoldKind)> {
        match self {
            Family::Lock => Ok((m.acquire_with(name, opts).await?, HoldKind::Lock)),
            Family::Semaphore { limit, max_count } => {
                let count = 1 + rng.below(u64::from(max_count)) as u32;
                let sem = m.semaphore(name, limit)?;
                let lease = sem.acquire_with(count, opts).await?;
                let (count, limit) = (count.into(), limit.into());
                Ok((lease, HoldKind::Permits { count, limit }))
            }
            Family::RwLock { write_one_in } => {
                let rw = m.rwlock(name)?;
                if rng.below(write_one_in) == 0 {
                    Ok((rw.write_with(opts).await?, HoldKind::Write))
                } else {
                    Ok((rw.read_with(opts).await?, HoldKind::Read))
                }
            }
        }
    }
}

/// What the holders do.
#[derive(Debug, Clone)]
pub struct Contention {
    /// Number of concurrent holder tasks.
    pub holders: usize,
    /// The names they contend for (holder `i` starts at name `i % len` and moves on).
    pub names: Vec<String>,
    /// TTL of each acquisition.
    pub ttl: Duration,
    /// Wait limit of each acquisition.
    pub wait: Duration,
    /// Each hold lasts a pseudo-random time in `[0, max_hold]`.
    pub max_hold: Duration,
    /// When the holders stop (each finishes the acquisition it is in).
    pub until: Instant,
}

/// One acquisition attempt's outcome, as a holder saw it.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// When the attempt started.
    pub started: Instant,
    /// How long it took.
    pub took: Duration,
    /// `None` when acquired, else the error's kind.
    pub error: Option<ErrorKind>,
    /// The error message, if any.
    pub message: String,
}

/// Everything the holders saw.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every acquisition attempt, in completion order.
    pub attempts: Vec<Attempt>,
    /// Release outcomes by kind (`"ok"` or the error kind).
    pub releases: BTreeMap<String, usize>,
}

impl Report {
    /// Number of successful acquisitions.
    pub fn acquired(&self) -> usize {
        self.attempts.iter().filter(|a| a.error.is_none()).count()
    }

    /// Number of successful acquisitions that started at or after `t`.
    pub fn acquired_after(&self, t: Instant) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.error.is_none() && a.started >= t)
            .count()
    }

    /// Number of successful acquisitions that started at or after `from` and ended before `to`.
    pub fn acquired_within(&self, from: Instant, to: Instant) -> usize {
        self.within(from, to).filter(|a| a.error.is_none()).count()
    }

    /// Attempts that started at or after `from` and ended before `to`.
    pub fn within(&self, from: Instant, to: Instant) -> impl Iterator<Item = &Attempt> {
        self.attempts
            .iter()
            .filter(move |a| a.started >= from && a.started + a.took <= to)
    }

    /// Failed attempts by kind name.
    pub fn errors(&self) -> BTreeMap<&'static str, usize> {
        let mut m = BTreeMap::new();
        for a in &self.attempts {
            if let Some(k) = a.error {
                *m.entry(k.as_str()).or_insert(0) += 1;
            }
        }
        m
    }

    /// Number of failed attempts of one kind.
    pub fn failed_with(&self, kind: ErrorKind) -> usize {
        self.attempts
            .iter()
            .filter(|a| a.error == Some(kind))
            .count()
    }

    /// Failed attempts whose kind is not one of `allowed`, with their messages.
    pub fn unexpected_errors(&self, allowed: &[ErrorKind]) -> Vec<String> {
        self.attempts
            .iter()
            .filter(|a| matches!(a.error, Some(k) if !allowed.contains(&k)))
            .map(|a| a.message.clone())
            .collect()
    }

    /// The longest time any attempt took.
    pub fn slowest(&self) -> Duration {
        self.attempts
            .iter()
            .map(|a| a.took)
            .max()
            .unwrap_or_default()
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} attempts, {} acquired, errors {:?}, releases {:?}, slowest attempt {:?}",
            self.attempts.len(),
            self.acquired(),
            self.errors(),
            self.releases,
            self.slowest()
        )
    }
}

/// A small xorshift generator: hold times need spread, not quality.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        if n == 0 {
            0
        } else {
            self.0 % n
        }
    }
}

/// Runs the holders to the deadline on the current runtime, recording holds in `history`.
pub async fn contend(manager: LockManager, spec: Contention, history: History) -> Report {
    contend_family(manager, spec, Family::Lock, history).await
}

/// [`contend`] for leases of `family` (locks, a semaphore's permits, read-write locks).
pub async fn contend_family(
    manager: LockManager,
    spec: Contention,
    family: Family,
    history: History,
) -> Report {
    let report = Arc::new(Mutex::new(Report::default()));
    let mut tasks = Vec::new();
    for i in 0..spec.holders {
        let (m, spec, history, report) = (
            manager.clone(),
            spec.clone(),
            history.clone(),
            Arc::clone(&report),
        );
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((i as u64 + 1) * 0x1000_0001));
            let mut round = 0usize;
            while Instant::now() < spec.until {
                let name = &spec.names[(i + round) % spec.names.len()];
                round += 1;
                let started = Instant::now();
                let opts = AcquireOptions::new(spec.ttl).wait(Some(spec.wait));
                let result = family.acquire(&m, name, &opts, &mut rng).await;
                let took = started.elapsed();
                let (lock, kind) = match result {
                    Ok(got) => got,
                    Err(e) => {
                        report.lock().unwrap().attempts.push(Attempt {
                            started,
                            took,
                            error: Some(e.kind()),
                            message: e.to_string(),
                        });
                        // Do not spin when servers refuse at once (a majority down).
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                };
                let start_us = now_us();
                let validity = lock.validity();
                let hold_us = rng.below(spec.max_hold.as_micros() as u64 + 1);
                tokio::time::sleep(Duration::from_micros(hold_us)).await;
                let end_us = now_us();
                history.record(
                    Hold::new(
                        name.clone(),
                        lock.fencing_token(),
                        start_us,
                        end_us,
                        validity,
                        format!("task {i}"),
                    )
                    .of_kind(kind),
                );
                let released = match lock.release().await {
                    Ok(()) => "ok".to_string(),
                    Err(e) => {
                        eprintln!("task {i}: release failed: {e}");
                        e.kind().to_string()
                    }
                };
                let mut r = report.lock().unwrap();
                r.attempts.push(Attempt {
                    started,
                    took,
                    error: None,
                    message: String::new(),
                });
                *r.releases.entry(released).or_insert(0) += 1;
            }
        }));
    }
    for t in tasks {
        t.await.expect("holder task panicked");
    }
    let r = report.lock().unwrap().clone();
    r
}

/// A manager of the cluster at `url` as the cluster fault tests use it: writes acknowledged
/// by one replica (500 ms), a 1 s server timeout, 50 ms between attempts.
pub fn acknowledged_cluster_manager(url: String) -> LockManager {
    LockManager::builder([url])
        .server_timeout(Duration::from_millis(1000))
        .replica_ack(1, Duration::from_millis(500))
        .retry_delay(Duration::from_millis(50))
        .build()
        .expect("a cluster manager")
}

/// The runtime the fault tests run their holders on (two worker threads).
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Waits for the holders of [`contend`], failing the test if they overrun their deadline
/// `until` by `hang_limit`: a hang.
///
/// # Panics
/// On a hang, or when the holders panicked.
pub fn finish(
    rt: &tokio::runtime::Runtime,
    job: tokio::task::JoinHandle<Report>,
    until: Instant,
    hang_limit: Duration,
) -> Report {
    let limit = until.saturating_duration_since(Instant::now()) + hang_limit;
    rt.block_on(async { tokio::time::timeout(limit, job).await })
        .unwrap_or_else(|_| {
            panic!("holders still running {hang_limit:?} after their deadline: hung")
        })
        .expect("holders panicked")
}
