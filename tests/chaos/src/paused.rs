//! The paused holder (issue #6): a holder process frozen with SIGSTOP (a GC pause, a VM
//! migration, a swapped-out process) past its TTL while another holder takes over. When it
//! resumes and carries on with the write it was about to do, a store that checks fencing
//! tokens ([`FencedStore`]) rejects it, while a store that does not ([`UnfencedStore`]) is
//! silently overwritten with stale data.
//!
//! [`a_paused_holder_is_fenced_off`] runs the whole scenario for any two languages: both
//! holders are worker processes in their `hold` mode, started through their [`Launcher`]s,
//! and each writes to the store itself: `chaos-worker hold` through [`crate::store`];
//! `worker.py`, `worker.mjs` and `worker-c` over their own RESP client, with a byte-identical
//! copy of [`FENCED_WRITE`](crate::store::FENCED_WRITE) (checked here through the store's
//! script cache) and a plain `SET` for the unfenced store. Every worker speaks the same
//! `hold` protocol:
//!
//! ```text
//! WORKER hold --servers URL[,URL...] --name NAME --ttl-ms N [--wait-ms N]
//!             [--server-timeout-ms N] [--auto-extend] [--store URL --resource R --value V]
//! ```
//!
//! It acquires `NAME` (with auto-extension if asked), prints
//! `ACQUIRED token=T start_us=S validity_us=V pid=P`, then obeys stdin, one command a line:
//! `WRITE` writes the value to the fenced store (with its fencing token) and to the unfenced
//! one, and prints `WROTE fenced=accepted|rejected unfenced=written lost=BOOL end_us=E`
//! (`lost` is the binding's own lost flag, read before the writes); `RELEASE` prints
//! `RELEASED result=ok|<error kind> end_us=E` and exits. End of stdin exits. A failed
//! acquire prints `ERROR kind=K message=...` and exits with 2.

use std::thread::sleep;
use std::time::{Duration, Instant};

use fencelock_testkit::{servers, RedisServer, Reply};

use crate::history::{check, Hold, Verdict, Violation};
use crate::mixed::Launcher;
use crate::store::{fenced_write_sha1, FencedStore, UnfencedStore};
use crate::urls;
use crate::worker::{field, num};

/// The lock both holders take.
const NAME: &str = "job";
/// The resource they write in the stores.
const RESOURCE: &str = "report";
const TTL_MS: u64 = 1000;
const SERVERS: usize = 5;
/// Bound of every step that is expected to happen (starting an interpreter included).
const STEP: Duration = Duration::from_secs(10);

/// What a run of [`a_paused_holder_is_fenced_off`] saw, for the test's report.
#[derive(Debug, Clone)]
pub struct PausedRun {
    /// From A's SIGSTOP until its key was gone from a majority of the servers.
    pub expired_after: Duration,
    /// The whole scenario, servers started and stopped included.
    pub took: Duration,
    /// The history checker's verdict over both holds (exactly one violation: A held past
    /// its validity).
    pub verdict: Verdict,
    /// What the two holders said (`ACQUIRED`, `WROTE`, `RELEASED` lines) in the order they
    /// said it, prefixed `A:`/`B:`.
    pub lines: Vec<String>,
}

/// The worker arguments of a `hold` with auto-extension that writes `value` to the stores.
fn hold_args(servers: &[String], store: &str, value: &str) -> Vec<String> {
    [
        "hold",
        "--servers",
        &servers.join(","),
        "--name",
        NAME,
        "--ttl-ms",
        &TTL_MS.to_string(),
        "--server-timeout-ms",
        "100",
        "--auto-extend",
        "--wait-ms",
        "10000",
        "--store",
        store,
        "--resource",
        RESOURCE,
        "--value",
        value,
    ]
    .map(String::from)
    .to_vec()
}

