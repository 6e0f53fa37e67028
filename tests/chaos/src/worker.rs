//! Worker processes: a child (the `chaos-worker` binary of this crate) driven over its stdin
//! and reporting over its stdout, one line per event (`ACQUIRED token=7 start_us=...`).
//!
//! Signals (SIGSTOP, SIGCONT, SIGKILL) only ever go to the child's own PID while it is not yet
//! reaped, and dropping a [`Worker`] kills and reaps it.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A running worker process.
#[derive(Debug)]
pub struct Worker {
    child: Option<Child>,
    pid: u32,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    /// Every line received so far, for failure messages.
    seen: Vec<String>,
}

impl Worker {
    /// Starts `exe` with `args`; its stdout is read line by line in the background.
    pub fn spawn(exe: &Path, args: &[String]) -> Worker {
        Worker::spawn_with_env(exe, args, &[])
    }

    /// Like [`spawn`](Worker::spawn), with extra environment variables.
    pub fn spawn_with_env(exe: &Path, args: &[String], env: &[(String, String)]) -> Worker {
        let mut child = Command::new(exe)
            .args(args)
            .env("FENCELOCK_WALL_OFFSET_NS", wall_offset_ns().to_string())
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start worker {}: {e}", exe.display()));
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped stdout");
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Worker {
            child: Some(child),
            pid,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// The worker's PID.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The next line within `timeout`, or `None`.
    pub fn next_line(&mut self, timeout: Duration) -> Option<String> {
        let line = self.lines.recv_timeout(timeout).ok()?;
        self.seen.push(line.clone());
        Some(line)
    }

    /// Lines that already arrived, without waiting.
    pub fn drain(&mut self) -> Vec<String> {
        let got: Vec<String> = self.lines.try_iter().collect();
        self.seen.extend(got.iter().cloned());
        got
    }

    /// The next line starting with `prefix` (other lines are skipped), within `timeout`.
    /// Panics with everything the worker said if it does not come.
    #[track_caller]
    pub fn expect(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next_line(left) {
                Some(line) if line.starts_with(prefix) => return line,
                Some(_) => {}
                None => panic!(
                    "worker {} did not say {prefix:?} within {timeout:?}; it said:\n{}",
                    self.pid,
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// Sends one line to the worker's stdin (buffered by the pipe even while it is stopped).
    pub fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("worker stdin open");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot write to worker {}: {e}", self.pid));
    }

    /// Freezes the worker (SIGSTOP): a GC pause, a VM migration, a swapped-out process.
    pub fn stop(&mut self) {
        self.signal(libc::SIGSTOP, "SIGSTOP");
    }

    /// Resumes a frozen worker (SIGCONT).
    pub fn cont(&mut self) {
        self.signal(libc::SIGCONT, "SIGCONT");
    }

    /// Kills the worker with SIGKILL and reaps it. Idempotent.
    pub fn kill(&mut self) {
        if self.alive() {
            if let Some(mut child) = self.child.take() {
                // SAFETY: kill(2) has no memory-safety preconditions; the child is not reaped
                // yet, so its PID cannot have been recycled.
                unsafe {
                    libc::kill(self.pid as libc::pid_t, libc::SIGCONT);
                    libc::kill(self.pid as libc::pid_t, libc::SIGKILL);
                }
                let _ = child.wait();
            }
        }
    }

    /// Whether the worker is still running (a stopped worker counts); forgets it once it has
    /// exited (and is reaped), so that its PID is never signalled again.
    pub fn alive(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            Ok(Some(_)) | Err(_) => {
                self.child = None;
                false
            }
        }
    }

    /// Closes stdin (the worker's signal to finish) and waits up to `timeout` for it to exit;
    /// kills it if it does not.
    pub fn finish(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.stdin = None;
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let child = self.child.as_mut()?;
            match child.try_wait() {
                Ok(Some(status)) => {
                    self.child = None;
                    return Some(status);
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                Err(_) => {
                    self.child = None;
                    return None;
                }
            }
        }
        self.kill();
        None
    }

    fn signal(&mut self, sig: libc::c_int, what: &str) {
        assert!(
            self.alive(),
            "{what} to worker {} which is not running",
            self.pid
        );
        // SAFETY: as in `kill`: the child is alive and not reaped.
        let ok = unsafe { libc::kill(self.pid as libc::pid_t, sig) == 0 };
        assert!(ok, "{what} to worker {} failed", self.pid);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The value of `key=value` in a worker's line, e.g. `field("ACQUIRED token=7", "token")`.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace()
        .find_map(|part| part.strip_prefix(key)?.strip_prefix('='))
}

/// Like [`field`], parsed as a number; panics with the line if it is missing or malformed.
#[track_caller]
pub fn num(line: &str, key: &str) -> u64 {
    field(line, key)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no numeric {key}= in worker line {line:?}"))
}

/// `CLOCK_REALTIME` minus `CLOCK_MONOTONIC` now, in nanoseconds: the same for every process on
/// the machine (until the wall clock is stepped), so a worker that can read only the monotonic
/// clock precisely (Node's `process.hrtime`) turns it into the wall clock the other workers
/// read, to the microsecond (`workers/wallclock.mjs`). Its own estimate from `Date.now()`'s
/// millisecond ticks was seen tens of microseconds off with twelve workers starting at once,
/// which made hand-offs to it look like overlaps. The narrowest of a few brackets: the wall
/// clock read between two monotonic readings.
fn wall_offset_ns() -> i128 {
    let read = |clock| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid clock id and a valid timespec to write.
        unsafe { libc::clock_gettime(clock, &mut ts) };
        i128::from(ts.tv_sec) * 1_000_000_000 + i128::from(ts.tv_nsec)
    };
    (0..5)
        .map(|_| {
            let before = read(libc::CLOCK_MONOTONIC);
            let wall = read(libc::CLOCK_REALTIME);
            let after = read(libc::CLOCK_MONOTONIC);
            (after - before, wall - (before + after) / 2)
        })
        .min_by_key(|(width, _)| *width)
        .map_or(0, |(_, offset)| offset)
}
