//! The Redlock validity computation of the C# write-up, shown on fencelock's `validity`.
//!
//! The seed (a RedLock.net-style `Lock` method over several masters):
//!
//! ```text
//! var startTime = DateTime.Now;
//! foreach (var redis in redisMasterDictionary)
//!     if (LockInstance(redis.Value, resource, val, ttl)) n++;
//! var drift = Convert.ToInt32((ttl.TotalMilliseconds * ClockDriveFactor) + 2);
//! var validity_time = ttl - (DateTime.Now - startTime) - new TimeSpan(0, 0, 0, 0, drift);
//! if (n >= Quorum && validity_time.TotalMilliseconds > 0) { /* locked */ }
//! else { foreach (var redis in redisMasterDictionary) UnlockInstance(redis.Value, resource, val); }
//! ```
//!
//! fencelock runs that rule inside `acquire` (the servers in parallel, not one after the
//! other; a monotonic clock, not `DateTime.Now`, which jumps with the wall clock; undo on every
//! server that may hold the token, lost replies included) and hands back `lock.validity()`,
//! which keeps counting down. This example measures the acquire from outside, applies the
//! C# formula to that measurement, and prints both: the C# figure can only be smaller, since
//! the outside measurement spans more time.
//!
//! `cargo run -p fencelock --example redlock_validity -- redis://h1:6379 redis://h2:6379 redis://h3:6379`

use std::time::{Duration, Instant};

use fencelock::blocking::LockManager;
use fencelock::ffi_support::quorum;
use fencelock::DEFAULT_DRIFT_FACTOR;

/// What one acquisition showed.
#[derive(Debug)]
pub struct Report {
    pub servers: usize,
    pub quorum: usize,
    pub ttl: Duration,
    /// The C# `drift`: `ttl * 0.01 + 2` ms.
    pub drift: Duration,
    /// From before `acquire` to after reading `validity()`, measured here.
    pub elapsed: Duration,
    /// `ttl - elapsed - drift`, as the C# code computes it (negative would mean "not locked").
    pub csharp_validity_ms: f64,
    /// `lock.validity()`, read right after the acquire.
    pub fencelock_validity: Duration,
}

/// Acquires `name` for `ttl` on `urls` and compares the two validity computations.
pub fn run(urls: &[String], name: &str, ttl: Duration) -> fencelock::Result<Report> {
    let manager = LockManager::new(urls)?;
    let start = Instant::now();
    let lock = manager.acquire(name, ttl, Some(Duration::from_secs(5)))?;
    let fencelock_validity = lock.validity();
    let elapsed = start.elapsed();
    lock.release()?;
    let drift = quorum::drift(ttl, DEFAULT_DRIFT_FACTOR);
    Ok(Report {
        servers: urls.len(),
        quorum: quorum::quorum(urls.len()),
        ttl,
        drift,
        elapsed,
        csharp_validity_ms: ttl.as_secs_f64() * 1e3
            - elapsed.as_secs_f64() * 1e3
            - drift.as_secs_f64() * 1e3,
        fencelock_validity,
    })
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        writeln!(f, "servers {}, quorum {}", self.servers, self.quorum)?;
        writeln!(
            f,
            "ttl {:.0} ms, drift allowance {:.0} ms (ttl x 0.01 + 2 ms)",
            ms(self.ttl),
            ms(self.drift)
        )?;
        writeln!(
            f,
            "acquire measured from outside: {:.3} ms",
            ms(self.elapsed)
        )?;
        writeln!(
            f,
            "C# validity_time = ttl - elapsed - drift = {:.3} ms",
            self.csharp_validity_ms
        )?;
        write!(
            f,
            "fencelock lock.validity() = {:.3} ms",
            ms(self.fencelock_validity)
        )
    }
}

#[allow(dead_code)] // included by core/tests/seed_examples.rs, which calls `run`
fn main() {
    let urls: Vec<String> = std::env::args().skip(1).collect();
    if urls.len() < 3 {
        eprintln!("usage: redlock_validity URL URL URL [URL...]  (independent masters)");
        std::process::exit(2);
    }
    match run(&urls, "redlock-validity", Duration::from_secs(10)) {
        Ok(report) => println!("{report}"),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
