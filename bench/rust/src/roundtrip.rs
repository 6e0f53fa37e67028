//! The hand-off's floor (issue 56 item 6): a bare PUBLISH-to-subscriber round trip between two
//! processes, measured by the benchmark on the servers of the run. No client library: RESP
//! written and read by hand over tokio's sockets, on one thread.
//!
//!   fencelock-bench rtt-echo --servers URLS
//!       subscribes to `fl-bench:ping` on every server. At the first ping of each round (from
//!       whichever server it comes) it publishes `fl-bench:pong` with the round's number on
//!       every server. It stops at the payload `stop`.
//!   fencelock-bench rtt --servers URLS --rounds N [--pause-ms 1]
//!       waits until the echo listens on every server, then N times (after 20 not counted):
//!       PUBLISH `fl-bench:ping` on every server and wait for the pong from a majority. The
//!       time is from the first write to the majority's pong.
//!
//! The round trip crosses the sockets a hand-off crosses: the releasing process's command to
//! the servers, a server's message to the waiting process, the waiting process's commands and
//! their answers from a majority. What it leaves out is what a lock adds to that: its scripts'
//! work on the server and its client library's work in both processes.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use crate::scenarios::percentiles_to;

pub const USAGE: &str = "\
       fencelock-bench rtt-echo --servers URLS
       fencelock-bench rtt      --servers URLS --rounds N [--pause-ms 1]";

const PING: &str = "fl-bench:ping";
const PONG: &str = "fl-bench:pong";
const WARM_UP: u64 = 20;
/// A round (or the echo's subscription) taking longer than this means the echo is gone.
const STUCK: Duration = Duration::from_secs(10);

pub struct Opts {
    servers: Vec<String>,
    rounds: u64,
    pause: Duration,
}

