//! Test fixtures for fencelock: throwaway `redis-server` processes and a tiny
//! synchronous RESP2 client to inspect and tamper with their state.
//!
//! Everything here is synchronous (std only, plus `libc` for signals), so it can
//! be used from plain `#[test]`s and from `#[tokio::test]`s alike, but for
//! [`wait_until_async`], the async twin of [`wait_until`]. Failures panic with
//! a descriptive message: these are test fixtures, not library code.
//!
//! Tests wait for the thing they need with [`wait_until`] (a condition, an upper
//! bound and what never happened), never with a fixed sleep that stands for "by
//! now it has happened". [`RedisServer::queued`] and [`RedisServer::listening`]
//! are the conditions lock tests wait on most: a waiter took its place in the
//! queue, a waiter's process listens for its wake-up.
//!
//! Every [`RedisServer`] owns exactly one child process; signals are only ever
//! sent to that child's PID while it is still un-reaped, so a recycled PID can
//! never be hit.

pub mod cluster;
pub mod sentinel;
pub mod tls;

use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Read timeout used by [`RedisServer::cmd`] and the helpers built on it.
pub const CMD_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a freshly spawned server gets to answer `PING`.
const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long [`RedisServer::restart`] keeps retrying to bind the same port.
const RESTART_BIND_TIMEOUT: Duration = Duration::from_secs(3);
/// Fresh ports tried by [`RedisServer::start`] before giving up.
const START_ATTEMPTS: usize = 5;

/// A parsed RESP2 reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Simple string, e.g. `+OK`.
    Status(String),
    /// Error reply, e.g. `-ERR unknown command` (without the leading `-`).
    Error(String),
    /// Integer reply, e.g. `:1`.
    Int(i64),
    /// Bulk string; `None` is the nil bulk string `$-1`.
    Bulk(Option<Vec<u8>>),
    /// Array; `None` is the nil array `*-1`.
    Array(Option<Vec<Reply>>),
}

/// How often [`wait_until`] and [`wait_until_async`] check their condition.
const POLL: Duration = Duration::from_millis(10);

/// Waits until `cond` holds, checking every 10 ms; panics naming `what` (what never happened)
/// after `limit`. The limit is an upper bound for a hang, not a speed goal: make it generous.
pub fn wait_until(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    wait_until_why(limit, POLL, what, || (!cond()).then(String::new));
}

/// [`wait_until`] for a check that says why not yet (`Some(reason)`, `None` once it holds),
/// every `poll`; the panic after `limit` gives the last reason.
pub fn wait_until_why(
    limit: Duration,
    poll: Duration,
    what: &str,
    mut why_not: impl FnMut() -> Option<String>,
) {
    let start = Instant::now();
    while let Some(why) = why_not() {
        assert!(
            start.elapsed() < limit,
            "fencelock-testkit: after {limit:?}, still not: {what}{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" ({why})")
            }
        );
        thread::sleep(poll);
    }
}

/// [`wait_until`] for async tests: sleeps on the tokio timer between checks, so the runtime's
/// other tasks go on.
pub async fn wait_until_async(limit: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "fencelock-testkit: after {limit:?}, still not: {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// [`wait_until_async`] for a condition that is itself async (a call to the servers, such as
/// a semaphore's occupancy).
pub async fn wait_for<F, Fut>(limit: Duration, what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !cond().await {
        assert!(
            start.elapsed() < limit,
            "fencelock-testkit: after {limit:?}, still not: {what}"
        );
        tokio::time::sleep(POLL).await;
    }
}

/// Returns a currently free TCP port on 127.0.0.1 (never 6379).
///
/// The port is found by binding `127.0.0.1:0` and dropping the listener, so
/// another process may grab it before you use it; callers should retry. Never the same port
/// twice in one process: a test that killed its server counts on nobody answering there, and
/// a server another test of the same binary starts must not land on that port.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap_or_else(|e| panic!("fencelock-testkit: cannot bind 127.0.0.1:0: {e}"));
        let port = listener.local_addr().expect("local_addr").port();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if port != 6379 && !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// A free port for a test to fix before its server starts (a cluster node's bus port, a TLS
/// port, a port a proxy forwards to), when a server that cannot bind it will not be retried on
/// another: one outside the kernel's ephemeral range (`ip_local_port_range`), which the local
/// end of an outgoing connection may take at any moment (as it may take a port from
/// [`free_port`], whose servers are started again on another port when it does). Never the
/// same port twice in one process; never 6379.
pub fn fixed_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let (low, high) = ephemeral_range();
    // Below the ephemeral range (from 10,000), else above it.
    let (start, end) = if low > 12_000 {
        (10_000u32, u32::from(low))
    } else {
        (u32::from(high) + 1, 65_536)
    };
    let span = end - start;
    // Spread the processes of one run (pid) and the calls of one process (a counter).
    let seed = std::process::id().wrapping_mul(2_654_435_761);
    for _ in 0..span {
        let n = NEXT.fetch_add(7_919, Ordering::Relaxed);
        let port = (start + seed.wrapping_add(n) % span) as u16;
        if port == 6379 {
            continue;
        }
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if given.contains(&port) {
            continue;
        }
        if TcpListener::bind((Ipv4Addr::LOCALHOST, port)).is_ok() {
            given.push(port);
            return port;
        }
    }
    panic!("fencelock-testkit: no free port outside the ephemeral range {low}-{high}")
}

