//! Semaphores and read-write locks under faults (issue 34 item 6), judged by the history
//! checker's capacity rules (never more than the limit at one instant, never a writer with
//! anyone else, fencing order, nobody past validity): a Redlock minority killed and restarted
//! empty under contention, a holder process SIGKILLed (its permits come back when its lease
//! ends), a holder process SIGSTOPped past its TTL (another takes over; its late write is
//! rejected by the fenced store).

use std::path::Path;
use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::contend::{contend_family, finish, runtime, Contention, Family};
use fencelock_chaos::history::{now_us, History, Hold, HoldKind};
use fencelock_chaos::store::FencedStore;
use fencelock_chaos::urls;
use fencelock_chaos::worker::{field, num, Worker};
use fencelock_testkit::servers;

const MS: fn(u64) -> Duration = Duration::from_millis;
const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
const HANG_LIMIT: Duration = Duration::from_secs(20);

fn manager(urls: &[String]) -> LockManager {
    LockManager::builder(urls)
        .server_timeout(MS(100))
        .retry_delay(MS(50))
        .build()
        .unwrap()
}

/// Holders contend on two names of `family` while `victims` servers are killed, kept down
/// longer than the TTL (the keys they forget have ended anyway) and restarted empty, twice.
fn contend_through_restarts(n: usize, victims: &[usize], family: Family) {
    let mut srv = servers(n);
    let ttl = MS(800);
    let m = manager(&urls(&srv));
    let history = History::new();
    let (down, up) = (ttl + MS(300), MS(600));
    let until = Instant::now() + MS(300) + (down + up) * 2;
    let rt = runtime();
    let spec = Contention {
        holders: 6,
        names: vec!["pool-a".into(), "pool-b".into()],
        ttl,
        wait: MS(3000),
        max_hold: MS(10),
        until,
    };
    let job = rt.spawn(contend_family(m, spec, family, history.clone()));
    sleep(MS(300));
    let mut windows = Vec::new();
    for _ in 0..2 {
        for &v in victims {
            srv[v].kill();
        }
        let from = Instant::now();
        sleep(down);
        windows.push((from, Instant::now()));
        for &v in victims {
            srv[v].restart();
        }
        sleep(up);
    }
    let report = finish(&rt, job, until, HANG_LIMIT);
    let verdict = history.check();
    println!("{family:?}, {victims:?} of {n} down twice: {report}\n{verdict}");
    verdict.assert_ok();
    let unexpected = report.unexpected_errors(&[ErrorKind::NotAcquired, ErrorKind::Unavailable]);
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    for (i, (from, to)) in windows.iter().enumerate() {
        assert!(
            report.acquired_within(*from, *to) > 0,
            "round {i}: nothing granted while the servers the quorum allows were down ({report})"
        );
    }
    assert!(report.acquired() >= 40, "too few holds: {report}");
}

#[test]
fn a_semaphore_keeps_its_limit_with_a_server_of_five_down_and_restarted_empty() {
    // A limit of 2 on five servers needs four of them (floor(2 * 5 / 3) + 1): one may be down.
    contend_through_restarts(
        5,
        &[1],
        Family::Semaphore {
            limit: 2,
            max_count: 2,
        },
    );
}

#[test]
fn a_rwlock_keeps_writers_alone_with_a_minority_down_and_restarted_empty() {
    contend_through_restarts(3, &[2], Family::RwLock { write_one_in: 3 });
}

fn hold_args(urls: &[String], name: &str, ttl_ms: u64, lease: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "hold",
        "--servers",
        &urls.join(","),
        "--name",
        name,
        "--ttl-ms",
        &ttl_ms.to_string(),
        "--server-timeout-ms",
        "100",
        "--lease",
        lease,
    ]
    .map(String::from)
    .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args
}

