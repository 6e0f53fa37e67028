//! A fault-injecting TCP proxy, placed between clients and a chosen server.
//!
//! [`Proxy::start`] listens on a free `127.0.0.1` port and forwards every accepted connection
//! to the target. The proxy runs on a Tokio runtime of its own (one thread), so synchronous
//! tests and async tests on any runtime can use it alike. Every control takes effect at once,
//! for the connections already open and for new ones:
//!
//! - [`set_latency`](Proxy::set_latency): each chunk is delivered `latency` after it was read,
//!   in both directions (chunks are timestamped when read, so latency does not cut
//!   throughput; lowering it releases chunks that are already due);
//! - [`set_jitter`](Proxy::set_jitter): each chunk is delayed by a further random time up to
//!   `jitter`, drawn when it is read. A connection is a byte stream, so its chunks still
//!   arrive in order (one waits behind another delayed longer), but chunks of different
//!   connections (clients, or one client's several connections) are reordered: a request
//!   sent later on one connection may reach the server before one sent earlier on another,
//!   and replies likewise;
//! - [`stall`](Proxy::stall): one direction stops forwarding; what is read meanwhile is kept,
//!   in order, and delivered when the stall ends (a partition that heals: TCP would
//!   retransmit). Reading stops when the buffer is full, so the sender feels backpressure;
//! - [`blackhole`](Proxy::blackhole): connections are accepted and read, but nothing is
//!   forwarded either way and what is read is thrown away. A byte stream never loses bytes in
//!   the middle, so a connection that lost data is closed when the blackhole is lifted (TCP
//!   would have timed it out): clients never see a silently corrupted stream;
//! - [`cut_from`](Proxy::cut_from): the blackhole for the connections from one address only
//!   (a node of a cluster whose bus connections leave from an address of its own,
//!   `bind-source-addr`), the others pass;
//! - [`drop_connections`](Proxy::drop_connections): every open connection is closed now.
//!
//! Dropping the proxy stops it and closes every connection.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

/// One direction of a proxied connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Requests: from the client to the server.
    ClientToServer,
    /// Replies: from the server back to the client.
    ServerToClient,
}

/// The faults in force; every connection watches them.
#[derive(Debug, Clone, Copy, Default)]
struct Faults {
    latency: Duration,
    jitter: Duration,
    blackhole: bool,
    stall_c2s: bool,
    stall_s2c: bool,
    /// Connections from this address are blackholed.
    cut_from: Option<IpAddr>,
    /// Bumped by `drop_connections`: connections opened under an older epoch close.
    drop_epoch: u64,
    shutdown: bool,
}

impl Faults {
    /// Whether a connection from `peer` forwards nothing (and throws away what it reads).
    fn holed(&self, peer: Option<IpAddr>) -> bool {
        self.blackhole || (self.cut_from.is_some() && self.cut_from == peer)
    }

    fn stalled(&self, dir: Direction) -> bool {
        match dir {
            Direction::ClientToServer => self.stall_c2s,
            Direction::ServerToClient => self.stall_s2c,
        }
    }
}

#[derive(Debug, Default)]
struct Stats {
    accepted: AtomicUsize,
    open: AtomicUsize,
}

/// Chunks kept per direction while stalled or delayed before reading stops (backpressure).
const QUEUE_CHUNKS: usize = 1024;
/// Size of one read.
const CHUNK: usize = 16 * 1024;

/// A running fault-injecting proxy. See the [module docs](self).
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    target: SocketAddr,
    faults: watch::Sender<Faults>,
    stats: Arc<Stats>,
    thread: Option<JoinHandle<()>>,
}

