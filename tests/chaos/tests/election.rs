//! Leader election under faults (issue 54 item 5), on five real redis-servers: candidates
//! campaign in turn while servers are killed, restarted empty (after the TTL, as the rules
//! ask) and paused; every term is recorded and the history checker's verdict over the terms
//! is the test's (no two leaders' terms overlap within the validity the library reported, term
//! numbers strictly increase); a fenced store rejects a deposed leader's late write; observers
//! never report an older term after a newer one and end on the true leader, then on nobody.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::blocking::LockManager;
use fencelock::{ErrorKind, Leader};
use fencelock_chaos::history::{now_us, History, Hold};
use fencelock_chaos::store::FencedStore;
use fencelock_chaos::{scaled, urls};
use fencelock_testkit::{servers, RedisServer};

const MS: fn(u64) -> Duration = Duration::from_millis;
const NAME: &str = "scheduler";
const CANDIDATES: usize = 4;
const TTL: Duration = Duration::from_millis(800);
/// Longest any step that must happen may take (more is a hang).
const STEP: Duration = Duration::from_secs(10);

fn manager(urls: &[String]) -> LockManager {
    let config = fencelock::LockManager::builder(urls)
        .server_timeout(MS(100))
        .retry_delay(MS(50))
        .config()
        .unwrap();
    LockManager::from_config(config).unwrap()
}

/// What an observer reported, in order (`None`: nobody led).
type Reports = Arc<Mutex<Vec<Option<(u64, String)>>>>;

/// An observer on a thread of its own until `stop`: its reports.
fn observe(urls: Vec<String>, stop: Arc<AtomicBool>) -> (Reports, std::thread::JoinHandle<()>) {
    let reports: Reports = Arc::default();
    let into = Arc::clone(&reports);
    let thread = std::thread::spawn(move || {
        let m = manager(&urls);
        let mut observer = m.election(NAME).unwrap().observe();
        while !stop.load(Ordering::SeqCst) {
            // Reads fail while too few servers answer: the observer stays usable.
            if let Ok(Some(report)) = observer.next_within(MS(200)) {
                let seen = report.map(|l: Leader| (l.fencing_token, l.value));
                into.lock().unwrap().push(seen);
            }
        }
    });
    (reports, thread)
}

/// Waits (a hang bound) until every observer's last report is `want`.
fn observers_end_on(all: &[Reports], want: &Option<(u64, String)>) {
    let started = Instant::now();
    loop {
        let last: Vec<_> = all
            .iter()
            .map(|r| r.lock().unwrap().last().cloned())
            .collect();
        if last.iter().all(|l| l.as_ref() == Some(want)) {
            return;
        }
        assert!(
            started.elapsed() < STEP,
            "observers ended on {last:?}, not {want:?}"
        );
        sleep(MS(20));
    }
}

/// One candidate: campaigns, works a little as leader, writes with its term number, resigns;
/// again until `stop`. Each term is recorded in `history`.
fn candidate(
    id: usize,
    urls: Vec<String>,
    history: History,
    store: FencedStore,
    stop: Arc<AtomicBool>,
) -> usize {
    let m = manager(&urls);
    let election = m.election(NAME).unwrap();
    let value = format!("candidate-{id}");
    let mut terms = 0;
    while !stop.load(Ordering::SeqCst) {
        let term = match election.campaign(&value, TTL, Some(MS(2000))) {
            Ok(term) => term,
            Err(e) if matches!(e.kind(), ErrorKind::NotAcquired | ErrorKind::Unavailable) => {
                continue
            }
            Err(e) => panic!("candidate {id}: {e}"),
        };
        let start = now_us();
        let validity = term.as_async().lock().validity();
        sleep(MS(10 + (id as u64 * 7) % 30));
        if !term.is_lost() {
            store
                .write("schedule", term.fencing_token(), &value)
                .unwrap();
        }
        let end = now_us();
        history.record(Hold::new(
            NAME,
            term.fencing_token(),
            start,
            end,
            validity,
            value.clone(),
        ));
        terms += 1;
        let _ = term.resign();
    }
    terms
}