pub fn parse(argv: &[String]) -> Result<Opts, String> {
    let mut opts = Opts {
        servers: Vec::new(),
        rounds: 1000,
        pause: Duration::from_millis(1),
    };
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || {
            value
                .parse::<u64>()
                .map_err(|_| format!("{flag}: not a number: {value}"))
        };
        match flag.as_str() {
            "--servers" => {
                opts.servers = value.split(',').map(address).collect::<Result<_, _>>()?
            }
            "--rounds" => opts.rounds = number()?.max(1),
            "--pause-ms" => opts.pause = Duration::from_millis(number()?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if opts.servers.is_empty() {
        return Err("--servers is required".into());
    }
    Ok(opts)
}

/// `host:port` of a `redis://host:port` URL (the servers the orchestrator started).
fn address(url: &str) -> Result<String, String> {
    let rest = url.strip_prefix("redis://").unwrap_or(url);
    let hostport = rest.split('/').next().unwrap_or(rest);
    if hostport.contains('@') || !hostport.contains(':') {
        return Err(format!("{url}: expected redis://host:port"));
    }
    Ok(hostport.to_string())
}

pub async fn run(cmd: &str, opts: &Opts) -> io::Result<serde_json::Value> {
    match cmd {
        "echo" => echo(&opts.servers)
            .await
            .map(|()| serde_json::json!({"scenario": "rtt-echo"})),
        _ => ping(opts).await,
    }
}

/// One RESP reply, of the kinds these commands get back.
enum Resp {
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Vec<Resp>),
    Other,
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

fn read(
    r: &mut BufReader<OwnedReadHalf>,
) -> Pin<Box<dyn Future<Output = io::Result<Resp>> + Send + '_>> {
    Box::pin(async move {
        let mut line = String::new();
        if r.read_line(&mut line).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end();
        if line.is_empty() {
            return Err(bad("an empty line for a reply"));
        }
        let (kind, rest) = line.split_at(1);
        let n = || {
            rest.parse::<i64>()
                .map_err(|_| bad("a bad length in a reply"))
        };
        Ok(match kind {
            ":" => Resp::Int(n()?),
            "$" if n()? < 0 => Resp::Bulk(None),
            "$" => {
                let mut buf = vec![0; n()? as usize + 2];
                r.read_exact(&mut buf).await?;
                buf.truncate(buf.len() - 2);
                Resp::Bulk(Some(buf))
            }
            "*" => {
                let mut items = Vec::new();
                for _ in 0..n()?.max(0) {
                    items.push(read(r).await?);
                }
                Resp::Array(items)
            }
            "-" => return Err(bad(rest)),
            _ => Resp::Other,
        })
    })
}

fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

struct Conn {
    rd: BufReader<OwnedReadHalf>,
    wr: OwnedWriteHalf,
}

async fn connect(addr: &str) -> io::Result<Conn> {
    let s = TcpStream::connect(addr).await?;
    s.set_nodelay(true)?;
    let (rd, wr) = s.into_split();
    Ok(Conn {
        rd: BufReader::new(rd),
        wr,
    })
}

/// Subscribes to `channel` on every server; each message's payload comes out of the receiver.
async fn subscribe(
    addrs: &[String],
    channel: &str,
) -> io::Result<mpsc::UnboundedReceiver<Vec<u8>>> {
    let (tx, rx) = mpsc::unbounded_channel();
    for addr in addrs {
        let mut c = connect(addr).await?;
        c.wr.write_all(&command(&[b"SUBSCRIBE", channel.as_bytes()]))
            .await?;
        read(&mut c.rd).await?; // the subscription's confirmation
        let tx = tx.clone();
        tokio::spawn(async move {
            let _keep = c.wr;
            while let Ok(Resp::Array(mut msg)) = read(&mut c.rd).await {
                if let Some(Resp::Bulk(Some(payload))) = msg.pop() {
                    if tx.send(payload).is_err() {
                        break;
                    }
                }
            }
        });
    }
    Ok(rx)
}

/// PUBLISH `payload` on every connection, the writes first, then the answers.
async fn publish(conns: &mut [Conn], channel: &str, payload: &[u8]) -> io::Result<()> {
    let cmd = command(&[b"PUBLISH", channel.as_bytes(), payload]);
    for c in conns.iter_mut() {
        c.wr.write_all(&cmd).await?;
    }
    for c in conns.iter_mut() {
        read(&mut c.rd).await?;
    }
    Ok(())
}

async fn echo(addrs: &[String]) -> io::Result<()> {
    let mut pings = subscribe(addrs, PING).await?;
    let mut pubs = Vec::new();
    for a in addrs {
        pubs.push(connect(a).await?);
    }
    let mut last = 0u64;
    while let Some(payload) = pings.recv().await {
        if payload == b"stop" {
            return Ok(());
        }
        let round = std::str::from_utf8(&payload)
            .ok()
            .and_then(|s| s.parse::<u64>().ok());
        let Some(round) = round.filter(|r| *r > last) else {
            continue; // the same round from another server
        };
        last = round;
        publish(&mut pubs, PONG, round.to_string().as_bytes()).await?;
    }
    Ok(())
}

/// Until the echo listens on every server (PUBSUB NUMSUB), at most STUCK.
async fn await_echo(pubs: &mut [Conn]) -> io::Result<()> {
    let start = Instant::now();
    for c in pubs.iter_mut() {
        loop {
            c.wr.write_all(&command(&[b"PUBSUB", b"NUMSUB", PING.as_bytes()]))
                .await?;
            if let Resp::Array(items) = read(&mut c.rd).await? {
                if matches!(items.get(1), Some(Resp::Int(n)) if *n > 0) {
                    break;
                }
            }
            if start.elapsed() > STUCK {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the echo never subscribed",
                ));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }
    Ok(())
}

async fn ping(opts: &Opts) -> io::Result<serde_json::Value> {
    let mut pongs = subscribe(&opts.servers, PONG).await?;
    let mut pubs = Vec::new();
    for a in &opts.servers {
        pubs.push(connect(a).await?);
    }
    await_echo(&mut pubs).await?;
    let need = opts.servers.len() / 2 + 1;
    let mut times = Vec::with_capacity(opts.rounds as usize);
    for round in 1..=WARM_UP + opts.rounds {
        let payload = round.to_string().into_bytes();
        let cmd = command(&[b"PUBLISH", PING.as_bytes(), &payload]);
        let t0 = Instant::now();
        for c in pubs.iter_mut() {
            c.wr.write_all(&cmd).await?;
        }
        let mut heard = 0;
        while heard < need {
            match tokio::time::timeout(STUCK, pongs.recv()).await {
                Ok(Some(p)) if p == payload => heard += 1,
                Ok(Some(_)) => {} // a late pong of an earlier round
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no pong from the echo",
                    ))
                }
            }
        }
        let took = t0.elapsed();
        for c in pubs.iter_mut() {
            read(&mut c.rd).await?; // PUBLISH's answer, long arrived
        }
        if round > WARM_UP {
            times.push(took.as_secs_f64() * 1e6);
        }
        tokio::time::sleep(opts.pause).await;
    }
    publish(&mut pubs, PING, b"stop").await?;
    let min_us = times.iter().copied().fold(f64::INFINITY, f64::min);
    Ok(serde_json::json!({
        "scenario": "rtt",
        "servers": opts.servers.len(),
        "rounds": times.len(),
        "us": percentiles_to(&mut times, 1),
        "min_us": min_us,
    }))
}
