//! Leader election (issue 54) on real servers: terms that fence, FIFO hand-over, the leader's
//! value read and followed by observers, a crashed leader's end seen without any message,
//! one kind per name, and Redlock.

use std::time::Duration;

use fencelock::{ErrorKind, Leader, LockManager, Observer};
use fencelock_testkit::{servers, wait_for, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;

/// A term longer than an observer's wait for a report (10 s): a change it reports in time was
/// pushed by the servers, not found by its timer at the term's end.
const TERM: Duration = Duration::from_secs(30);

fn manager(s: &[RedisServer]) -> LockManager {
    let urls: Vec<String> = s.iter().map(RedisServer::url).collect();
    LockManager::builder(&urls)
        .server_timeout(MS(200))
        .retry_delay(MS(100))
        .build()
        .unwrap()
}

/// The observer's next report, within 10 s (more is a hang).
async fn next(o: &mut Observer) -> Option<Leader> {
    tokio::time::timeout(MS(10_000), o.next())
        .await
        .expect("an observer hung")
        .unwrap()
}

fn seen(l: &Option<Leader>) -> Option<(String, u64)> {
    l.as_ref().map(|l| (l.value.clone(), l.fencing_token))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_term_shows_its_value_until_it_resigns() {
    let s = servers(1);
    let m = manager(&s);
    let e = m.election("scheduler").unwrap();
    assert_eq!(e.leader().await.unwrap(), None, "nobody leads yet");
    let term = e.campaign("host-a:8080", MS(3000), None).await.unwrap();
    assert!(
        term.lock().is_auto_extending(),
        "a term is always kept alive"
    );
    let leader = e.leader().await.unwrap().expect("a leader");
    assert_eq!(leader.value, "host-a:8080");
    assert_eq!(leader.fencing_token, term.fencing_token());
    assert!(leader.remaining > MS(0) && leader.remaining <= MS(3000));
    assert_eq!(leader.since, {
        let ms = term.since().duration_since(std::time::UNIX_EPOCH).unwrap();
        std::time::UNIX_EPOCH + MS(ms.as_millis() as u64)
    });
    // Another manager, without a label, reads the same.
    let other = manager(&s);
    let read = other.election("scheduler").unwrap().leader().await.unwrap();
    assert_eq!(read.map(|l| l.value), Some("host-a:8080".to_owned()));

    term.proclaim("host-a:9090\nwith a second line")
        .await
        .unwrap();
    assert_eq!(term.value(), "host-a:9090\nwith a second line");
    let leader = e.leader().await.unwrap().unwrap();
    assert_eq!(
        (leader.value.as_str(), leader.fencing_token),
        ("host-a:9090\nwith a second line", term.fencing_token()),
        "same term, new value"
    );
    assert!(
        e.try_campaign("b", MS(3000)).await.unwrap().is_none(),
        "one leader"
    );
    term.resign().await.unwrap();
    assert_eq!(e.leader().await.unwrap(), None);
    let next_term = e.campaign("b", MS(3000), Some(MS(0))).await.unwrap();
    assert!(
        next_term.fencing_token() > leader.fencing_token,
        "terms grow"
    );
    next_term.resign().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn candidates_lead_in_the_order_they_came_and_observers_follow() {
    let s = servers(1);
    let m = manager(&s);
    let e = m.election("migrations").unwrap();
    let mut observer = e.observe();
    assert_eq!(
        next(&mut observer).await,
        None,
        "first the state now: nobody"
    );

    let first = e.campaign("a", TERM, None).await.unwrap();
    assert_eq!(
        seen(&next(&mut observer).await),
        Some(("a".into(), first.fencing_token()))
    );
    first.proclaim("a2").await.unwrap();
    assert_eq!(
        seen(&next(&mut observer).await),
        Some(("a2".into(), first.fencing_token())),
        "a proclaimed value, same term"
    );

    let (b, c) = (e.clone(), e.clone());
    let second = tokio::spawn(async move { b.campaign("b", TERM, None).await });
    wait_for(MS(10_000), "b in line", || async {
        m.state("migrations").await.unwrap().waiters == Some(1)
    })
    .await;
    let third = tokio::spawn(async move { c.campaign("c", TERM, None).await });
    wait_for(MS(10_000), "c in line", || async {
        m.state("migrations").await.unwrap().waiters == Some(2)
    })
    .await;

    let token_a = first.fencing_token();
    first.resign().await.unwrap();
    let second = second.await.unwrap().unwrap();
    assert_eq!(second.value(), "b", "the first in line leads next");
    assert!(second.fencing_token() > token_a, "terms grow");
    let mut report = next(&mut observer).await;
    if report.is_none() {
        // The resign's announcement came before the next leader's note: nobody, briefly.
        report = next(&mut observer).await;
    }
    assert_eq!(seen(&report), Some(("b".into(), second.fencing_token())));

    let token_b = second.fencing_token();
    second.resign().await.unwrap();
    let third = third.await.unwrap().unwrap();
    assert!(third.fencing_token() > token_b);
    let mut report = next(&mut observer).await;
    if report.is_none() {
        report = next(&mut observer).await;
    }
    assert_eq!(seen(&report), Some(("c".into(), third.fencing_token())));
    third.resign().await.unwrap();
    assert_eq!(next(&mut observer).await, None, "ends on nobody");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_vanishes_is_seen_gone_when_its_term_runs_out() {
    let s = servers(1);
    let m = manager(&s);
    let e = m.election("vanishing").unwrap();
    let term = e.campaign("gone-soon", MS(600), None).await.unwrap();
    let mut observer = e.observe();
    assert_eq!(seen(&next(&mut observer).await).unwrap().0, "gone-soon");
    // As a crashed process: no release, no announcement, no more extensions.
    term.into_lock().detach();
    let started = std::time::Instant::now();
    assert_eq!(
        next(&mut observer).await,
        None,
        "the term's end, with no message"
    );
    assert!(
        started.elapsed() < MS(5000),
        "seen at the term's end, not much later"
    );
    // A candidate that waited takes over once the term ran out.
    let after = e.campaign("next", MS(3000), Some(MS(5000))).await.unwrap();
    assert_eq!(seen(&next(&mut observer).await).unwrap().0, "next");
    after.resign().await.unwrap();
}

/// How many calls of `command` `server` ran since its last `CONFIG RESETSTAT` (scripts'
/// commands included).
fn calls(server: &RedisServer, command: &str) -> u64 {
    let stats = server.info_commandstats();
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(&prefix)?.split(',').next()?.parse().ok())
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_observer_follows_a_leaders_extensions_without_reading_and_still_sees_its_end() {
    let s = servers(1);
    let m = manager(&s);
    let e = m.election("steady").unwrap();
    // Extended every 200 ms: each extension renews the term's note, announced as a renewal.
    let term = e.campaign("steady", MS(600), None).await.unwrap();
    let mut observer = e.observe();
    assert_eq!(seen(&next(&mut observer).await).unwrap().0, "steady");
    s[0].cmd(&[b"CONFIG", b"RESETSTAT"]);
    let waiting = tokio::spawn(async move {
        let report = next(&mut observer).await;
        (report, observer)
    });
    wait_until_publishes(&s[0], 5).await;
    // The observer's read is the inspection script, the only one here that calls ZCARD.
    assert_eq!(
        calls(&s[0], "zcard"),
        0,
        "an observer read the election at a renewal"
    );
    assert!(!waiting.is_finished(), "an observer reported a renewal");
    // As a crashed process: its timer, moved by the renewals, still ends at the term's end.
    term.into_lock().detach();
    let started = std::time::Instant::now();
    let (report, _observer) = waiting.await.unwrap();
    assert_eq!(report, None, "the term's end, with no message");
    assert!(
        started.elapsed() < MS(5000),
        "seen at the term's end, not much later"
    );
    assert_eq!(m.remaining("steady").await.unwrap(), None, "not before it");
}

/// Waits until `server` ran `n` PUBLISH calls since its last `CONFIG RESETSTAT`.
async fn wait_until_publishes(server: &RedisServer, n: u64) {
    fencelock_testkit::wait_for(MS(10_000), "the leader's renewals", || async {
        calls(server, "publish") >= n
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_kind_per_name_and_values_checked_before_any_call() {
    let s = servers(1);
    let m = manager(&s);
    // A plain lock on the name: no leader, and candidates wait for it.
    let lock = m
        .acquire("shared-name", MS(3000), Some(MS(0)))
        .await
        .unwrap();
    let e = m.election("shared-name").unwrap();
    assert_eq!(e.leader().await.unwrap(), None);
    assert!(e.try_campaign("x", MS(3000)).await.unwrap().is_none());
    lock.release().await.unwrap();
    // A semaphore on the name: the typed wrong-kind error.
    let sem = m.semaphore("sem-name", 2).unwrap();
    let permit = sem.acquire(1, MS(3000), Some(MS(0))).await.unwrap();
    let e = m.election("sem-name").unwrap();
    let err = e.campaign("x", MS(3000), Some(MS(0))).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::WrongKind, "{err}");
    assert_eq!(e.leader().await.unwrap_err().kind(), ErrorKind::WrongKind);
    permit.release().await.unwrap();

    // Nothing listens here: the checks come first.
    let nowhere = LockManager::new(["redis://127.0.0.1:9"]).unwrap();
    let e = nowhere.election("x").unwrap();
    let big = "v".repeat(fencelock::MAX_VALUE_LEN + 1);
    let err = e.campaign(&big, MS(3000), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(err.message().contains("at most 16384 bytes"), "{err}");
    let err = e.campaign("v", MS(0), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    assert_eq!(
        nowhere.election("").unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_redlock_the_quorum_decides_and_observers_hear_every_server() {
    let mut s = servers(3);
    let m = manager(&s);
    let e = m.election("redlocked").unwrap();
    let mut observer = e.observe();
    assert_eq!(next(&mut observer).await, None);
    let term = e.campaign("r1", TERM, None).await.unwrap();
    assert_eq!(seen(&next(&mut observer).await).unwrap().0, "r1");
    // One server down: the quorum still leads, proclaims and is observed.
    s[2].stop();
    term.proclaim("r2").await.unwrap();
    assert_eq!(seen(&next(&mut observer).await).unwrap().0, "r2");
    s[2].cont();
    term.resign().await.unwrap();
    assert_eq!(next(&mut observer).await, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_holder_of_an_elections_name_is_its_leader_by_value() {
    let s = servers(1);
    let m = manager(&s);
    let term = m
        .election("shown")
        .unwrap()
        .campaign("web-2:8080", TERM, None)
        .await
        .unwrap();
    let holder = m.holder("shown").await.unwrap().unwrap();
    let note = holder.note.expect("a term's note");
    assert_eq!(
        note.label, "web-2:8080",
        "the value, as `fencelock status` shows it"
    );
    assert_eq!(note.fencing_token, term.fencing_token());
    term.resign().await.unwrap();
}
