//! The fault-injecting proxy as a process, for tests written in other languages.
//!
//! ```text
//! chaos-proxy --target HOST:PORT
//! ```
//!
//! Prints `LISTENING port=P` once it accepts connections on `127.0.0.1:P`, then obeys stdin,
//! one command per line, answering each with `OK` (or `ERR <why>`):
//!
//! - `latency MS`: delay every forwarded chunk by MS milliseconds, both directions;
//! - `stall c2s|s2c on|off`: stop or resume forwarding one direction;
//! - `blackhole on|off`: accept and read, forward nothing;
//! - `drop`: close every open connection;
//! - `heal`: remove latency, stalls and blackhole.
//!
//! End of stdin stops the proxy and exits.

use std::io::BufRead;
use std::net::SocketAddr;
use std::time::Duration;

use fencelock_chaos::proxy::{Direction, Proxy};

fn on_off(word: Option<&str>) -> Result<bool, String> {
    match word {
        Some("on") => Ok(true),
        Some("off") => Ok(false),
        other => Err(format!("expected on|off, got {other:?}")),
    }
}

fn obey(proxy: &Proxy, line: &str) -> Result<(), String> {
    let mut words = line.split_whitespace();
    match words.next() {
        Some("latency") => {
            let ms: u64 = words
                .next()
                .and_then(|v| v.parse().ok())
                .ok_or("latency needs milliseconds")?;
            proxy.set_latency(Duration::from_millis(ms));
        }
        Some("stall") => {
            let dir = match words.next() {
                Some("c2s") => Direction::ClientToServer,
                Some("s2c") => Direction::ServerToClient,
                other => return Err(format!("expected c2s|s2c, got {other:?}")),
            };
            proxy.stall(dir, on_off(words.next())?);
        }
        Some("blackhole") => proxy.blackhole(on_off(words.next())?),
        Some("drop") => proxy.drop_connections(),
        Some("heal") => proxy.heal(),
        other => return Err(format!("unknown command {other:?}")),
    }
    Ok(())
}

fn main() {
    let mut args = std::env::args().skip(1);
    let target: SocketAddr = match (args.next().as_deref(), args.next()) {
        (Some("--target"), Some(t)) => t.parse().unwrap_or_else(|e| {
            eprintln!("chaos-proxy: bad target {t:?}: {e}");
            std::process::exit(64)
        }),
        _ => {
            eprintln!("usage: chaos-proxy --target HOST:PORT");
            std::process::exit(64)
        }
    };
    let proxy = Proxy::start(target);
    println!("LISTENING port={}", proxy.port());
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        match obey(&proxy, &line) {
            Ok(()) => println!("OK"),
            Err(why) => println!("ERR {why}"),
        }
    }
}