/// The kernel's ephemeral port range (Linux's default when it cannot be read).
fn ephemeral_range() -> (u16, u16) {
    let text =
        std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").unwrap_or_default();
    let mut parts = text
        .split_whitespace()
        .filter_map(|p| p.parse::<u16>().ok());
    match (parts.next(), parts.next()) {
        (Some(low), Some(high)) if low <= high => (low, high),
        _ => (32_768, 60_999),
    }
}

/// A free port whose port + 10000 is free as well: the cluster bus port of a server that has
/// no `cluster-port` setting (Redis before 7.0).
pub fn free_port_with_bus() -> u16 {
    loop {
        let port = free_port();
        if port <= u16::MAX - 10_000
            && TcpListener::bind((Ipv4Addr::LOCALHOST, port + 10_000)).is_ok()
        {
            return port;
        }
    }
}

/// The version of the server binary the tests start (`$REDIS_SERVER_BIN`, else
/// `redis-server`), as (major, minor), from its `--version`; asked once.
pub fn server_version() -> (u32, u32) {
    static VERSION: std::sync::OnceLock<(u32, u32)> = std::sync::OnceLock::new();
    *VERSION.get_or_init(|| {
        let bin = default_binary();
        let out = Command::new(&bin)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("fencelock-testkit: cannot run {bin:?} --version: {e}"));
        let text = String::from_utf8_lossy(&out.stdout);
        let version = text
            .split_whitespace()
            .find_map(|w| w.strip_prefix("v="))
            .unwrap_or_else(|| panic!("fencelock-testkit: no v= in {bin:?} --version: {text}"));
        let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
        (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
    })
}

/// The server binary tests start: `$REDIS_SERVER_BIN` if set, else `redis-server` on `PATH`.
pub fn default_binary() -> std::ffi::OsString {
    std::env::var_os("REDIS_SERVER_BIN").unwrap_or_else(|| "redis-server".into())
}

