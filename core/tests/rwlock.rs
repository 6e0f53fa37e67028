//! The read-write lock (issue 34 item 2) on real servers: readers share, a writer excludes
//! everyone, phase-fair hand-off, fencing order, no self-deadlock, leases of their own; and
//! the family on Redlock (item 4).

use std::time::Duration;

use fencelock::{AcquireOptions, ErrorKind, LockManager, RwLock};
use fencelock_testkit::{servers, wait_for, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A manager whose calls wait up to 100 ms for a server: the default, a twentieth of a
/// call's TTL, is 15 ms for the 300 ms holds below, which a first call opening the
/// connection can miss on a machine busy with the rest of the suite (as semaphore.rs's did).
fn manager(s: &[RedisServer]) -> LockManager {
    let urls: Vec<String> = s.iter().map(RedisServer::url).collect();
    LockManager::builder(&urls)
        .server_timeout(MS(100))
        .retry_delay(MS(100))
        .build()
        .unwrap()
}

/// Waits (10 s at most: a hang) until `n` callers wait in the lock's line.
async fn waiters_in_line(rw: &RwLock, n: u64) {
    let lined_up = || async { rw.state().await.unwrap().waiters == n };
    wait_for(MS(10_000), "waiters in line", lined_up).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readers_share_and_a_writer_excludes_everyone() {
    let s = servers(1);
    let m = manager(&s);
    let rw = m.rwlock("cache").unwrap();
    let r1 = rw.read(MS(10_000), Some(MS(0))).await.unwrap();
    let r2 = rw.read(MS(10_000), Some(MS(0))).await.unwrap();
    let reads = r1.fencing_token().max(r2.fencing_token());
    let state = rw.state().await.unwrap();
    assert_eq!((state.readers, state.writer), (2, false));
    assert!(rw.try_write(MS(10_000)).await.unwrap().is_none());
    r1.release().await.unwrap();
    assert!(rw.try_write(MS(10_000)).await.unwrap().is_none());
    r2.release().await.unwrap();
    let w = rw.try_write(MS(10_000)).await.unwrap().unwrap();
    let state = rw.state().await.unwrap();
    assert_eq!((state.readers, state.writer), (0, true));
    assert!(rw.try_read(MS(10_000)).await.unwrap().is_none());
    assert!(rw.try_write(MS(10_000)).await.unwrap().is_none());
    // Fencing: a write's token exceeds every earlier read's; a read's every earlier write's.
    assert!(w.fencing_token() > reads);
    let write = w.fencing_token();
    w.release().await.unwrap();
    let r3 = rw.read(MS(10_000), Some(MS(0))).await.unwrap();
    assert!(r3.fencing_token() > write);
    r3.release().await.unwrap();
}

/// Redisson #1542 (readers let in one at a time after a writer) and #5379 (not fair): a
/// waiting writer stops new readers; at its release every reader that queued before the next
/// writer enters at once, and that writer waits for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_1542_5379_phase_fair_a_waiting_writer_stops_new_readers_and_readers_enter_together(
) {
    let s = servers(1);
    // Only handoffs can let the waiters in within the test's limits.
    let m = LockManager::builder([s[0].url()])
        .retry_delay(MS(60_000))
        .build()
        .unwrap();
    let rw = m.rwlock("doc").unwrap();
    let reader = rw.read(MS(60_000), Some(MS(0))).await.unwrap();
    let spawn = |write: bool| {
        let rw = rw.clone();
        tokio::spawn(async move {
            match write {
                true => rw.write(MS(60_000), None).await,
                false => rw.read(MS(60_000), None).await,
            }
        })
    };
    let writer = spawn(true);
    waiters_in_line(&rw, 1).await;
    assert!(
        rw.try_read(MS(10_000)).await.unwrap().is_none(),
        "a waiting writer stops new readers"
    );
    let readers: Vec<_> = (0..3).map(|_| spawn(false)).collect();
    waiters_in_line(&rw, 4).await;
    let second_writer = spawn(true);
    waiters_in_line(&rw, 5).await;
    reader.release().await.unwrap();
    let w = tokio::time::timeout(MS(10_000), writer)
        .await
        .expect("the writer is handed the lock")
        .unwrap()
        .unwrap();
    w.release().await.unwrap();
    let mut shares = Vec::new();
    for r in readers {
        let lease = tokio::time::timeout(MS(10_000), r)
            .await
            .expect("every reader queued before the next writer enters")
            .unwrap()
            .unwrap();
        shares.push(lease);
    }
    let state = rw.state().await.unwrap();
    assert_eq!((state.readers, state.writer, state.waiters), (3, false, 1));
    assert!(!second_writer.is_finished());
    for r in shares {
        r.release().await.unwrap();
    }
    let w2 = tokio::time::timeout(MS(10_000), second_writer)
        .await
        .expect("the second writer after the readers")
        .unwrap()
        .unwrap();
    w2.release().await.unwrap();
}

/// Redisson #4796: a reader asking to write deadlocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_4796_a_reader_asking_to_write_with_its_token_is_refused_at_once() {
    let s = servers(1);
    let m = manager(&s);
    let rw = m.rwlock("upgrade").unwrap();
    let opts = AcquireOptions::new(MS(10_000)).token("worker-7");
    let read = rw.read_with(&opts).await.unwrap();
    let start = std::time::Instant::now();
    let e = rw.write_with(&opts).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    assert!(e.message().contains("read share"), "{e}");
    assert!(start.elapsed() < MS(5_000), "at once, not after a wait");
    read.release().await.unwrap();
    let write = rw.write_with(&opts).await.unwrap();
    let e = rw.read_with(&opts).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::WrongKind, "{e}");
    write.release().await.unwrap();
}

