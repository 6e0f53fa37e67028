//! Hardening (issue 20): wait limits that hold when a server hangs.

use std::time::{Duration, Instant};

use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::{servers, wait_until, RedisServer};

const SERVER_TIMEOUT: Duration = Duration::from_secs(2);
/// Room for a busy machine on top of the promised bound; the bound before the fix was three
/// server timeouts (the attempt, its undo and leaving the queue, in a row).
const SLACK: Duration = Duration::from_millis(1500);

fn manager(servers: &[&RedisServer]) -> LockManager {
    LockManager::builder(servers.iter().map(|s| s.url()))
        .server_timeout(SERVER_TIMEOUT)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_limit_holds_on_a_hung_server() {
    let mut srv = RedisServer::start();
    let m = manager(&[&srv]);
    // Connect first, so that what hangs below is the server, not the handshake.
    m.acquire("warm", Duration::from_secs(10), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    srv.stop();
    let wait = Duration::from_millis(300);
    let start = Instant::now();
    let err = m
        .acquire("hung", Duration::from_secs(60), Some(wait))
        .await
        .unwrap_err();
    let took = start.elapsed();
    srv.cont();
    assert_eq!(err.kind(), ErrorKind::Unavailable, "{err}");
    assert!(
        took < wait + SERVER_TIMEOUT + SLACK,
        "acquire with a {wait:?} wait limit and a {SERVER_TIMEOUT:?} server timeout returned after {took:?}"
    );
    // The clean-up cut short goes on in the background once the server answers again.
    wait_until(
        Duration::from_secs(10),
        "the waiter's place was given up",
        || srv.queued("", "hung") == 0,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_limit_holds_with_one_of_three_servers_hung() {
    let mut s = servers(3);
    let m = manager(&[&s[0], &s[1], &s[2]]);
    let holder = m
        .acquire("busy", Duration::from_secs(60), None)
        .await
        .unwrap();
    s[2].stop();
    let wait = Duration::from_millis(500);
    let start = Instant::now();
    let err = m
        .acquire("busy", Duration::from_secs(60), Some(wait))
        .await
        .unwrap_err();
    let took = start.elapsed();
    s[2].cont();
    assert_eq!(err.kind(), ErrorKind::NotAcquired, "{err}");
    assert!(
        took < wait + SERVER_TIMEOUT + SLACK,
        "acquire with a {wait:?} wait limit and a {SERVER_TIMEOUT:?} server timeout returned after {took:?}"
    );
    for srv in &s {
        wait_until(
            Duration::from_secs(10),
            "the waiter left every queue",
            || srv.queued("", "busy") == 0,
        );
    }
    holder.release().await.unwrap();
}

#[test]
fn port_zero_fails_the_build() {
    let e = LockManager::new(["redis://127.0.0.1:0"]).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("port 0"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_cannot_resolve_fails_at_once_even_without_a_wait_limit() {
    // The .invalid top-level domain never resolves (RFC 6761).
    let m = LockManager::new(["redis://no-such-host.invalid:6390"]).unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        m.acquire("m", Duration::from_secs(5), None),
    )
    .await
    .expect("an unresolvable host was retried forever")
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("does not resolve"), "{e}");
    assert!(e.message().contains("no-such-host.invalid:6390"), "{e}");
}

/// Issue 57: a port where something else than Redis listens (here a web server's answer) is
/// a configuration mistake, said plainly and at once, even without a wait limit (it used to
/// be "Incompatible type - Parse error at 1", retried for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_that_is_not_redis_fails_at_once_saying_so() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let web = tokio::spawn(async move {
        loop {
            let (mut c, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf).await;
            let _ = c.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n").await;
        }
    });
    let m = LockManager::new([format!("redis://127.0.0.1:{port}")]).unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        m.acquire("m", Duration::from_secs(5), None),
    )
    .await
    .expect("a port that is not Redis was retried forever")
    .unwrap_err();
    web.abort();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(
        e.message().contains("did not answer as a Redis server"),
        "{e}"
    );
    assert!(e.message().contains(&format!("127.0.0.1:{port}")), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_that_keeps_retrying_warns_naming_the_server_and_the_reason() {
    use fencelock::ffi_support::observe::{add_listener, remove_listener, EventLevel};
    use std::sync::{Arc, Mutex};

    let port = fencelock_testkit::free_port();
    let warnings = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&warnings);
    let id = add_listener(EventLevel::Warn, move |e| {
        seen.lock().unwrap().push(e.to_line());
    })
    .unwrap();
    // Refusals waited through (0), as for a server that does not answer.
    let m = LockManager::builder([format!("redis://127.0.0.1:{port}")])
        .refused_attempts(0)
        .build()
        .unwrap();
    let e = m
        .acquire(
            "nobody-home",
            Duration::from_secs(5),
            Some(Duration::from_secs(4)),
        )
        .await
        .unwrap_err();
    remove_listener(id);
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    let warnings = warnings.lock().unwrap();
    let ours: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("nobody-home"))
        .collect();
    assert!(
        !ours.is_empty(),
        "no warning during a 4 s wait on a refused server: {warnings:?}"
    );
    for w in ours {
        assert!(w.starts_with("acquire still waiting"), "{w}");
        assert!(w.contains(&format!("127.0.0.1:{port}")), "{w}");
        assert!(w.contains("refused"), "{w}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_does_not_pass_a_listening_waiter_when_the_key_expires() {
    let srv = RedisServer::start();
    let holder = manager(&[&srv])
        .acquire("expiring", Duration::from_secs(10), None)
        .await
        .unwrap();
    // A waiter that sleeps on its subscription (no timed retry within the test).
    let waiter = LockManager::builder([srv.url()])
        .retry_delay(Duration::from_secs(60))
        .build()
        .unwrap();
    let waiting = tokio::spawn(async move {
        waiter
            .acquire(
                "expiring",
                Duration::from_secs(10),
                Some(Duration::from_secs(30)),
            )
            .await
    });
    wait_until(
        Duration::from_secs(10),
        "the waiter queued and listening",
        || srv.queued("", "expiring") == 1 && srv.listening("", "expiring"),
    );
    // The holder's key expires (its process paused past its TTL, say).
    holder.detach();
    srv.cmd(&[b"PEXPIRE", b"expiring", b"1"]);
    wait_until(Duration::from_secs(5), "the key expired", || {
        srv.get(b"expiring").is_none()
    });
    let newcomer = manager(&[&srv]);
    let got = newcomer
        .try_acquire("expiring", Duration::from_secs(10))
        .await
        .unwrap();
    assert!(got.is_none(), "the newcomer passed the waiter in line");
    let started = Instant::now();
    let lock = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the waiter was handed the expired lock at once")
        .unwrap()
        .unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(srv.get(b"expiring").as_deref(), Some(lock.token()));
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_urls_of_one_server_are_one_vote_not_two() {
    let one = RedisServer::start();
    let mut other = RedisServer::start();
    let p = one.port();
    for (a, b) in [
        (
            format!("redis://127.0.0.1:{p}"),
            format!("redis://localhost:{p}"),
        ),
        (
            format!("redis://127.0.0.1:{p}/0"),
            format!("redis://127.0.0.1:{p}/1"),
        ),
    ] {
        let m = LockManager::new([a, b, other.url()]).unwrap();
        // All three answer: a quorum of two without the duplicate.
        let lock = m
            .acquire(
                "vote",
                Duration::from_secs(10),
                Some(Duration::from_secs(2)),
            )
            .await
            .unwrap();
        lock.release().await.unwrap();
        other.stop();
        // Only one real server left: one vote, not a quorum.
        let e = m
            .acquire(
                "vote",
                Duration::from_secs(10),
                Some(Duration::from_millis(500)),
            )
            .await
            .unwrap_err();
        other.cont();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
        assert!(e.message().contains("the same Redis server as"), "{e}");
    }
}