/// Starts `n` independent servers concurrently (one thread each).
///
/// If any of them fails to start, the ones that did start are killed and the
/// panic is propagated.
pub fn servers(n: usize) -> Vec<RedisServer> {
    let results: Vec<thread::Result<RedisServer>> = thread::scope(|s| {
        let handles: Vec<_> = (0..n).map(|_| s.spawn(RedisServer::start)).collect();
        handles.into_iter().map(|h| h.join()).collect()
    });
    let mut out = Vec::with_capacity(n);
    for r in results {
        match r {
            Ok(server) => out.push(server),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
    out
}

/// Sends one command over a fresh connection to `127.0.0.1:port` and parses the reply.
pub fn request(port: u16, args: &[&[u8]], timeout: Duration) -> io::Result<Reply> {
    let mut replies = requests(port, &[args], timeout)?;
    Ok(replies.remove(0))
}

/// Sends `commands` in order over one fresh connection to `127.0.0.1:port` (what one command
/// does can depend on an earlier one of the same connection, as `WAIT` on its writes) and
/// parses their replies.
pub fn requests(port: u16, commands: &[&[&[u8]]], timeout: Duration) -> io::Result<Vec<Reply>> {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut buf = Vec::new();
    for args in commands {
        buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
        for arg in *args {
            buf.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
            buf.extend_from_slice(arg);
            buf.extend_from_slice(b"\r\n");
        }
    }
    stream.write_all(&buf)?;
    let mut reader = BufReader::new(stream);
    commands.iter().map(|_| read_reply(&mut reader)).collect()
}

fn protocol_error(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// Parses one RESP2 reply (recursively for arrays).
fn read_reply(r: &mut impl BufRead) -> io::Result<Reply> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    let body = line
        .strip_suffix("\r\n")
        .ok_or_else(|| protocol_error(format!("unterminated RESP line {line:?}")))?;
    let (kind, rest) = body.split_at(body.len().min(1));
    let int = || {
        rest.parse::<i64>()
            .map_err(|_| protocol_error(format!("bad RESP integer {body:?}")))
    };
    match kind {
        "+" => Ok(Reply::Status(rest.to_owned())),
        "-" => Ok(Reply::Error(rest.to_owned())),
        ":" => Ok(Reply::Int(int()?)),
        "$" => match usize::try_from(int()?) {
            Err(_) => Ok(Reply::Bulk(None)),
            Ok(len) => {
                let mut data = vec![0; len + 2];
                r.read_exact(&mut data)?;
                data.truncate(len);
                Ok(Reply::Bulk(Some(data)))
            }
        },
        "*" => match usize::try_from(int()?) {
            Err(_) => Ok(Reply::Array(None)),
            Ok(len) => (0..len)
                .map(|_| read_reply(r))
                .collect::<io::Result<_>>()
                .map(|v| Reply::Array(Some(v))),
        },
        _ => Err(protocol_error(format!("unknown RESP reply {body:?}"))),
    }
}

/// Sends `sig` to `pid`; returns whether the signal was delivered.
fn signal(pid: u32, sig: libc::c_int) -> bool {
    // SAFETY: kill(2) has no memory-safety preconditions.
    unsafe { libc::kill(pid as libc::pid_t, sig) == 0 }
}

/// The last `n` lines of the file at `path` (or a note that it is unreadable).
fn tail(path: &Path, n: usize) -> String {
    match fs::read_to_string(path) {
        Ok(text) => {
            let lines: Vec<&str> = text.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

/// Creates a fresh, uniquely named directory under [`std::env::temp_dir`].
fn unique_temp_dir() -> PathBuf {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!(
        "fencelock-testkit-{}-{}-{nanos}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let dir = std::env::temp_dir().join(name);
    fs::create_dir(&dir)
        .unwrap_or_else(|e| panic!("fencelock-testkit: cannot create {}: {e}", dir.display()));
    dir
}

/// A `redis-server` child process on 127.0.0.1 with no persistence, owned by
/// the test. Dropping it kills the process and removes its temp dir.
#[derive(Debug)]
pub struct RedisServer {
    /// `None` once the child has been killed and reaped.
    child: Option<Child>,
    port: u16,
    pid: u32,
    dir: PathBuf,
    /// Extra command-line arguments, kept for [`restart`](Self::restart).
    extra_args: Vec<String>,
    /// The server binary and its environment, kept for [`restart`](Self::restart).
    program: Program,
}

/// A server binary and the environment it runs with (`LD_PRELOAD` of libfaketime, for a
/// server whose clock a test moves).
#[derive(Debug, Clone)]
pub struct Program {
    /// The binary.
    pub bin: std::ffi::OsString,
    /// Extra environment variables.
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

impl Program {
    /// `bin` with the test's environment.
    pub fn new(bin: impl AsRef<std::ffi::OsStr>) -> Program {
        Program {
            bin: bin.as_ref().to_owned(),
            env: Vec::new(),
        }
    }

    /// The same with `key=value` in its environment.
    pub fn env(
        mut self,
        key: impl AsRef<std::ffi::OsStr>,
        value: impl AsRef<std::ffi::OsStr>,
    ) -> Program {
        self.env
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }
}

impl RedisServer {
    /// Starts a server on a free port and waits until it answers `PING`.
    ///
    /// The binary is `$REDIS_SERVER_BIN` if set, else `redis-server` on `PATH`.
    /// Panics (with the server log) if no server could be started.
    pub fn start() -> RedisServer {
        RedisServer::start_with_args(&[])
    }

    /// Starts a server as [`start`](Self::start) does, with extra `redis-server` arguments
    /// (e.g. `--tls-port`, `--replicaof`), which [`restart`](Self::restart) repeats. The plain
    /// port stays on, for the fixture's own commands.
    pub fn start_with_args(extra_args: &[String]) -> RedisServer {
        RedisServer::start_on(free_port, extra_args)
    }

    /// As [`start_with_args`](Self::start_with_args), on a port `pick` chooses (a cluster node
    /// of a server without `cluster-port` needs its port + 10000 free for its bus).
    pub(crate) fn start_on(pick: fn() -> u16, extra_args: &[String]) -> RedisServer {
        RedisServer::launch_new(&Program::new(default_binary()), pick, extra_args)
    }

    /// Starts a server as [`start`](Self::start) does, from the binary `bin` rather than the
    /// default one (a Redlock of servers of several kinds and versions).
    pub fn start_binary(bin: impl AsRef<std::ffi::OsStr>) -> RedisServer {
        RedisServer::start_program(&Program::new(bin))
    }

    /// Starts a server as [`start`](Self::start) does, running `program`.
    pub fn start_program(program: &Program) -> RedisServer {
        RedisServer::launch_new(program, free_port, &[])
    }

    fn launch_new(program: &Program, pick: fn() -> u16, extra_args: &[String]) -> RedisServer {
        let dir = unique_temp_dir();
        let mut last_err = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = pick();
            match launch(program, port, &dir, extra_args) {
                Ok(child) => {
                    let pid = child.id();
                    return RedisServer {
                        child: Some(child),
                        port,
                        pid,
                        dir,
                        extra_args: extra_args.to_vec(),
                        program: program.clone(),
                    };
                }
                Err(e) => last_err = e,
            }
        }
        let _ = fs::remove_dir_all(&dir);
        panic!("fencelock-testkit: redis-server failed to start after {START_ATTEMPTS} attempts: {last_err}");
    }

    /// The directory of this server's files (log, any files a test puts there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The TCP port the server listens on (stable across [`restart`](Self::restart)).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// PID of the current server process (changes on [`restart`](Self::restart)).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Path of the server's log file.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    /// Whether the server process is alive (a SIGSTOPped server counts as running).
    pub fn is_running(&mut self) -> bool {
        let Some(child) = self.child.as_mut() else {
            return false;
        };
        match child.try_wait() {
            Ok(None) => true,
            // Exited (and now reaped): forget it so its PID is never signalled again.
            Ok(Some(_)) | Err(_) => {
                self.child = None;
                false
            }
        }
    }

    /// Kills the server with SIGKILL and reaps it. Idempotent.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(self.pid, libc::SIGCONT);
            signal(self.pid, libc::SIGKILL);
            let _ = child.wait();
        }
    }

    /// Freezes the server with SIGSTOP: connections are still accepted by the
    /// kernel but nothing is answered until [`cont`](Self::cont).
    pub fn stop(&mut self) {
        self.send_signal(libc::SIGSTOP, "SIGSTOP");
    }

    /// Resumes a server frozen by [`stop`](Self::stop) (SIGCONT).
    pub fn cont(&mut self) {
        self.send_signal(libc::SIGCONT, "SIGCONT");
    }

    fn send_signal(&mut self, sig: libc::c_int, name: &str) {
        assert!(
            self.is_running(),
            "fencelock-testkit: {name} to a server that is not running"
        );
        assert!(
            signal(self.pid, sig),
            "fencelock-testkit: {name} to pid {} failed: {}",
            self.pid,
            io::Error::last_os_error()
        );
    }

    /// Kills the server if it is running, then starts a new, empty one on the
    /// same port and waits for `PING`. Retries binding for ~3 s.
    pub fn restart(&mut self) {
        self.kill();
        let _ = fs::remove_file(self.dir.join("dump.rdb"));
        let deadline = Instant::now() + RESTART_BIND_TIMEOUT;
        loop {
            match launch(&self.program, self.port, &self.dir, &self.extra_args) {
                Ok(child) => {
                    self.pid = child.id();
                    self.child = Some(child);
                    return;
                }
                Err(e) if Instant::now() >= deadline => {
                    panic!(
                        "fencelock-testkit: restart on port {} failed: {e}",
                        self.port
                    )
                }
                Err(_) => thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    /// Sends a command and returns the reply; panics on I/O or protocol errors
    /// (a Redis error reply is returned as [`Reply::Error`]). 2 s read timeout.
    pub fn cmd(&self, args: &[&[u8]]) -> Reply {
        self.cmd_with_timeout(args, CMD_TIMEOUT)
            .unwrap_or_else(|e| {
                panic!(
                    "fencelock-testkit: {} on port {} failed: {e}",
                    String::from_utf8_lossy(args[0]),
                    self.port
                )
            })
    }

    /// Like [`cmd`](Self::cmd) but with a custom connect/read timeout, returning
    /// I/O errors (e.g. a timeout while the server is stopped) instead of panicking.
    pub fn cmd_with_timeout(&self, args: &[&[u8]], timeout: Duration) -> io::Result<Reply> {
        request(self.port, args, timeout)
    }

    /// `GET key`.
    pub fn get(&self, key: &[u8]) -> Option<Vec<u8>> {
        match self.cmd(&[b"GET", key]) {
            Reply::Bulk(v) => v,
            other => panic!("fencelock-testkit: unexpected GET reply {other:?}"),
        }
    }

    /// `SET key value`.
    pub fn set(&self, key: &[u8], value: &[u8]) {
        let reply = self.cmd(&[b"SET", key, value]);
        assert_eq!(
            reply,
            Reply::Status("OK".into()),
            "fencelock-testkit: SET failed"
        );
    }

    /// `SET key value NX PX ms`; true if the key was set.
    pub fn set_nx_px(&self, key: &[u8], value: &[u8], ms: u64) -> bool {
        match self.cmd(&[b"SET", key, value, b"NX", b"PX", ms.to_string().as_bytes()]) {
            Reply::Status(s) if s == "OK" => true,
            Reply::Bulk(None) => false,
            other => panic!("fencelock-testkit: unexpected SET NX PX reply {other:?}"),
        }
    }

    /// `PTTL key`: remaining ms, -1 if no expiry, -2 if missing.
    pub fn pttl(&self, key: &[u8]) -> i64 {
        self.int_cmd(&[b"PTTL", key])
    }

    /// `DEL key`: number of keys removed.
    pub fn del(&self, key: &[u8]) -> i64 {
        self.int_cmd(&[b"DEL", key])
    }

    /// `DBSIZE`: number of keys in the current database.
    pub fn dbsize(&self) -> i64 {
        self.int_cmd(&[b"DBSIZE"])
    }

    /// The server's name and version as `INFO server` gives them: `redis 6.2.14`,
    /// `valkey 8.1.1` (Valkey names itself in `server_name`, and answers `redis_version` with
    /// the Redis version it is compatible with).
    pub fn version(&self) -> String {
        let info = match self.cmd(&[b"INFO", b"server"]) {
            Reply::Bulk(Some(v)) => String::from_utf8_lossy(&v).into_owned(),
            other => panic!("fencelock-testkit: unexpected INFO reply {other:?}"),
        };
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        };
        match (field("server_name"), field("valkey_version")) {
            (Some(name), Some(version)) => format!("{name} {version}"),
            _ => format!("redis {}", field("redis_version").unwrap_or_default()),
        }
    }

    /// `INFO commandstats` as text (lines like `cmdstat_set:calls=3,...`).
    pub fn info_commandstats(&self) -> String {
        match self.cmd(&[b"INFO", b"commandstats"]) {
            Reply::Bulk(Some(v)) => String::from_utf8_lossy(&v).into_owned(),
            other => panic!("fencelock-testkit: unexpected INFO reply {other:?}"),
        }
    }

    /// How many waiters hold a place in the wait queue of lock `name` (key prefix `prefix`).
    /// The queue is found by its pattern (`P fencelock:{*}:queue: name`, the layout of
    /// `fencelock::ffi_support::keys`), so that this fixture does not compute hash slots itself.
    pub fn queued(&self, prefix: &str, name: &str) -> i64 {
        let pattern = format!(
            "{}fencelock:{{*}}:queue:{}",
            glob_escape(prefix),
            glob_escape(name)
        );
        let keys = match self.cmd(&[b"KEYS", pattern.as_bytes()]) {
            Reply::Array(Some(keys)) => keys,
            other => panic!("fencelock-testkit: unexpected KEYS reply {other:?}"),
        };
        keys.iter()
            .map(|k| match k {
                Reply::Bulk(Some(key)) => self.int_cmd(&[b"ZCARD", key]),
                other => panic!("fencelock-testkit: unexpected KEYS entry {other:?}"),
            })
            .sum()
    }

    /// Whether some process listens for the wake-ups of lock `name` (key prefix `prefix`): a
    /// waiter's subscription to its wake-up channel (`P fencelock:{*}:released: name|*`).
    pub fn listening(&self, prefix: &str, name: &str) -> bool {
        let pattern = format!(
            "{}fencelock:{{*}}:released:{}|*",
            glob_escape(prefix),
            glob_escape(name)
        );
        matches!(
            self.cmd(&[b"PUBSUB", b"CHANNELS", pattern.as_bytes()]),
            Reply::Array(Some(c)) if !c.is_empty()
        )
    }

    /// `FLUSHALL`.
    pub fn flushall(&self) {
        let reply = self.cmd(&[b"FLUSHALL"]);
        assert_eq!(
            reply,
            Reply::Status("OK".into()),
            "fencelock-testkit: FLUSHALL failed"
        );
    }

    fn int_cmd(&self, args: &[&[u8]]) -> i64 {
        match self.cmd(args) {
            Reply::Int(n) => n,
            other => panic!(
                "fencelock-testkit: unexpected {} reply {other:?}",
                String::from_utf8_lossy(args[0])
            ),
        }
    }
}

/// `text` as a Redis glob pattern that matches only itself (`*`, `?`, `[`, `]` and `\\`
/// escaped).
pub fn glob_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        if thread::panicking() {
            eprintln!(
                "---- redis-server on port {} log tail ({}) ----\n{}\n---- end of log ----",
                self.port,
                self.log_path().display(),
                tail(&self.log_path(), 40)
            );
        }
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Spawns redis-server on `port` and waits until it answers `PING`.
///
/// Returns `Err` (after reaping the child) if it exits early, e.g. because the
/// port is taken, or does not become ready in time.
fn launch(
    program: &Program,
    port: u16,
    dir: &Path,
    extra_args: &[String],
) -> Result<Child, String> {
    let log = dir.join("redis.log");
    let stderr =
        fs::File::create(dir.join("stderr.log")).map_err(|e| format!("stderr.log: {e}"))?;
    let bin = &program.bin;
    let mut child = Command::new(bin)
        .envs(program.env.iter().map(|(k, v)| (k, v)))
        .arg("--port").arg(port.to_string())
        .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .arg("--dir").arg(dir)
        .arg("--logfile").arg(&log)
        .args(["--daemonize", "no", "--protected-mode", "no"])
        .args(extra_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| {
            panic!("fencelock-testkit: cannot spawn {bin:?} (set REDIS_SERVER_BIN or put redis-server on PATH): {e}")
        });
    let pid = child.id();
    let deadline = Instant::now() + READY_TIMEOUT;
    let failure = loop {
        if let Ok(Some(status)) = child.try_wait() {
            // Already reaped: do not signal the (possibly recycled) PID.
            return Err(failure_report(
                pid,
                port,
                dir,
                &format!("exited early with {status}"),
            ));
        }
        // PING, then make sure it is *our* process answering, not a stranger on the port.
        let ping = request(port, &[b"PING"], Duration::from_millis(200));
        if matches!(ping, Ok(Reply::Status(ref s)) if s == "PONG") {
            if let Ok(Reply::Bulk(Some(info))) = request(port, &[b"INFO", b"server"], CMD_TIMEOUT) {
                if String::from_utf8_lossy(&info).contains(&format!("process_id:{pid}\r\n")) {
                    return Ok(child);
                }
            }
        }
        if Instant::now() >= deadline {
            break format!("not answering PING after {READY_TIMEOUT:?}");
        }
        thread::sleep(Duration::from_millis(10));
    };
    signal(pid, libc::SIGKILL);
    let _ = child.wait();
    Err(failure_report(pid, port, dir, &failure))
}

fn failure_report(pid: u32, port: u16, dir: &Path, failure: &str) -> String {
    format!(
        "redis-server (pid {pid}, port {port}) {failure}\n--- stderr ---\n{}\n--- log ---\n{}",
        tail(&dir.join("stderr.log"), 40),
        tail(&dir.join("redis.log"), 40)
    )
}
