//! A waiter killed while first in line (issue 20, item 7): the lock goes to the next live
//! waiter within moments, not after the dead waiter's TTL.

use std::path::Path;
use std::time::{Duration, Instant};

use fencelock::LockManager;
use fencelock_chaos::worker::Worker;
use fencelock_testkit::{wait_until, RedisServer, Reply};

const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
const MS: fn(u64) -> Duration = Duration::from_millis;

#[test]
fn a_waiter_killed_first_in_line_costs_the_next_waiter_no_ttl() {
    let srv = RedisServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let m = LockManager::new([srv.url()]).unwrap();
    // Default settings but for the TTL: a long one, which the next waiter must not wait out.
    let ttl = Duration::from_secs(30);
    let holder = rt.block_on(m.acquire("line", ttl, None)).unwrap();
    let args: Vec<String> = [
        "hold",
        "--servers",
        &srv.url(),
        "--name",
        "line",
        "--ttl-ms",
        "30000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut victim = Worker::spawn(Path::new(WORKER), &args);
    wait_until(MS(10_000), "the worker queued and listening", || {
        srv.queued("", "line") == 1 && srv.listening("", "line")
    });
    let next = LockManager::new([srv.url()]).unwrap();
    let waiting = rt.spawn(async move {
        next.acquire("line", ttl, Some(Duration::from_secs(25)))
            .await
    });
    wait_until(MS(10_000), "the second waiter queued", || {
        srv.queued("", "line") == 2
    });
    victim.kill();
    // The kernel closes the victim's connections: the server knows nobody listens for it.
    wait_until(MS(10_000), "the victim's connections closed", || {
        matches!(
            srv.cmd(&[b"PUBSUB", b"CHANNELS", b"fencelock:{*}:released:line|*"]),
            Reply::Array(Some(c)) if c.len() == 1
        )
    });
    let released = Instant::now();
    rt.block_on(holder.release()).unwrap();
    let lock = rt
        .block_on(waiting)
        .unwrap()
        .expect("the next waiter gets the lock");
    let took = released.elapsed();
    assert!(
        took < Duration::from_secs(2),
        "the next waiter got the lock {took:?} after the release (TTL {ttl:?})"
    );
    rt.block_on(lock.release()).unwrap();
}