/// Redisson #4462, #659: a crashed holder's permits never came back.
#[test]
fn a_holder_process_killed_with_sigkill_gives_its_permits_back_when_its_lease_ends() {
    let srv = servers(1);
    let urls = urls(&srv);
    let ttl = MS(1000);
    let m = manager(&urls);
    let rt = runtime();
    let mut w = Worker::spawn(
        Path::new(WORKER),
        &hold_args(&urls, "licences", 1000, "semaphore:2:2", &[]),
    );
    let got = w.expect("ACQUIRED", MS(10_000));
    let sem = m.semaphore("licences", 2).unwrap();
    assert!(rt.block_on(sem.try_acquire(1, ttl)).unwrap().is_none());
    w.kill();
    let killed = Instant::now();
    let kill_us = now_us();
    let lease = rt
        .block_on(sem.acquire(2, ttl, Some(MS(10_000))))
        .expect("the killed holder's permits come back");
    let back_after = killed.elapsed();
    let (start_us, validity) = (now_us(), lease.validity());
    println!("permits back {back_after:?} after SIGKILL (ttl {ttl:?})");
    assert!(back_after < ttl + MS(1000), "back after {back_after:?}");
    let ends_us = num(&got, "start_us") + num(&got, "validity_us");
    assert!(start_us + 5_000 >= ends_us, "not before the lease ended");
    let kind = HoldKind::Permits { count: 2, limit: 2 };
    let verdict = fencelock_chaos::history::check(&[
        Hold::new(
            "licences",
            num(&got, "token"),
            num(&got, "start_us"),
            kill_us.min(ends_us),
            Duration::from_micros(num(&got, "validity_us")),
            format!("killed worker {}", w.pid()),
        )
        .of_kind(kind),
        Hold::new(
            "licences",
            lease.fencing_token(),
            start_us,
            now_us(),
            validity,
            "next",
        )
        .of_kind(kind),
    ]);
    println!("{verdict}");
    verdict.assert_ok();
    rt.block_on(lease.release()).unwrap();
}

/// A writer paused (SIGSTOP) past its TTL: a reader takes over after the write hold ended,
/// and the writer, resumed, learns it lost the lock and its write is rejected by the fenced
/// store; the checker sees the writer past its validity and no reader beside it within it.
#[test]
fn a_writer_paused_past_its_ttl_is_fenced_off_when_it_resumes() {
    let srv = servers(1);
    let store_url = srv[0].url();
    let urls = urls(&srv);
    let m = manager(&urls);
    let rt = runtime();
    let store = FencedStore::new(&store_url);
    let mut w = Worker::spawn(
        Path::new(WORKER),
        &hold_args(
            &urls,
            "doc",
            1000,
            "write",
            &[
                "--store",
                &store_url,
                "--resource",
                "doc",
                "--value",
                "writer",
            ],
        ),
    );
    let got = w.expect("ACQUIRED", MS(10_000));
    w.stop();
    let rw = m.rwlock("doc").unwrap();
    let share = rt
        .block_on(rw.read(MS(5000), Some(MS(10_000))))
        .expect("the paused writer's hold ends");
    let (start_us, validity) = (now_us(), share.validity());
    assert!(share.fencing_token() > num(&got, "token"));
    assert!(store.write("doc", share.fencing_token(), "reader").unwrap());
    w.cont();
    w.send("WRITE");
    let wrote = w.expect("WROTE", MS(10_000));
    assert_eq!(field(&wrote, "fenced"), Some("rejected"), "{wrote}");
    assert_eq!(field(&wrote, "lost"), Some("true"), "{wrote}");
    let verdict = fencelock_chaos::history::check(&[
        Hold::new(
            "doc",
            num(&got, "token"),
            num(&got, "start_us"),
            num(&wrote, "end_us"),
            Duration::from_micros(num(&got, "validity_us")),
            "paused writer",
        )
        .of_kind(HoldKind::Write),
        Hold::new(
            "doc",
            share.fencing_token(),
            start_us,
            now_us(),
            validity,
            "reader",
        )
        .of_kind(HoldKind::Read),
    ]);
    println!("{verdict}");
    assert_eq!(verdict.violations.len(), 1, "{verdict}");
    assert_eq!(verdict.held_past_validity().len(), 1, "{verdict}");
    assert!(verdict.over_limit().is_empty(), "{verdict}");
    rt.block_on(share.release()).unwrap();
    w.send("RELEASE");
}
