//! The socket of a thread's own connection: commands written and replies read by the calling
//! thread, within a time limit, waiting for a reply first by polling the socket for a few
//! tens of microseconds and only then by sleeping in `poll(2)`.
//!
//! Why the short spin: a reply from a server on the same machine or network arrives within
//! about one round trip (50 µs here), and a thread put to sleep and woken for it pays a
//! wake-up that on a virtual machine costs as much again (bench/notes.md). Go's scheduler
//! spins for the same reason, which is much of why a Go client beats a blocking one. The spin
//! is bounded in time and in how many threads spin at once (half the processors, at least
//! one), so that it never takes the processor the server needs.

use std::io::{self, Read};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use redis::{ConnectionAddr, ConnectionInfo, Parser, RedisResult, Value};

/// How long a thread polls the socket for a reply before it sleeps.
const SPIN: Duration = Duration::from_micros(80);

/// The threads spinning now.
static SPINNING: AtomicUsize = AtomicUsize::new(0);

/// How many threads may spin at once: half the processors, at least one.
fn spinners() -> usize {
    (super::processors() / 2).max(1)
}

enum Sock {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Sock {
    fn fd(&self) -> RawFd {
        match self {
            Sock::Tcp(s) => s.as_raw_fd(),
            Sock::Unix(s) => s.as_raw_fd(),
        }
    }
}

/// A connection's socket (non-blocking) and the parser of its replies.
pub(super) struct Wire {
    sock: Sock,
    parser: Parser,
    /// The limit of each command's write and of each reply's wait.
    timeout: Duration,
}

impl Wire {
    /// Connects to `info`'s server (plain TCP or a Unix socket, RESP2) within `timeout` and
    /// authenticates and selects its database as `info` says.
    pub fn open(info: &ConnectionInfo, timeout: Duration) -> RedisResult<Wire> {
        let sock = match info.addr() {
            ConnectionAddr::Tcp(host, port) => Sock::Tcp(connect_tcp(host, *port, timeout)?),
            ConnectionAddr::Unix(path) => Sock::Unix(UnixStream::connect(path)?),
            _ => return Err(io::Error::other("not a plain TCP or Unix socket server").into()),
        };
        match &sock {
            Sock::Tcp(s) => s.set_nonblocking(true)?,
            Sock::Unix(s) => s.set_nonblocking(true)?,
        }
        let mut wire = Wire {
            sock,
            parser: Parser::new(),
            timeout,
        };
        let settings = info.redis_settings();
        if let Some(password) = settings.password() {
            let mut auth = redis::cmd("AUTH");
            if let Some(user) = settings.username() {
                auth.arg(user);
            }
            wire.expect_ok(&auth.arg(password).get_packed_command())?;
        }
        if settings.db() != 0 {
            wire.expect_ok(&redis::cmd("SELECT").arg(settings.db()).get_packed_command())?;
        }
        Ok(wire)
    }

    fn expect_ok(&mut self, packed: &[u8]) -> RedisResult<()> {
        match self.command(packed)? {
            Value::Okay | Value::SimpleString(_) => Ok(()),
            Value::ServerError(e) => Err(e.into()),
            other => Err(io::Error::other(format!("unexpected reply {other:?}")).into()),
        }
    }

    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Sends one packed command and reads its reply (a server error is a
    /// [`Value::ServerError`], as redis' connections give it).
    pub fn command(&mut self, packed: &[u8]) -> RedisResult<Value> {
        let until = Instant::now() + self.timeout;
        self.send(packed, until)?;
        self.reply(until)
    }

    /// Sends a packed pipeline and reads its replies, returning `count` after the first
    /// `offset`.
    pub fn pipeline(
        &mut self,
        packed: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        let until = Instant::now() + self.timeout;
        self.send(packed, until)?;
        let mut replies = Vec::with_capacity(count);
        for i in 0..offset + count {
            let reply = self.reply(until)?;
            if i >= offset {
                replies.push(reply);
            }
        }
        Ok(replies)
    }

    fn send(&mut self, mut packed: &[u8], until: Instant) -> io::Result<()> {
        while !packed.is_empty() {
            // MSG_NOSIGNAL, as std's TcpStream::write sends (its UnixStream does not): a
            // closed connection fails with EPIPE and raises no SIGPIPE on the caller's thread,
            // which a C or Go host has not ignored.
            // SAFETY: the fd is this socket's, open while `self` lives; `packed` is valid for
            // its length.
            let sent = unsafe {
                libc::send(
                    self.sock.fd(),
                    packed.as_ptr().cast(),
                    packed.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            let written = if sent < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(sent as usize)
            };
            match written {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => packed = &packed[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    wait(self.sock.fd(), libc::POLLOUT, until)?
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn reply(&mut self, until: Instant) -> RedisResult<Value> {
        let reader = Reader {
            sock: &mut self.sock,
            until,
        };
        self.parser.parse_value(reader)
    }
}

/// Reads the socket for the parser: at once when data is there, else after a short spin or
/// a sleep in `poll(2)` until `until`.
struct Reader<'a> {
    sock: &'a mut Sock,
    until: Instant,
}

impl Reader<'_> {
    fn try_read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let read = match &mut self.sock {
                Sock::Tcp(s) => s.read(buf),
                Sock::Unix(s) => s.read(buf),
            };
            match read {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other,
            }
        }
    }

    /// Polls for data for at most [`SPIN`], when few enough threads spin now.
    fn spin(&mut self, buf: &mut [u8]) -> Option<io::Result<usize>> {
        if SPINNING.fetch_add(1, Ordering::AcqRel) >= spinners() {
            SPINNING.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let until = Instant::now() + SPIN;
        let mut got = None;
        while Instant::now() < until {
            match self.try_read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                other => {
                    got = Some(other);
                    break;
                }
            }
        }
        SPINNING.fetch_sub(1, Ordering::AcqRel);
        got
    }
}

impl Read for Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self.try_read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            other => return other,
        }
        if let Some(got) = self.spin(buf) {
            return got;
        }
        loop {
            wait(self.sock.fd(), libc::POLLIN, self.until)?;
            match self.try_read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                other => return other,
            }
        }
    }
}

/// Sleeps until `fd` is ready for `events` or `until` passes (an error of kind `TimedOut`).
fn wait(fd: RawFd, events: libc::c_short, until: Instant) -> io::Result<()> {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let mut poll = libc::pollfd {
            fd,
            events,
            revents: 0,
        };
        // At least 1 ms, rounded up, so that a wait never spins on a zero timeout.
        let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, ms) };
        match ready {
            -1 => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            0 => {}
            _ => return Ok(()),
        }
    }
}

fn connect_tcp(host: &str, port: u16, timeout: Duration) -> io::Result<TcpStream> {
    let mut last = io::Error::other(format!("{host} resolved to no address"));
    for addr in (host, port).to_socket_addrs()? {
        match TcpStream::connect_timeout(&addr, timeout) {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}