/// Kills, restarts (after the TTL: a server without persistence must stay down that long) and
/// pauses a minority of the servers, one fault at a time, until `until`.
fn faults(servers: &mut [RedisServer], until: Instant) -> usize {
    let mut n = 0;
    while Instant::now() < until {
        let i = n % 2;
        match n % 3 {
            0 | 1 => {
                servers[i].kill();
                sleep(TTL + MS(300));
                servers[i].restart();
            }
            _ => {
                servers[4].stop();
                sleep(MS(300));
                servers[4].cont();
            }
        }
        n += 1;
        sleep(MS(200));
    }
    n
}

#[test]
fn terms_never_overlap_and_observers_end_on_the_true_leader_through_faults() {
    let mut s = servers(5);
    let store_server = RedisServer::start();
    let store = FencedStore::new(&store_server.url());
    let urls = urls(&s);
    let history = History::new();
    let stop = Arc::new(AtomicBool::new(false));
    let watching = Arc::new(AtomicBool::new(false));
    let (a, a_thread) = observe(urls.clone(), Arc::clone(&watching));
    let (b, b_thread) = observe(urls.clone(), Arc::clone(&watching));
    let candidates: Vec<_> = (0..CANDIDATES)
        .map(|id| {
            let (urls, history, store, stop) = (
                urls.clone(),
                history.clone(),
                store.clone(),
                Arc::clone(&stop),
            );
            std::thread::spawn(move || candidate(id, urls, history, store, stop))
        })
        .collect();
    let run = scaled(Duration::from_secs(6), 10);
    let injected = faults(&mut s, Instant::now() + run);
    stop.store(true, Ordering::SeqCst);
    let terms: usize = candidates.into_iter().map(|c| c.join().unwrap()).sum();
    let verdict = history.check();
    eprintln!("{terms} terms, {injected} faults: {verdict}");
    verdict.assert_ok();
    assert!(terms >= 10, "only {terms} terms in {run:?}");

    // Every candidate resigned: the observers end on nobody; then on the true leader.
    observers_end_on(&[Arc::clone(&a), Arc::clone(&b)], &None);
    let m = manager(&urls);
    let election = m.election(NAME).unwrap();
    let last = election.campaign("the-last", TTL * 10, Some(STEP)).unwrap();
    let truth = Some((last.fencing_token(), "the-last".to_owned()));
    observers_end_on(&[Arc::clone(&a), Arc::clone(&b)], &truth);
    assert_eq!(
        election
            .leader()
            .unwrap()
            .map(|l| (l.fencing_token, l.value)),
        truth
    );
    last.resign().unwrap();
    observers_end_on(&[Arc::clone(&a), Arc::clone(&b)], &None);
    watching.store(true, Ordering::SeqCst);
    a_thread.join().unwrap();
    b_thread.join().unwrap();
    for reports in [a, b] {
        let terms: Vec<u64> = reports
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .map(|(t, _)| *t)
            .collect();
        assert!(
            terms.windows(2).all(|w| w[0] <= w[1]),
            "an older term after a newer: {terms:?}"
        );
    }
}

/// A leader paused past its term (here: its term given up without a release, as a frozen
/// process's lapses) is replaced; when it wakes and writes with its old term number, the
/// fenced store rejects the write, and the new leader's stands.
#[test]
fn a_deposed_leaders_late_write_is_rejected_by_the_fenced_store() {
    let s = servers(3);
    let store_server = RedisServer::start();
    let store = FencedStore::new(&store_server.url());
    let urls = urls(&s);
    let (old, new) = (manager(&urls), manager(&urls));
    let deposed = old
        .election(NAME)
        .unwrap()
        .campaign("old", MS(500), None)
        .unwrap();
    let old_term = deposed.fencing_token();
    // Frozen from here: no more extensions, no release; its term lapses at its TTL.
    deposed.into_lock().detach();
    let leader = new
        .election(NAME)
        .unwrap()
        .campaign("new", MS(5000), Some(STEP))
        .unwrap();
    assert!(leader.fencing_token() > old_term, "a new term");
    assert!(store
        .write("schedule", leader.fencing_token(), "new")
        .unwrap());
    assert!(
        !store.write("schedule", old_term, "old").unwrap(),
        "the deposed leader's late write is rejected"
    );
    assert_eq!(store.read("schedule").unwrap().as_deref(), Some("new"));
    leader.resign().unwrap();
}