/// Redisson #891 (a reader's unlock deleted a held write lock), #1604 (readers not renewed),
/// PR #7098 (a dead instance's read keys renewed): each share is a lease of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_891_1604_7098_each_reader_is_a_lease_of_its_own() {
    let s = servers(1);
    let m = manager(&s);
    let rw = m.rwlock("shares").unwrap();
    let kept = rw
        .read_with(&AcquireOptions::new(MS(600)).auto_extend(None))
        .await
        .unwrap();
    let crashed = rw.read(MS(600), Some(MS(0))).await.unwrap();
    let crashed_token = crashed.token().to_vec();
    crashed.detach();
    tokio::time::sleep(MS(1500)).await;
    assert!(
        kept.is_held().await.unwrap(),
        "auto-extension renews this reader"
    );
    assert_eq!(
        rw.state().await.unwrap().readers,
        1,
        "the crashed one's share is back"
    );
    let e = rw.release_by_token(&crashed_token).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    kept.release().await.unwrap();
    let w = rw.try_write(MS(10_000)).await.unwrap().unwrap();
    // A reader's release by token never touches the writer's hold.
    assert_eq!(
        rw.release_by_token(&crashed_token)
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::NotHeld
    );
    assert!(w.is_held().await.unwrap());
    w.release().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redlock_a_semaphore_needs_enough_servers_to_keep_its_limit() {
    let mut s = servers(3);
    let m = manager(&s);
    // A limit of 2 on 3 servers needs all 3: two majorities could hold 3 permits.
    let sem = m.semaphore("redlock-sem", 2).unwrap();
    let a = sem.acquire(1, MS(10_000), Some(MS(0))).await.unwrap();
    let b = sem.acquire(1, MS(10_000), Some(MS(0))).await.unwrap();
    assert!(sem.try_acquire(1, MS(10_000)).await.unwrap().is_none());
    a.release().await.unwrap();
    b.release().await.unwrap();
    // A write hold and a limit of 1 need a majority: one server down is fine.
    s[2].kill();
    let rw = m.rwlock("redlock-rw").unwrap();
    let w = rw.write(MS(10_000), Some(MS(0))).await.unwrap();
    assert!(rw.try_read(MS(10_000)).await.unwrap().is_none());
    w.release().await.unwrap();
    let one = m.semaphore("redlock-one", 1).unwrap();
    one.acquire(1, MS(10_000), Some(MS(0)))
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    let e = sem.acquire(1, MS(10_000), Some(MS(0))).await.unwrap_err();
    assert!(
        matches!(e.kind(), ErrorKind::Unavailable | ErrorKind::NotAcquired),
        "{e}"
    );
}

/// Redisson #1110: a re-entrant write with a shorter lease dropped the whole lock. Re-entry
/// here renews the same lease, which keeps the later of its two ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisson_1110_a_reentrant_write_with_a_shorter_lease_keeps_the_hold() {
    let s = servers(1);
    let m = manager(&s);
    let rw = m.rwlock("reenter").unwrap();
    let outer = rw
        .write_with(&AcquireOptions::new(MS(10_000)).token("job-1"))
        .await
        .unwrap();
    let inner = rw
        .write_with(&AcquireOptions::new(MS(300)).token("job-1").reentrant(true))
        .await
        .unwrap();
    assert!(inner.fencing_token() > outer.fencing_token());
    inner.detach();
    tokio::time::sleep(MS(1000)).await;
    assert!(
        outer.is_held().await.unwrap(),
        "the outer hold outlives the inner's lease"
    );
    assert!(rw.try_read(MS(1000)).await.unwrap().is_none());
    outer.release().await.unwrap();
}

/// `LockManager::family` picks the primitive a lease kind belongs to (the Python and Node
/// handles call it): its state, release and extension by token are that primitive's; a lock
/// is not one of the family.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_family_handle_dispatches_by_kind() {
    use fencelock::{Family, FamilyState, LeaseKind};
    let s = servers(1);
    let m = manager(&s);
    let permits = LeaseKind::Permits { count: 2, limit: 3 };
    let sem = m.family("pool", permits).unwrap();
    assert!(matches!(sem, Family::Semaphore(_)));
    let lease = m
        .semaphore("pool", 3)
        .unwrap()
        .acquire(2, MS(10_000), Some(MS(0)))
        .await
        .unwrap();
    let FamilyState::Semaphore(st) = sem.state().await.unwrap() else {
        panic!("a semaphore's state")
    };
    assert_eq!((st.limit, st.held, st.holders), (3, 2, 1));
    let validity = sem
        .extend_by_token(lease.token(), MS(20_000))
        .await
        .unwrap();
    assert!(validity > MS(10_000), "{validity:?}");
    sem.release_by_token(lease.token()).await.unwrap();
    assert!(!lease.is_held().await.unwrap());
    lease.detach();

    let rw = m.family("doc", LeaseKind::Write).unwrap();
    let write = m
        .rwlock("doc")
        .unwrap()
        .write(MS(10_000), Some(MS(0)))
        .await
        .unwrap();
    assert_eq!(
        rw.state().await.unwrap(),
        FamilyState::RwLock(fencelock::RwLockState {
            readers: 0,
            writer: true,
            waiters: 0
        })
    );
    rw.release_by_token(write.token()).await.unwrap();
    let e = rw.release_by_token(write.token()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotHeld);
    write.detach();
    // A semaphore's name is not a read-write lock.
    let pool = m.semaphore("pool", 3).unwrap();
    let held = pool.acquire(1, MS(10_000), Some(MS(0))).await.unwrap();
    let e = m.family("pool", LeaseKind::Read).unwrap().state().await;
    assert_eq!(e.unwrap_err().kind(), ErrorKind::WrongKind);
    held.release().await.unwrap();
    let e = m.family("pool", LeaseKind::Lock).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}
