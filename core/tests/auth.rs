//! Authentication: password-only and ACL `user:password` URLs, the minimal ACL rule the library
//! needs (documented in docs/SECURITY.md), and clear errors that never show a password.

use std::time::Duration;

use fencelock::{ErrorKind, LockManager};
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

/// The minimal rule for a key prefix of `app:`; keep in sync with docs/SECURITY.md.
const MINIMAL_ACL: &[&str] = &[
    "on",
    ">locker-pw",
    "resetkeys",
    "~app:*",
    "resetchannels",
    "&app:fencelock:{*}:released:*",
    "-@all",
    "+evalsha",
    "+script|load",
    "+get",
    "+set",
    "+incr",
    "+pttl",
    "+pexpire",
    "+time",
    "+zadd",
    "+zrem",
    "+zrange",
    "+zrangebyscore",
    "+hset",
    "+hget",
    "+hdel",
    "+del",
    "+publish",
    "+pubsub|numsub",
    "+subscribe",
    "+unsubscribe",
    "+ping",
];

fn set_user(server: &RedisServer, user: &str, rules: &[&str]) {
    let mut args: Vec<&[u8]> = vec![b"ACL", b"SETUSER", user.as_bytes()];
    args.extend(rules.iter().map(|r| r.as_bytes()));
    let reply = server.cmd(&args);
    assert_eq!(reply, fencelock_testkit::Reply::Status("OK".into()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_with_the_minimal_acl_can_do_everything() {
    let server = RedisServer::start();
    set_user(&server, "locker", MINIMAL_ACL);
    let url = format!("redis://locker:locker-pw@127.0.0.1:{}", server.port());
    let m = LockManager::builder([url])
        .key_prefix("app:")
        .retry_delay(Duration::from_secs(20))
        .build()
        .unwrap();

    let lock = m.acquire("jobs", MS(2000), None).await.unwrap();
    // Inspection works under the minimal rule; counting the waiters needs +zcard, so they are
    // not counted (None) rather than failing the call.
    let st = m.state("jobs").await.unwrap();
    assert!(st.remaining.is_some());
    assert_eq!(st.waiters, None);
    lock.extend(MS(2000)).await.unwrap();
    // A waiter subscribes to the release channel and is woken by the release.
    let waiter = {
        let m = m.clone();
        tokio::spawn(async move {
            m.acquire("jobs", MS(2000), Some(Duration::from_secs(10)))
                .await
        })
    };
    fencelock_testkit::wait_until_async(
        Duration::from_secs(5),
        "the waiter queued and listening",
        || server.queued("app:", "jobs") == 1 && server.listening("app:", "jobs"),
    )
    .await;
    lock.release().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("woken by release")
        .unwrap()
        .unwrap();
    next.release().await.unwrap();
    m.release_by_token("jobs", "nobody").await.unwrap_err();
}

/// What the semaphore's and the read-write lock's scripts call beyond the lock's commands
/// (docs/SECURITY.md): not in the preflight, so that a lock-only user's rule stays as it was.
const FAMILY_COMMANDS: &[&str] = &["+hmget", "+type", "+exists", "+zscore", "+zcount", "+zcard"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_family_runs_with_the_minimal_acl_and_its_commands_and_names_one_missing() {
    let server = RedisServer::start();
    let mut rules = MINIMAL_ACL.to_vec();
    rules.extend_from_slice(FAMILY_COMMANDS);
    set_user(&server, "locker", &rules);
    let url = format!("redis://locker:locker-pw@127.0.0.1:{}", server.port());
    let m = LockManager::builder([url])
        .key_prefix("app:")
        .build()
        .unwrap();
    let sem = m.semaphore("pool", 1).unwrap();
    let held = sem.acquire(1, MS(5000), None).await.unwrap();
    let waiter = {
        let sem = sem.clone();
        tokio::spawn(async move {
            sem.acquire(1, MS(5000), Some(Duration::from_secs(10)))
                .await
        })
    };
    let lined_up = || async { sem.state().await.unwrap().waiters == 1 };
    fencelock_testkit::wait_for(Duration::from_secs(10), "the waiter in line", lined_up).await;
    held.extend(MS(5000)).await.unwrap();
    held.release().await.unwrap();
    let next = tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("handed the permit")
        .unwrap()
        .unwrap();
    assert!(next.is_held().await.unwrap());
    next.release().await.unwrap();
    let rw = m.rwlock("doc").unwrap();
    rw.write(MS(5000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert!(!rw.state().await.unwrap().writer);

    // Without the family's commands a lock still works, and the family says what is missing.
    let server = RedisServer::start();
    set_user(&server, "locker", MINIMAL_ACL);
    let url = format!("redis://locker:locker-pw@127.0.0.1:{}", server.port());
    let m = LockManager::builder([url])
        .key_prefix("app:")
        .build()
        .unwrap();
    m.acquire("jobs", MS(1000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let e = m
        .semaphore("pool", 2)
        .unwrap()
        .acquire(1, MS(1000), Some(MS(0)))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("permission denied"), "{e}");
    assert!(e.message().contains("'hmget'"), "names the command: {e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_only_server_accepts_the_right_password() {
    let server = RedisServer::start();
    set_user(&server, "default", &["on", ">only-pw"]);
    let url = format!("redis://:only-pw@127.0.0.1:{}", server.port());
    let m = LockManager::new([url]).unwrap();
    m.acquire("p", MS(1000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    // Without the password the server refuses: authentication failed, as Unavailable.
    let anonymous = LockManager::new([format!("redis://127.0.0.1:{}", server.port())]).unwrap();
    let e = anonymous.try_acquire("p", MS(1000)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("authentication"), "{e}");
}

/// `Builder::password`: for every server whose URL has none, with the URL's user; a URL's own
/// password wins; an empty one is refused before any network call; never shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_builders_password_serves_urls_without_one() {
    let server = RedisServer::start();
    set_user(&server, "locker", MINIMAL_ACL);
    set_user(&server, "default", &["on", ">only-pw"]);
    let port = server.port();
    let cycle = |m: LockManager| async move {
        let lock = m.try_acquire("b", MS(1000)).await?.expect("free");
        lock.release().await
    };
    let plain = LockManager::builder([format!("redis://127.0.0.1:{port}")])
        .password("only-pw")
        .build()
        .unwrap();
    assert!(!format!("{plain:?}").contains("only-pw"));
    cycle(plain).await.unwrap();
    let user = LockManager::builder([format!("redis://locker@127.0.0.1:{port}")])
        .password("locker-pw")
        .key_prefix("app:")
        .build()
        .unwrap();
    cycle(user).await.unwrap();
    // The URL's own (wrong) password is used, not the builder's right one.
    let own = LockManager::builder([format!("redis://:wrong-pw@127.0.0.1:{port}")])
        .password("only-pw")
        .build()
        .unwrap();
    let e = cycle(own).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(!e.message().contains("pw"), "{e}");
    let e = LockManager::builder([format!("redis://127.0.0.1:{port}")])
        .password("")
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("password is empty"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_acl_password_is_unavailable_naming_the_server_not_the_password() {
    let server = RedisServer::start();
    set_user(&server, "locker", MINIMAL_ACL);
    let url = format!("redis://locker:not-the-pw@127.0.0.1:{}", server.port());
    let m = LockManager::builder([url])
        .key_prefix("app:")
        .build()
        .unwrap();
    let e = m.acquire("jobs", MS(1000), Some(MS(0))).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("authentication failed"), "{e}");
    assert!(
        e.message()
            .contains(&format!("127.0.0.1:{}", server.port())),
        "{e}"
    );
    assert!(!format!("{e} {e:?} {m:?}").contains("not-the-pw"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_missing_a_permission_gets_a_clear_error() {
    let server = RedisServer::start();
    // The minimal rule without the key pattern for the prefix in use.
    set_user(&server, "locker", MINIMAL_ACL);
    let url = format!("redis://locker:locker-pw@127.0.0.1:{}", server.port());
    let m = LockManager::builder([url])
        .key_prefix("other:")
        .build()
        .unwrap();
    let e = m.acquire("jobs", MS(1000), None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unavailable, "{e}");
    assert!(e.message().contains("permission"), "{e}");
    println!("{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_missing_from_the_acl_fails_the_first_call_naming_it() {
    // zadd, hset and time run only when an acquire is refused (taking a place in the queue),
    // publish only when a release hands the lock over: without the check when a connection
    // opens, an uncontended first call would pass and production would fail under load.
    let server = RedisServer::start();
    for missing in ["zadd", "hset", "time", "publish", "hdel"] {
        let rules: Vec<&str> = MINIMAL_ACL
            .iter()
            .copied()
            .filter(|r| r.strip_prefix('+') != Some(missing))
            .collect();
        assert_eq!(
            rules.len(),
            MINIMAL_ACL.len() - 1,
            "{missing} is in the rule"
        );
        set_user(&server, "locker", &["reset"]);
        set_user(&server, "locker", &rules);
        let url = format!("redis://locker:locker-pw@127.0.0.1:{}", server.port());
        let m = LockManager::builder([url])
            .key_prefix("app:")
            .build()
            .unwrap();
        let e = tokio::time::timeout(Duration::from_secs(20), m.acquire("jobs", MS(1000), None))
            .await
            .expect("a missing permission was retried forever")
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unavailable, "{missing}: {e}");
        assert!(e.message().contains("permission denied"), "{missing}: {e}");
        assert!(e.message().contains(missing), "{missing}: {e}");
        assert!(!e.message().contains("locker-pw"), "{e}");
    }
}
