//! Who holds a lock (`fencelock::ffi_support::who`): the holder label's note, read back by
//! `LockManager::holder` against real redis-servers; nothing written without a label; a note
//! never shown for another holder; labels checked before any network call.

use std::time::{Duration, SystemTime};

use fencelock::ffi_support::keys::LockKeys;
use fencelock::{default_holder_label, ErrorKind, LockManager};
use fencelock_testkit::{servers, wait_until_async, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn who_key(name: &str) -> Vec<u8> {
    LockKeys::new(b"", name.as_bytes()).who
}

fn labelled(urls: &[String], label: &str) -> LockManager {
    LockManager::builder(urls.iter().map(String::as_str))
        .holder_label(label)
        .server_timeout(MS(500))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_shows_its_label_since_and_fencing_token() {
    let server = RedisServer::start();
    let urls = [server.url()];
    let web = labelled(&urls, "web-1:4242 (orders)");
    let ops = LockManager::new([server.url()]).unwrap();
    let before = SystemTime::now();
    let lock = web.acquire("orders", MS(5000), None).await.unwrap();
    let after = SystemTime::now();
    // The lock itself is the classic one: its key holds the token, nothing else.
    assert_eq!(server.get(b"orders").as_deref(), Some(lock.token()));
    let holder = ops.holder("orders").await.unwrap().expect("held");
    let note = holder.note.clone().expect("a note");
    assert_eq!(note.label, "web-1:4242 (orders)");
    assert_eq!(note.fencing_token, lock.fencing_token());
    let since_ms = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    assert!(since_ms(note.since) >= since_ms(before) && since_ms(note.since) <= since_ms(after));
    assert!(
        holder.remaining > MS(4000) && holder.remaining <= MS(5000),
        "{holder:?}"
    );
    assert_eq!(
        ops.state("orders").await.unwrap().holder,
        Some(note.clone())
    );
    // The note lives as long as the lock: an extension renews it.
    assert!(server.pttl(&who_key("orders")) <= 5000);
    lock.extend(MS(60_000)).await.unwrap();
    assert!(server.pttl(&who_key("orders")) > 50_000);
    lock.release().await.unwrap();
    assert_eq!(ops.holder("orders").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_label_nothing_is_written_and_no_note_is_shown() {
    let server = RedisServer::start();
    let plain = LockManager::new([server.url()]).unwrap();
    let lock = plain.acquire("plain", MS(5000), None).await.unwrap();
    lock.extend(MS(5000)).await.unwrap();
    assert_eq!(
        server.dbsize(),
        2,
        "the lock key and the fencing counter only"
    );
    let holder = plain.holder("plain").await.unwrap().expect("held");
    assert_eq!(holder.note, None);
    lock.release().await.unwrap();
    // Another library's SET NX PX: held, no note.
    assert!(server.set_nx_px(b"classic", b"their-token", 5000));
    let holder = plain.holder("classic").await.unwrap().expect("held");
    assert_eq!(holder.note, None);
    assert!(holder.remaining <= MS(5000));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_note_is_never_shown_for_the_next_holder() {
    let server = RedisServer::start();
    let urls = [server.url()];
    let web = labelled(&urls, "web-1");
    let plain = LockManager::new([server.url()]).unwrap();
    let first = web.acquire("report", MS(5000), None).await.unwrap();
    // A waiter without a label; the release hands the lock to it.
    let waiter = {
        let plain = plain.clone();
        tokio::spawn(async move { plain.acquire("report", MS(5000), None).await })
    };
    wait_until_async(Duration::from_secs(5), "the waiter in line", || {
        server.queued("", "report") == 1
    })
    .await;
    first.release().await.unwrap();
    let second = waiter.await.unwrap().unwrap();
    assert!(
        server.get(&who_key("report")).is_some(),
        "the first holder's note is left"
    );
    let holder = plain.holder("report").await.unwrap().expect("held");
    assert_eq!(holder.note, None, "not the first holder's");
    second.release().await.unwrap();
    // A labelled holder taking it next shows its own note, not the stale one.
    let third = web.acquire("report", MS(5000), None).await.unwrap();
    let note = plain.holder("report").await.unwrap().unwrap().note.unwrap();
    assert_eq!(note.fencing_token, third.fencing_token());
    third.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redlock_the_note_is_read_from_the_quorum() {
    let mut three = servers(3);
    let urls: Vec<String> = three.iter().map(RedisServer::url).collect();
    let web = labelled(&urls, "batch-7");
    let lock = web.acquire("nightly", MS(5000), None).await.unwrap();
    three[0].kill();
    let reader = LockManager::builder(urls.iter().map(String::as_str))
        .server_timeout(MS(500))
        .build()
        .unwrap();
    let note = reader
        .holder("nightly")
        .await
        .unwrap()
        .unwrap()
        .note
        .unwrap();
    assert_eq!(
        (note.label.as_str(), note.fencing_token),
        ("batch-7", lock.fencing_token())
    );
    lock.release().await.unwrap();
}

#[test]
fn bad_labels_are_refused_before_any_network_call() {
    for (label, says) in [("", "1 to 128 bytes"), ("a\nb", "control characters")] {
        let e = LockManager::builder(["redis://127.0.0.1:1"])
            .holder_label(label)
            .build()
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.to_string().contains(says), "{e}");
    }
    let long = "x".repeat(129);
    let e = LockManager::builder(["redis://127.0.0.1:1"])
        .holder_label(long)
        .build()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let label = default_holder_label();
    let (host, pid) = label.rsplit_once(':').unwrap();
    assert!(
        !host.is_empty() && pid == std::process::id().to_string(),
        "{label}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_semaphores_and_a_read_write_locks_holders_are_listed() {
    let server = RedisServer::start();
    let urls = [server.url()];
    let a = labelled(&urls, "render-a");
    let b = labelled(&urls, "render-b");
    let plain = LockManager::new([server.url()]).unwrap();
    let sem = |m: &LockManager| m.semaphore("render", 3).unwrap();
    let first = sem(&a).acquire(1, MS(30_000), None).await.unwrap();
    let second = sem(&b).acquire(1, MS(5_000), None).await.unwrap();
    let unnoted = sem(&plain).acquire(1, MS(30_000), None).await.unwrap();
    assert_eq!(sem(&plain).state().await.unwrap().holders, 3);
    let holders = sem(&plain).holders().await.unwrap();
    let seen: Vec<(String, u64)> = holders
        .iter()
        .map(|h| {
            let n = h.note.as_ref().unwrap();
            (n.label.clone(), n.fencing_token)
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("render-a".to_string(), first.fencing_token()),
            ("render-b".to_string(), second.fencing_token())
        ],
        "longest first, the unnoted lease left out"
    );
    assert!(holders[1].remaining <= MS(5_000));
    // An extension renews a lease's note with it; a release drops it from the list.
    second.extend(MS(60_000)).await.unwrap();
    assert_eq!(
        sem(&plain).holders().await.unwrap()[0]
            .note
            .as_ref()
            .unwrap()
            .label,
        "render-b"
    );
    second.release().await.unwrap();
    let left = sem(&plain).holders().await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].note.as_ref().unwrap().label, "render-a");
    first.release().await.unwrap();
    unnoted.release().await.unwrap();
    assert!(sem(&plain).holders().await.unwrap().is_empty());

    // A read-write lock: its readers, then its writer.
    let rw_a = a.rwlock("catalog").unwrap();
    let rw_b = b.rwlock("catalog").unwrap();
    let r1 = rw_a.read(MS(30_000), None).await.unwrap();
    let r2 = rw_b.read(MS(30_000), None).await.unwrap();
    let mut labels: Vec<String> = plain
        .rwlock("catalog")
        .unwrap()
        .holders()
        .await
        .unwrap()
        .into_iter()
        .map(|h| h.note.unwrap().label)
        .collect();
    labels.sort();
    assert_eq!(labels, ["render-a", "render-b"]);
    r1.release().await.unwrap();
    r2.release().await.unwrap();
    let w = rw_b.write(MS(30_000), None).await.unwrap();
    let holders = plain.rwlock("catalog").unwrap().holders().await.unwrap();
    assert_eq!(holders.len(), 1);
    assert_eq!(
        holders[0].note.as_ref().unwrap().fencing_token,
        w.fencing_token()
    );
    w.release().await.unwrap();
}