impl Proxy {
    /// Starts a proxy to `target` on a free `127.0.0.1` port (never 6379).
    ///
    /// Panics if no port can be bound or the runtime thread cannot start (a test fixture).
    pub fn start(target: SocketAddr) -> Proxy {
        let listener = loop {
            let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
                .unwrap_or_else(|e| panic!("chaos proxy: cannot bind 127.0.0.1:0: {e}"));
            if l.local_addr().map(|a| a.port()).ok() != Some(6379) {
                break l;
            }
        };
        let addr = listener.local_addr().expect("local_addr");
        listener
            .set_nonblocking(true)
            .expect("chaos proxy: set_nonblocking");
        let (faults, rx) = watch::channel(Faults::default());
        let stats = Arc::new(Stats::default());
        let thread_stats = Arc::clone(&stats);
        let thread = std::thread::Builder::new()
            .name(format!("chaos-proxy-{}", addr.port()))
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("chaos proxy: runtime");
                runtime.block_on(serve(listener, target, rx, thread_stats));
                // Dropping the runtime cancels every connection task: their sockets close.
            })
            .expect("chaos proxy: spawn thread");
        Proxy {
            addr,
            target,
            faults,
            stats,
            thread: Some(thread),
        }
    }

    /// A proxy to `127.0.0.1:port`.
    pub fn to_port(port: u16) -> Proxy {
        Proxy::start(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
    }

    /// The address clients connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The port clients connect to.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// The address connections are forwarded to.
    pub fn target(&self) -> SocketAddr {
        self.target
    }

    /// `redis://127.0.0.1:PORT` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Delays every forwarded chunk by `latency`, in both directions (zero: no delay).
    pub fn set_latency(&self, latency: Duration) {
        self.faults.send_modify(|f| f.latency = latency);
    }

    /// Delays every forwarded chunk by a further random time up to `jitter` (zero: none),
    /// reordering chunks across connections (see the [module docs](self)).
    pub fn set_jitter(&self, jitter: Duration) {
        self.faults.send_modify(|f| f.jitter = jitter);
    }

    /// Blackholes the connections from `from` only (`None`: none): see the
    /// [module docs](self).
    pub fn cut_from(&self, from: Option<IpAddr>) {
        self.faults.send_modify(|f| f.cut_from = from);
    }

    /// Closes every connection open now; later connections are accepted as usual.
    pub fn drop_connections(&self) {
        self.faults.send_modify(|f| f.drop_epoch += 1);
    }

    /// Turns the blackhole on or off: while on, connections are accepted and read, but nothing
    /// is forwarded in either direction. Connections that lost data are closed when it is
    /// turned off.
    pub fn blackhole(&self, on: bool) {
        self.faults.send_modify(|f| f.blackhole = on);
    }

    /// Stops (or resumes) forwarding in one direction; data read meanwhile is delivered, in
    /// order, when the stall ends.
    pub fn stall(&self, direction: Direction, on: bool) {
        self.faults.send_modify(|f| match direction {
            Direction::ClientToServer => f.stall_c2s = on,
            Direction::ServerToClient => f.stall_s2c = on,
        });
    }

    /// Removes every fault (latency, jitter, stalls, blackhole); open connections stay open
    /// unless they lost data to the blackhole.
    pub fn heal(&self) {
        self.faults.send_modify(|f| {
            f.latency = Duration::ZERO;
            f.jitter = Duration::ZERO;
            f.cut_from = None;
            f.blackhole = false;
            f.stall_c2s = false;
            f.stall_s2c = false;
        });
    }

    /// Connections accepted since the start.
    pub fn accepted(&self) -> usize {
        self.stats.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.stats.open.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.faults.send_modify(|f| f.shutdown = true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    listener: std::net::TcpListener,
    target: SocketAddr,
    mut faults: watch::Receiver<Faults>,
    stats: Arc<Stats>,
) {
    let listener = TcpListener::from_std(listener).expect("chaos proxy: listener");
    loop {
        if faults.borrow_and_update().shutdown {
            return;
        }
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((client, _)) => {
                    stats.accepted.fetch_add(1, Ordering::SeqCst);
                    tokio::spawn(connection(client, target, faults.clone(), Arc::clone(&stats)));
                }
                // Out of file descriptors and the like: do not spin.
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            },
            changed = faults.changed() => if changed.is_err() { return },
        }
    }
}

