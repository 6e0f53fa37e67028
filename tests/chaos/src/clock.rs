//! Servers whose clock the test moves: started under libfaketime (`LD_PRELOAD`, Debian package
//! `libfaketime`), which reads the clock's offset from a file of the test's on every call
//! (`FAKETIME_NO_CACHE`). Redis expires keys by its wall clock: a jump forward expires them at
//! once, a jump back makes them live longer.
//!
//! Debian's `redis-server` links jemalloc, which calls `clock_gettime` before libfaketime is
//! ready (it aborts); a server built with libc malloc works: `FENCELOCK_CLOCK_SERVER` names it
//! (stage 57-servers sets it to Valkey 8.1 from `ci/servers.sh`).

use std::ffi::OsString;
use std::path::PathBuf;

use fencelock_testkit::{Program, RedisServer};

/// The libfaketime library: `$FENCELOCK_LIBFAKETIME`, else Debian's.
pub fn libfaketime() -> PathBuf {
    if let Some(p) = std::env::var_os("FENCELOCK_LIBFAKETIME") {
        return p.into();
    }
    let found = std::fs::read_dir("/usr/lib")
        .into_iter()
        .flatten()
        .flatten()
        .map(|d| d.path().join("faketime/libfaketime.so.1"))
        .find(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!("fencelock-chaos: no libfaketime.so.1 under /usr/lib/*/faketime (Debian package libfaketime, or set FENCELOCK_LIBFAKETIME)")
    })
}

/// The server binary the clock tests run: `$FENCELOCK_CLOCK_SERVER`.
pub fn clock_server() -> OsString {
    std::env::var_os("FENCELOCK_CLOCK_SERVER").unwrap_or_else(|| {
        panic!("fencelock-chaos: set FENCELOCK_CLOCK_SERVER to a server built with libc malloc (ci/servers.sh valkey-8.1); Debian's redis-server cannot run under libfaketime")
    })
}

/// A server under libfaketime, its clock where the test puts it.
#[derive(Debug)]
pub struct ClockedServer {
    /// The server.
    pub server: RedisServer,
    offset_file: PathBuf,
}

impl ClockedServer {
    /// A server of [`clock_server`] with its clock at the real time.
    pub fn start() -> ClockedServer {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let offset_file =
            std::env::temp_dir().join(format!("fencelock-clock-{}-{n}", std::process::id()));
        std::fs::write(&offset_file, "+0\n").expect("the clock's offset file");
        let program = Program::new(clock_server())
            .env("LD_PRELOAD", libfaketime())
            .env("FAKETIME_TIMESTAMP_FILE", &offset_file)
            .env("FAKETIME_NO_CACHE", "1");
        let server = RedisServer::start_program(&program);
        ClockedServer {
            server,
            offset_file,
        }
    }

    /// Sets the server's clock `ms` milliseconds off the real time (negative: behind).
    pub fn set_offset_ms(&self, ms: i64) {
        // libfaketime's relative format: "+1.5" or "-0.25" seconds.
        let text = format!(
            "{}{:.3}\n",
            if ms < 0 { "-" } else { "+" },
            ms.unsigned_abs() as f64 / 1000.0
        );
        let tmp = self.offset_file.with_extension("tmp");
        std::fs::write(&tmp, text).expect("the clock's offset file");
        std::fs::rename(&tmp, &self.offset_file).expect("the clock's offset file");
    }

    /// The server's own `TIME`, in ms since the epoch.
    pub fn time_ms(&self) -> u64 {
        match self.server.cmd(&[b"TIME"]) {
            fencelock_testkit::Reply::Array(Some(parts)) => {
                let num = |i: usize| match &parts[i] {
                    fencelock_testkit::Reply::Bulk(Some(b)) => {
                        String::from_utf8_lossy(b).parse::<u64>().expect("TIME")
                    }
                    other => panic!("TIME: {other:?}"),
                };
                num(0) * 1000 + num(1) / 1000
            }
            other => panic!("TIME: {other:?}"),
        }
    }
}

impl Drop for ClockedServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.offset_file);
    }
}
