//! The fault-injecting proxy itself, against a real redis-server: every fault does what it
//! says, on connections already open and on new ones.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use fencelock_chaos::proxy::{Direction, Proxy};
use fencelock_chaos::worker::{num, Worker};
use fencelock_testkit::{RedisServer, Reply};

const MS: fn(u64) -> Duration = Duration::from_millis;
const PROXY: &str = env!("CARGO_BIN_EXE_chaos-proxy");

/// A raw RESP connection through the proxy, with a read timeout.
struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    fn open(proxy: &Proxy) -> Conn {
        Conn::to(proxy.addr())
    }

    fn to(addr: SocketAddr) -> Conn {
        let stream = TcpStream::connect(addr).expect("connect to the proxy");
        stream.set_read_timeout(Some(MS(2000))).unwrap();
        Conn {
            reader: BufReader::new(stream),
        }
    }

    fn read_timeout(&self, t: Duration) {
        self.reader.get_ref().set_read_timeout(Some(t)).unwrap();
    }

    fn send(&mut self, args: &[&str]) {
        let mut buf = format!("*{}\r\n", args.len());
        for a in args {
            buf.push_str(&format!("${}\r\n{a}\r\n", a.len()));
        }
        self.reader.get_mut().write_all(buf.as_bytes()).unwrap();
    }

    /// One reply line (enough for PING, SET and small GETs of status replies).
    fn reply(&mut self) -> io::Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(line.trim_end().to_owned())
    }

    fn roundtrip(&mut self, args: &[&str]) -> io::Result<String> {
        self.send(args);
        self.reply()
    }

    /// Shortest PING round trip of `n`.
    fn min_ping(&mut self, n: usize) -> Duration {
        (0..n)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(self.roundtrip(&["PING"]).unwrap(), "+PONG");
                t.elapsed()
            })
            .min()
            .unwrap()
    }

    /// Whether the proxy closed the connection (EOF or reset) within `t`.
    fn closed_within(&mut self, t: Duration) -> bool {
        self.read_timeout(t);
        let mut b = [0u8; 64];
        match self.reader.get_mut().read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
        }
    }
}

fn timed_out(r: &io::Result<String>) -> bool {
    matches!(r, Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
}

#[test]
fn ping_and_commands_go_through_the_proxy() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    assert_ne!(proxy.port(), server.port());
    assert_ne!(proxy.port(), 6379);
    let mut c = Conn::open(&proxy);
    assert_eq!(c.roundtrip(&["PING"]).unwrap(), "+PONG");
    assert_eq!(c.roundtrip(&["SET", "k", "through"]).unwrap(), "+OK");
    assert_eq!(server.get(b"k").as_deref(), Some(&b"through"[..]));
    // A plain client through the proxy, too.
    let client = redis::Client::open(proxy.url()).unwrap();
    let mut con = client.get_connection().unwrap();
    let v: String = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(v, "through");
    assert_eq!(proxy.accepted(), 2);
}

/// Jitter reorders across connections, never within one: pairs of `RPUSH` sent 5 ms apart on
/// two connections land in either order, while one connection's pipelined pushes keep theirs.
#[test]
fn jitter_reorders_requests_across_connections_but_not_within_one() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let (mut a, mut b) = (Conn::open(&proxy), Conn::open(&proxy));
    proxy.set_jitter(MS(100));
    let mut reordered = 0;
    for i in 0..30 {
        let list = format!("pair{i}");
        a.send(&["RPUSH", &list, "first"]);
        std::thread::sleep(MS(5));
        b.send(&["RPUSH", &list, "second"]);
        a.reply().unwrap();
        b.reply().unwrap();
        if server.cmd(&[b"LINDEX", list.as_bytes(), b"0"]) == Reply::Bulk(Some(b"second".to_vec()))
        {
            reordered += 1;
        }
    }
    for n in 0..20 {
        a.send(&["RPUSH", "stream", &n.to_string()]);
    }
    for _ in 0..20 {
        a.reply().unwrap();
    }
    let Reply::Array(Some(items)) = server.cmd(&[b"LRANGE", b"stream", b"0", b"-1"]) else {
        panic!("no list")
    };
    let expected: Vec<Reply> = (0..20)
        .map(|n| Reply::Bulk(Some(n.to_string().into_bytes())))
        .collect();
    assert_eq!(items, expected, "one connection's requests arrive in order");
    println!("{reordered} of 30 pairs reordered by 100 ms of jitter");
    assert!(reordered > 0, "no pair reordered");
    assert!(reordered < 30, "every pair reordered: not random");
}