/// Counts an open connection for as long as it lives.
struct OpenGuard(Arc<Stats>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn connection(
    client: TcpStream,
    target: SocketAddr,
    faults: watch::Receiver<Faults>,
    stats: Arc<Stats>,
) {
    stats.open.fetch_add(1, Ordering::SeqCst);
    let _open = OpenGuard(stats);
    let epoch = faults.borrow().drop_epoch;
    let peer = client.peer_addr().ok().map(|a| a.ip());
    // Data thrown away by the blackhole: the connection must close once it is lifted.
    let lost = AtomicBool::new(false);
    let lost_notify = Notify::new();
    let forward = async {
        let Ok(server) = TcpStream::connect(target).await else {
            return; // the target is down: the client sees its connection closed
        };
        let _ = client.set_nodelay(true);
        let _ = server.set_nodelay(true);
        let (cr, cw) = client.into_split();
        let (sr, sw) = server.into_split();
        let lost = (&lost, &lost_notify);
        tokio::join!(
            pipe(
                cr,
                sw,
                Direction::ClientToServer,
                (faults.clone(), peer),
                lost
            ),
            pipe(
                sr,
                cw,
                Direction::ServerToClient,
                (faults.clone(), peer),
                lost
            ),
        );
    };
    tokio::select! {
        () = forward => {}
        () = until_closed((faults.clone(), peer), epoch, &lost, &lost_notify) => {}
    }
}

/// Completes when the connection must be closed: dropped, proxy shut down, or data lost to a
/// blackhole that is now lifted.
async fn until_closed(
    (mut faults, peer): (watch::Receiver<Faults>, Option<IpAddr>),
    epoch: u64,
    lost: &AtomicBool,
    lost_notify: &Notify,
) {
    loop {
        {
            let f = faults.borrow_and_update();
            if f.shutdown
                || f.drop_epoch != epoch
                || (!f.holed(peer) && lost.load(Ordering::SeqCst))
            {
                return;
            }
        }
        tokio::select! {
            changed = faults.changed() => if changed.is_err() { return },
            () = lost_notify.notified() => {}
        }
    }
}

fn mark_lost((lost, notify): (&AtomicBool, &Notify)) {
    lost.store(true, Ordering::SeqCst);
    notify.notify_one();
}

/// Forwards one direction: a reader timestamps chunks into a bounded queue, a writer delivers
/// each when the faults allow.
async fn pipe(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    dir: Direction,
    (faults, peer): (watch::Receiver<Faults>, Option<IpAddr>),
    lost: (&AtomicBool, &Notify),
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(QUEUE_CHUNKS);
    let read_faults = faults.clone();
    let reading = async move {
        let mut buf = vec![0u8; CHUNK];
        let mut rng = Jitter::seeded();
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let (blackhole, jitter) = {
                let f = read_faults.borrow();
                (f.holed(peer), f.jitter)
            };
            if blackhole {
                mark_lost(lost);
                continue;
            }
            // The chunk's read time, moved on by its jitter: its latency counts from there.
            let read_at = Instant::now() + rng.up_to(jitter);
            if tx.send((read_at, buf[..n].to_vec())).await.is_err() {
                break;
            }
        }
        // Dropping `tx` lets the writer drain the queue, then shut its side down.
    };
    let writing = async move {
        let mut faults = faults;
        while let Some((read_at, chunk)) = rx.recv().await {
            let deliver = loop {
                let f = *faults.borrow_and_update();
                if f.holed(peer) {
                    break false;
                }
                if f.stalled(dir) {
                    if faults.changed().await.is_err() {
                        return;
                    }
                    continue;
                }
                let due = read_at + f.latency;
                if Instant::now() >= due {
                    break true;
                }
                tokio::select! {
                    () = tokio::time::sleep_until(due) => {}
                    changed = faults.changed() => if changed.is_err() { return },
                }
            };
            if !deliver {
                mark_lost(lost);
                continue;
            }
            if to.write_all(&chunk).await.is_err() {
                return;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reading, writing);
}

/// Random delays for [`Proxy::set_jitter`] (xorshift64*, seeded from the clock and a counter:
/// each direction of each connection draws its own).
struct Jitter(u64);

impl Jitter {
    fn seeded() -> Jitter {
        static NEXT: AtomicUsize = AtomicUsize::new(1);
        let n = NEXT.fetch_add(1, Ordering::Relaxed) as u64;
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Jitter((clock ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1)
    }

    /// A random time from zero to `max`.
    fn up_to(&mut self, max: Duration) -> Duration {
        if max.is_zero() {
            return Duration::ZERO;
        }
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let r = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11;
        max.mul_f64(r as f64 / (1u64 << 53) as f64)
    }
}
