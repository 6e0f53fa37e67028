//! Sentinel: a `redis+sentinel://` server entry follows a forced failover. Real processes: a
//! master, a replica and three sentinels (`redis-server --sentinel`), all on free loopback
//! ports and stopped by PID.

use std::time::Duration;

use fencelock::LockManager;
use fencelock_testkit::sentinel::{Sentinel, SentinelSetup};
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sentinel_entry_follows_a_forced_failover() {
    let setup = SentinelSetup::start();
    let (master, replica) = (&setup.master, &setup.replica);
    let url = setup.url();
    let m = LockManager::new([url]).unwrap();
    assert_eq!(m.config().server_labels(), vec!["sentinel:mymaster"]);

    let lock = m.acquire("failover", MS(5000), None).await.unwrap();
    assert_eq!(
        master.get(b"failover").as_deref(),
        Some(lock.token()),
        "written to the master"
    );
    let before = lock.fencing_token();
    lock.release().await.unwrap();

    // Force a failover (retried while the sentinels still discover the replica).
    setup.failover();
    // (Between the promotion and the old master's demotion, a write to the old master is
    // acknowledged and then lost: the asynchronous-replication cost docs/SECURITY.md states.)

    // The manager follows: the old master is now a read-only replica (or being demoted), so
    // the cached connection is dropped and the sentinels are asked again.
    let lock = m
        .acquire("failover", MS(5000), Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(
        replica.get(b"failover").as_deref(),
        Some(lock.token()),
        "written to the new master"
    );
    assert!(
        lock.fencing_token() > before,
        "the counter was replicated before the failover"
    );
    lock.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_with_a_password_are_asked_with_it_and_refuse_a_manager_without_it() {
    let master = RedisServer::start();
    // A password with characters a URL breaks on, written raw in the URL.
    let password = "Sx/9+a=b&c?d";
    let s = Sentinel::start_with(master.port(), &format!("requirepass \"{password}\"\n"));
    let base = format!("redis+sentinel://127.0.0.1:{}/mymaster", s.port);

    let m = LockManager::new([format!("{base}?sentinel_password={password}")]).unwrap();
    assert!(!format!("{m:?}").contains(password), "{m:?}");
    let lock = m.acquire("guarded", MS(5000), None).await.unwrap();
    assert_eq!(master.get(b"guarded").as_deref(), Some(lock.token()));
    lock.release().await.unwrap();

    let without = LockManager::new([base]).unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(20),
        without.acquire("guarded", MS(5000), None),
    )
    .await
    .expect("a sentinel refusing the manager was retried forever")
    .unwrap_err();
    assert_eq!(e.kind(), fencelock::ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("no sentinel named a master"), "{e}");
    assert!(e.message().contains("authentication failed"), "{e}");

    let wrong = LockManager::new([format!(
        "{}?sentinel_password=not-{password}",
        "redis+sentinel://127.0.0.1:".to_owned() + &s.port.to_string() + "/mymaster"
    )])
    .unwrap();
    let e = wrong
        .acquire("guarded", MS(5000), Some(MS(500)))
        .await
        .unwrap_err();
    assert!(!e.message().contains(password), "{e}");
    assert!(!format!("{wrong:?}").contains(password), "{wrong:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sentinels_and_their_master_over_tls() {
    // rediss+sentinel://: the sentinel is asked over TLS and names the master's TLS port,
    // which the manager reaches over TLS too, with the manager's CA.
    let master = fencelock_testkit::tls::TlsServer::start(false);
    let p = |f: &str| master.file(f).display().to_string();
    let tls_port = fencelock_testkit::free_port();
    let extra = format!(
        "tls-port {tls_port}\ntls-cert-file {}\ntls-key-file {}\ntls-ca-cert-file {}\n\
         tls-auth-clients no\ntls-replication yes\n",
        p("server.crt"),
        p("server.key"),
        p("ca.crt")
    );
    let _sentinel = Sentinel::start_with(master.tls_port, &extra);
    let url = format!("rediss+sentinel://127.0.0.1:{tls_port}/mymaster");
    let m = LockManager::builder([url])
        .tls_ca_file(master.file("ca.crt"))
        .build()
        .unwrap();
    let lock = m
        .acquire("over-tls", MS(5000), Some(Duration::from_secs(10)))
        .await
        .unwrap();
    assert_eq!(
        master.server.get(b"over-tls").as_deref(),
        Some(lock.token())
    );
    lock.release().await.unwrap();
    // Without the CA, the sentinel's certificate is refused: a configuration mistake.
    let e = LockManager::new([format!("rediss+sentinel://127.0.0.1:{tls_port}/mymaster")])
        .unwrap()
        .acquire("over-tls", MS(5000), Some(Duration::from_secs(10)))
        .await
        .unwrap_err();
    assert!(e.message().contains("no sentinel named a master"), "{e}");
}

/// An election through a Sentinel entry (issue 54): its term and its observer's subscription
/// reach the master the sentinels name; after a forced failover both follow the new master.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_election_through_sentinel_is_observed_across_a_failover() {
    let setup = SentinelSetup::start();
    let m = LockManager::new([setup.url()]).unwrap();
    let election = m.election("sentinel-leader").unwrap();
    let mut observer = election.observe();
    assert_eq!(next(&mut observer).await.unwrap(), None);
    let term = election.campaign("a", MS(60_000), None).await.unwrap();
    let leader = next(&mut observer).await.unwrap().unwrap();
    assert_eq!(
        (leader.value.as_str(), leader.fencing_token),
        ("a", term.fencing_token())
    );
    term.resign().await.unwrap();
    assert_eq!(next(&mut observer).await.unwrap(), None);

    setup.failover();
    // The manager follows the new master (its first calls may meet the demotion: retried).
    let term = election
        .campaign("b", MS(60_000), Some(Duration::from_secs(10)))
        .await
        .unwrap();
    let mut seen = None;
    for _ in 0..20 {
        match next(&mut observer).await {
            Ok(Some(l)) if l.value == "b" => {
                seen = Some(l);
                break;
            }
            _ => {}
        }
    }
    assert_eq!(seen.map(|l| l.fencing_token), Some(term.fencing_token()));
    term.resign().await.unwrap();
}

/// The observer's next report, within 10 s (more is a hang).
async fn next(o: &mut fencelock::Observer) -> fencelock::Result<Option<fencelock::Leader>> {
    tokio::time::timeout(Duration::from_secs(10), o.next())
        .await
        .expect("an observer hung")
}
