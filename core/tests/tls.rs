//! TLS (`rediss://`) against a real redis-server started with `--tls-port` and certificates the
//! test generates itself with the `openssl` command: a custom CA, mutual TLS, and the explicit
//! insecure mode.

use std::path::PathBuf;
use std::time::Duration;

use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::tls::{make_certs, TlsServer};
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_ca_verifies_the_server() {
    let s = TlsServer::start(false);
    let m = LockManager::builder([s.url()])
        .tls_ca_file(s.file("ca.crt"))
        .build()
        .unwrap();
    let lock = m.acquire("tls-lock", MS(2000), None).await.unwrap();
    assert_eq!(
        s.server.get(b"tls-lock").as_deref(),
        Some(lock.token()),
        "written over TLS"
    );
    // Waiting works over TLS too: the waiter's subscription is woken by the release.
    let waiter = {
        let m = m.clone();
        tokio::spawn(async move {
            m.acquire("tls-lock", MS(2000), Some(Duration::from_secs(10)))
                .await
        })
    };
    fencelock_testkit::wait_until_async(
        Duration::from_secs(5),
        "the waiter queued and listening",
        || s.server.queued("", "tls-lock") == 1 && s.server.listening("", "tls-lock"),
    )
    .await;
    lock.release().await.unwrap();
    waiter.await.unwrap().unwrap().release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_ca_is_refused_unless_insecure_mode_is_asked_for() {
    let s = TlsServer::start(false);
    // System roots do not know the test CA: the handshake fails, the server is unavailable.
    let m = LockManager::new([s.url()]).unwrap();
    // Not retried until a wait limit: a certificate problem is configuration, it fails at once.
    let started = std::time::Instant::now();
    let e = m.acquire("x", MS(1000), None).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5), "failed fast");
    assert!(e.message().contains("TLS handshake failed"), "{e}");
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(
        e.message().contains(&format!("127.0.0.1:{}", s.tls_port)),
        "{e}"
    );

    println!("{e}");
    // The first call opens the connection (TLS handshake included) within the server
    // timeout: 50 ms by default for this TTL, too tight for a debug build on a busy machine.
    let m = LockManager::builder([s.url()])
        .tls_insecure(true)
        .server_timeout(MS(1000))
        .build()
        .unwrap();
    let lock = m.try_acquire("x", MS(1000)).await.unwrap().unwrap();
    lock.release().await.unwrap();
    assert!(
        format!("{m:?}").contains("INSECURE"),
        "the mode is visible: {m:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_needs_the_client_certificate() {
    let s = TlsServer::start(true);
    let without = LockManager::builder([s.url()])
        .tls_ca_file(s.file("ca.crt"))
        .build()
        .unwrap();
    let e = without.try_acquire("m", MS(1000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");

    let with = LockManager::builder([s.url()])
        .tls_ca_file(s.file("ca.crt"))
        .tls_client_cert_files(s.file("client.crt"), s.file("client.key"))
        .build()
        .unwrap();
    let lock = with.try_acquire("m", MS(1000)).await.unwrap().unwrap();
    lock.release().await.unwrap();
    let key = std::fs::read_to_string(s.file("client.key")).unwrap();
    let key_body = key.lines().nth(1).unwrap();
    assert!(
        !format!("{with:?} {e}").contains(key_body),
        "no key material in output"
    );
}

/// A second, unrelated set of certificates (another CA) in a directory of its own.
fn other_certs(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fencelock-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    make_certs(&dir);
    dir
}

/// Acquire with no wait limit, which must end by itself: a configuration mistake fails it at
/// once instead of being retried forever (the outer limit only catches a hang).
async fn acquire_forever(m: &LockManager) -> fencelock::Error {
    tokio::time::timeout(Duration::from_secs(20), m.acquire("m", MS(5000), None))
        .await
        .expect("a configuration mistake was retried forever")
        .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_tls_mistakes_fail_at_once_even_without_a_wait_limit() {
    let s = TlsServer::start(true);
    let other = other_certs("mtls");
    let no_cert = LockManager::builder([s.url()])
        .tls_ca_file(s.file("ca.crt"))
        .build()
        .unwrap();
    let e = acquire_forever(&no_cert).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("TLS handshake failed"), "{e}");
    assert!(e.message().contains("CertificateRequired"), "{e}");
    assert!(
        e.message().contains(&format!("127.0.0.1:{}", s.tls_port)),
        "{e}"
    );

    let foreign_cert = LockManager::builder([s.url()])
        .tls_ca_file(s.file("ca.crt"))
        .tls_client_cert_files(other.join("client.crt"), other.join("client.key"))
        .build()
        .unwrap();
    let e = acquire_forever(&foreign_cert).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("TLS handshake failed"), "{e}");
}

#[test]
fn a_client_key_that_does_not_match_its_certificate_fails_the_build() {
    let s = TlsServer::start(true);
    let other = other_certs("keypair");
    let e = LockManager::builder([s.url()])
        .tls_ca_file(s.file("ca.crt"))
        .tls_client_cert_files(s.file("client.crt"), other.join("client.key"))
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("does not belong"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_url_at_a_tls_port_says_to_use_rediss() {
    let s = TlsServer::start(false);
    let plain = s.url().replace("rediss://", "redis://");
    let m = LockManager::new([plain]).unwrap();
    let e = acquire_forever(&m).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("use a rediss:// URL"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_url_at_a_plain_port_says_to_use_redis() {
    let plain = RedisServer::start();
    let m = LockManager::builder([plain.url().replace("redis://", "rediss://")])
        .tls_insecure(true)
        .connect_timeout(MS(500))
        .build()
        .unwrap();
    let e = acquire_forever(&m).await;
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("use a redis:// URL"), "{e}");
}