#[test]
fn latency_is_added_in_both_directions_on_open_connections() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let mut c = Conn::open(&proxy);
    let base = c.min_ping(5);
    proxy.set_latency(MS(100));
    // The same connection: 100 ms each way, so at least 200 ms per round trip.
    let slow = c.min_ping(3);
    assert!(
        slow >= MS(200),
        "round trip {slow:?} with 100 ms latency each way"
    );
    assert!(slow < MS(2000), "round trip {slow:?}");
    let mut fresh = Conn::open(&proxy);
    assert!(
        fresh.min_ping(2) >= MS(200),
        "new connections are slowed too"
    );
    proxy.set_latency(Duration::ZERO);
    let fast = c.min_ping(5);
    assert!(
        fast < MS(150),
        "latency removed: {fast:?} (baseline {base:?})"
    );
    println!("baseline {base:?}, with 100 ms latency {slow:?}, removed {fast:?}");
}

#[test]
fn lowering_the_latency_releases_chunks_already_waiting() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let mut c = Conn::open(&proxy);
    c.min_ping(1);
    proxy.set_latency(Duration::from_secs(60));
    let t = Instant::now();
    c.send(&["PING"]);
    std::thread::sleep(MS(100));
    proxy.set_latency(Duration::ZERO);
    assert_eq!(c.reply().unwrap(), "+PONG");
    assert!(t.elapsed() < MS(2000), "took {:?}", t.elapsed());
}

#[test]
fn blackhole_makes_requests_time_out_and_forwards_nothing() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let mut open = Conn::open(&proxy);
    assert_eq!(open.roundtrip(&["PING"]).unwrap(), "+PONG");
    proxy.blackhole(true);
    open.read_timeout(MS(300));
    let r = open.roundtrip(&["SET", "lost", "1"]);
    assert!(timed_out(&r), "an open connection times out: {r:?}");
    // New connections are accepted, and time out too.
    let mut new = Conn::open(&proxy);
    new.read_timeout(MS(300));
    let r = new.roundtrip(&["SET", "lost2", "1"]);
    assert!(timed_out(&r), "a new connection times out: {r:?}");
    assert_eq!(server.get(b"lost"), None, "nothing reached the server");
    assert_eq!(server.get(b"lost2"), None, "nothing reached the server");
    // Lifted: connections that lost data are closed (never a corrupted stream); new work.
    proxy.blackhole(false);
    assert!(
        open.closed_within(MS(2000)),
        "the open connection was closed"
    );
    assert!(new.closed_within(MS(2000)), "the new connection was closed");
    let mut after = Conn::open(&proxy);
    assert_eq!(after.roundtrip(&["PING"]).unwrap(), "+PONG");
}

#[test]
fn drop_connections_closes_open_connections_only() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let mut a = Conn::open(&proxy);
    let mut b = Conn::open(&proxy);
    assert_eq!(a.roundtrip(&["PING"]).unwrap(), "+PONG");
    assert_eq!(b.roundtrip(&["PING"]).unwrap(), "+PONG");
    assert_eq!(proxy.open_connections(), 2);
    proxy.drop_connections();
    assert!(a.closed_within(MS(2000)), "a was closed");
    assert!(b.closed_within(MS(2000)), "b was closed");
    let deadline = Instant::now() + MS(2000);
    while proxy.open_connections() > 0 && Instant::now() < deadline {
        std::thread::sleep(MS(10));
    }
    assert_eq!(proxy.open_connections(), 0);
    let mut c = Conn::open(&proxy);
    assert_eq!(
        c.roundtrip(&["PING"]).unwrap(),
        "+PONG",
        "new connections work"
    );
}

