//! A server's clock jumped forward and back (issue 36, item 4) while holders contend, on
//! servers under libfaketime ([`fencelock_chaos::clock`]; stage 57-servers names the server
//! binary). Redis expires keys by its wall clock, so a jump forward frees every lock on that
//! server at once.
//!
//! - One server of five jumping: a minority; the quorum's keys keep their time, so exclusion
//!   holds and fencing tokens increase (within the assumptions).
//! - A single server jumping forward by more than the TTL: outside the assumption of bounded
//!   drift; the checker finds holders overlapping (the holder's lock vanished under it), and
//!   the fencing tokens still increase in hold order, so a fenced store takes the newer
//!   holder's writes and rejects the older one's.

use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock::{ErrorKind, LockManager};
use fencelock_chaos::clock::ClockedServer;
use fencelock_chaos::contend::{contend, finish, runtime, Contention, Report};
use fencelock_chaos::history::{History, Verdict};

const HANG_LIMIT: Duration = Duration::from_secs(20);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Holders contend on `servers` for `run` while `jump` moves clocks; the report and verdict.
fn contend_while(
    servers: &[ClockedServer],
    (ttl, max_hold, run): (Duration, Duration, Duration),
    jump: impl FnOnce(Instant),
) -> (Report, Verdict) {
    let urls: Vec<String> = servers.iter().map(|s| s.server.url()).collect();
    let m = LockManager::builder(&urls)
        .server_timeout(ms(100))
        .retry_delay(ms(20))
        .build()
        .unwrap();
    let history = History::new();
    let until = Instant::now() + run;
    let rt = runtime();
    let spec = Contention {
        holders: 4,
        names: vec!["clock".into()],
        ttl,
        wait: ms(3000),
        max_hold,
        until,
    };
    let job = rt.spawn(contend(m, spec, history.clone()));
    jump(until);
    let report = finish(&rt, job, until, HANG_LIMIT);
    (report, history.check())
}

/// Each of five servers in turn has its clock jumped 3 s ahead (three TTLs: its keys expire at
/// once) for 400 ms, then set back: exclusion holds, tokens increase, locks keep being granted.
#[test]
fn a_clock_jump_on_one_of_five_servers_keeps_exclusion() {
    let servers: Vec<ClockedServer> = (0..5).map(|_| ClockedServer::start()).collect();
    let before = servers[0].time_ms();
    servers[0].set_offset_ms(3000);
    let ahead = servers[0].time_ms();
    servers[0].set_offset_ms(0);
    assert!(
        ahead >= before + 2900,
        "libfaketime did not move the server's clock: {before} then {ahead}"
    );
    let (report, verdict) = contend_while(&servers, (ms(1000), ms(5), ms(6000)), |_| {
        sleep(ms(500));
        for s in &servers {
            s.set_offset_ms(3000);
            sleep(ms(400));
            s.set_offset_ms(0);
            sleep(ms(600));
        }
    });
    println!("one of five servers' clock jumped, in turn: {report}\n{verdict}");
    verdict.assert_ok();
    let unexpected = report.unexpected_errors(&[ErrorKind::NotAcquired, ErrorKind::Unavailable]);
    assert!(unexpected.is_empty(), "unexpected errors: {unexpected:?}");
    assert!(report.acquired() >= 50, "too few holds: {report}");
}

/// A single server's clock jumps 2 s ahead (twice the TTL) while holders keep the lock for up
/// to 300 ms: the holder's key expires under it and another holder gets the lock, so the
/// checker finds overlaps; the tokens still increase in the order the holds started.
#[test]
fn a_clock_jump_on_a_single_server_overlaps_and_fencing_orders_the_holders() {
    let server = [ClockedServer::start()];
    let (report, verdict) = contend_while(&server, (ms(1000), ms(300), ms(5000)), |until| {
        sleep(ms(500));
        let mut ahead = 0;
        while Instant::now() + ms(700) < until {
            ahead += 2000;
            server[0].set_offset_ms(ahead);
            sleep(ms(700));
        }
    });
    println!("a single server's clock jumped ahead 2 s at a time: {report}\n{verdict}");
    assert!(
        !verdict.overlaps().is_empty(),
        "no overlap found: the clock jumps did not free a held lock ({report})"
    );
    assert!(
        verdict.token_violations().is_empty(),
        "fencing tokens out of order: {verdict}"
    );
}