/// Holder A (`a`'s language) acquires with auto-extension and is frozen with SIGSTOP; once
/// its key is gone from a majority of the five servers (polled, not slept on), holder B
/// (`b`'s language) acquires with a larger fencing token and writes (accepted). A is given
/// `WRITE` and resumed: it reports its lock lost, its fenced write rejected and its unfenced
/// write done; the fenced store keeps B's value, the unfenced one has A's; B releases
/// cleanly; the history checker blames A, and only A, for holding past its validity.
/// Panics (with what the workers said) if any of that does not happen.
pub fn a_paused_holder_is_fenced_off(a: &Launcher, b: &Launcher) -> PausedRun {
    let started = Instant::now();
    let srv = servers(SERVERS);
    let store = RedisServer::start();
    let urls = urls(&srv);
    let who_a = format!("paused {} holder A", a.language);
    let who_b = format!("{} holder B", b.language);

    let mut wa = a.spawn(&hold_args(&urls, &store.url(), "from-A"));
    let a_got = wa.expect("ACQUIRED", STEP);
    assert_eq!(
        num(&a_got, "pid"),
        u64::from(wa.pid()),
        "{who_a} is the process that gets paused: {a_got}"
    );
    wa.stop(); // its auto-extension stops with it
    let paused = Instant::now();
    // Deterministic, not sleep-and-hope: wait until A's key is gone from a majority.
    let deadline = paused + STEP;
    while srv
        .iter()
        .filter(|s| s.get(NAME.as_bytes()).is_some())
        .count()
        > SERVERS / 2
    {
        assert!(
            Instant::now() < deadline,
            "{who_a}'s lock still on a majority {STEP:?} after the pause"
        );
        sleep(Duration::from_millis(10));
    }
    let expired_after = paused.elapsed();

    let mut wb = b.spawn(&hold_args(&urls, &store.url(), "from-B"));
    let b_got = wb.expect("ACQUIRED", STEP);
    assert!(
        num(&b_got, "token") > num(&a_got, "token"),
        "{who_b}'s fencing token is larger: {b_got} / {a_got}"
    );
    wb.send("WRITE");
    let b_wrote = wb.expect("WROTE", STEP);
    assert_eq!(field(&b_wrote, "fenced"), Some("accepted"), "{b_wrote}");
    assert_eq!(field(&b_wrote, "lost"), Some("false"), "{b_wrote}");

    // A wakes up and carries on with the write it was about to do.
    wa.send("WRITE");
    wa.cont();
    let a_wrote = wa.expect("WROTE", STEP);
    assert_eq!(
        field(&a_wrote, "lost"),
        Some("true"),
        "{who_a}'s lock knows it is lost: {a_wrote}"
    );
    assert_eq!(
        field(&a_wrote, "fenced"),
        Some("rejected"),
        "the fenced store rejects {who_a}'s stale token: {a_wrote}"
    );
    assert_eq!(field(&a_wrote, "unfenced"), Some("written"), "{a_wrote}");
    assert_eq!(
        FencedStore::new(&store.url())
            .read(RESOURCE)
            .unwrap()
            .as_deref(),
        Some("from-B"),
        "fenced: the newer holder's data survives"
    );
    assert_eq!(
        UnfencedStore::new(&store.url())
            .read(RESOURCE)
            .unwrap()
            .as_deref(),
        Some("from-A"),
        "unfenced: the paused holder overwrote the newer holder's data"
    );
    // Both holders ran exactly the store's check-and-set, and no other script.
    let sha = fenced_write_sha1();
    assert_eq!(
        store.cmd(&[b"SCRIPT", b"EXISTS", sha.as_bytes()]),
        Reply::Array(Some(vec![Reply::Int(1)])),
        "the store ran FENCED_WRITE (sha1 {sha}) byte for byte"
    );
    let memory = match store.cmd(&[b"INFO", b"memory"]) {
        Reply::Bulk(Some(v)) => String::from_utf8_lossy(&v).into_owned(),
        other => panic!("unexpected INFO reply {other:?}"),
    };
    assert!(
        memory
            .lines()
            .any(|l| l.trim() == "number_of_cached_scripts:1"),
        "the store ran one script only:\n{memory}"
    );

    wb.send("RELEASE");
    let b_released = wb.expect("RELEASED", STEP);
    assert_eq!(field(&b_released, "result"), Some("ok"), "{b_released}");

    let hold = |line: &str, end_us: u64, who: &str| Hold {
        name: NAME.into(),
        fencing_token: num(line, "token"),
        start_us: num(line, "start_us"),
        end_us,
        validity_us: num(line, "validity_us"),
        holder: who.into(),
        kind: Default::default(),
    };
    let verdict = check(&[
        hold(&a_got, num(&a_wrote, "end_us"), &who_a),
        hold(&b_got, num(&b_released, "end_us"), &who_b),
    ]);
    assert_eq!(verdict.violations.len(), 1, "{verdict}");
    assert!(
        matches!(&verdict.violations[0], Violation::HeldPastValidity { hold, .. } if hold.holder == who_a),
        "the checker blames the paused holder, and only it: {verdict}"
    );
    drop((wa, wb, store, srv));
    PausedRun {
        expired_after,
        took: started.elapsed(),
        verdict,
        lines: [
            ("A", &a_got),
            ("B", &b_got),
            ("B", &b_wrote),
            ("A", &a_wrote),
            ("B", &b_released),
        ]
        .map(|(w, l)| format!("{w}: {l}"))
        .to_vec(),
    }
}