#[test]
fn a_client_to_server_stall_holds_requests_until_it_ends() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let mut c = Conn::open(&proxy);
    assert_eq!(c.roundtrip(&["PING"]).unwrap(), "+PONG");
    proxy.stall(Direction::ClientToServer, true);
    c.read_timeout(MS(300));
    let r = c.roundtrip(&["SET", "held", "1"]);
    assert!(timed_out(&r), "{r:?}");
    assert_eq!(
        server.get(b"held"),
        None,
        "the request is held in the proxy"
    );
    proxy.stall(Direction::ClientToServer, false);
    c.read_timeout(MS(2000));
    assert_eq!(
        c.reply().unwrap(),
        "+OK",
        "delivered, in order, when the stall ends"
    );
    assert_eq!(server.get(b"held").as_deref(), Some(&b"1"[..]));
}

#[test]
fn a_server_to_client_stall_lets_requests_through_but_holds_replies() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let mut c = Conn::open(&proxy);
    assert_eq!(c.roundtrip(&["PING"]).unwrap(), "+PONG");
    proxy.stall(Direction::ServerToClient, true);
    c.read_timeout(MS(300));
    let r = c.roundtrip(&["SET", "applied", "1"]);
    assert!(timed_out(&r), "{r:?}");
    assert_eq!(
        server.get(b"applied").as_deref(),
        Some(&b"1"[..]),
        "the server applied it: only the reply is stuck"
    );
    // A second request on the same connection: both replies come, in order, after the stall.
    c.send(&["PING"]);
    proxy.stall(Direction::ServerToClient, false);
    c.read_timeout(MS(2000));
    assert_eq!(c.reply().unwrap(), "+OK");
    assert_eq!(c.reply().unwrap(), "+PONG");
}

#[test]
fn dropping_the_proxy_closes_everything() {
    let server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    let addr = proxy.addr();
    let mut c = Conn::open(&proxy);
    assert_eq!(c.roundtrip(&["PING"]).unwrap(), "+PONG");
    drop(proxy);
    assert!(c.closed_within(MS(2000)), "the open connection was closed");
    assert!(
        TcpStream::connect_timeout(&addr, MS(500)).is_err(),
        "nothing listens any more"
    );
}

#[test]
fn a_proxy_to_a_dead_server_closes_accepted_connections() {
    let mut server = RedisServer::start();
    let proxy = Proxy::to_port(server.port());
    server.kill();
    let mut c = Conn::open(&proxy);
    assert!(c.closed_within(MS(2000)));
}

#[test]
fn the_proxy_process_obeys_its_commands() {
    let server = RedisServer::start();
    let mut p = Worker::spawn(
        Path::new(PROXY),
        &["--target".into(), format!("127.0.0.1:{}", server.port())],
    );
    let port = num(&p.expect("LISTENING", MS(5000)), "port") as u16;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut c = Conn::to(addr);
    assert_eq!(c.roundtrip(&["PING"]).unwrap(), "+PONG");
    let command = |p: &mut Worker, line: &str| {
        p.send(line);
        p.next_line(MS(5000)).expect("an answer")
    };
    assert_eq!(command(&mut p, "latency 100"), "OK");
    assert!(c.min_ping(2) >= MS(200), "latency applied");
    assert_eq!(command(&mut p, "heal"), "OK");
    assert_eq!(command(&mut p, "stall s2c on"), "OK");
    c.read_timeout(MS(300));
    assert!(timed_out(&c.roundtrip(&["PING"])), "replies stalled");
    assert_eq!(command(&mut p, "stall s2c off"), "OK");
    c.read_timeout(MS(2000));
    assert_eq!(c.reply().unwrap(), "+PONG", "delivered after the stall");
    assert_eq!(command(&mut p, "blackhole on"), "OK");
    c.read_timeout(MS(300));
    assert!(timed_out(&c.roundtrip(&["PING"])), "blackholed");
    assert_eq!(command(&mut p, "blackhole off"), "OK");
    assert!(c.closed_within(MS(2000)), "closed: it lost data");
    let mut d = Conn::to(addr);
    assert_eq!(d.roundtrip(&["PING"]).unwrap(), "+PONG");
    assert_eq!(command(&mut p, "drop"), "OK");
    assert!(d.closed_within(MS(2000)), "dropped");
    assert!(command(&mut p, "stall sideways on").starts_with("ERR"));
    assert!(command(&mut p, "bogus").starts_with("ERR"));
    assert!(
        p.finish(MS(5000)).is_some_and(|s| s.success()),
        "exits at end of stdin"
    );
    assert!(
        TcpStream::connect_timeout(&addr, MS(500)).is_err(),
        "and stops listening"
    );
}
