//! `fencelock elect NAME -- CMD` and `fencelock leader NAME` (issue 54 item 4) with real
//! children and a real server: the command runs only while leading, gets the term number,
//! the second candidate takes over when the first's command exits, a deposed leader's command
//! is stopped, and `leader` shows (and with --watch follows) who leads.

mod common;

use std::time::Duration;

use common::{cmd, code, finish, output, spawn, stderr, stdout, wait_file, Scratch};
use fencelock_testkit::{servers, wait_until};

const HANG: Duration = Duration::from_secs(30);

#[test]
fn candidates_run_their_command_one_at_a_time_and_leader_shows_who() {
    let s = servers(1);
    let dir = Scratch::new("elect");
    let none = output(cmd(&[&s[0]], &["leader", "sched"]));
    assert_eq!(code(&none), 1, "{}", stderr(&none));
    assert_eq!(stdout(&none).trim(), "nobody leads sched");
    // The first leads until its command sees `stop`; the second waits in line meanwhile.
    let job = |who: &str| {
        format!(
            "echo $FENCELOCK_FENCING_TOKEN > {term}; while [ ! -e {stop} ]; do sleep 0.02; done",
            term = dir.p(&format!("{who}.term")),
            stop = dir.p(&format!("{who}.stop")),
        )
    };
    let a_job = job("a");
    let a = spawn(cmd(
        &[&s[0]],
        &[
            "elect", "sched", "--value", "host-a", "--", "sh", "-c", &a_job,
        ],
    ));
    wait_file(&dir.path("a.term"), HANG);
    let b_job = job("b");
    let b = spawn(cmd(
        &[&s[0]],
        &[
            "elect", "sched", "--value", "host-b", "--", "sh", "-c", &b_job,
        ],
    ));
    let shown = output(cmd(&[&s[0]], &["leader", "sched", "--json"]));
    assert_eq!(code(&shown), 0, "{}", stderr(&shown));
    let json: serde_json::Value = serde_json::from_str(stdout(&shown).trim()).unwrap();
    let a_term: u64 = std::fs::read_to_string(dir.path("a.term"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(json["value"], "host-a");
    assert_eq!(
        json["fencing_token"], a_term,
        "FENCELOCK_FENCING_TOKEN is the term"
    );
    assert!(!dir.path("b.term").exists(), "one leader at a time");

    let mut watch = cmd(&[&s[0]], &["leader", "sched", "--watch", "--json"]);
    watch.stdout(std::process::Stdio::piped());
    let mut watch = watch.spawn().unwrap();
    let values = follow(watch.stdout.take().unwrap());
    let seen = |want: &'static str| {
        let values = std::sync::Arc::clone(&values);
        move || values.lock().unwrap().last().map(String::as_str) == Some(want)
    };
    wait_until(HANG, "the watcher to show host-a", seen("host-a"));
    std::fs::write(dir.path("a.stop"), b"").unwrap();
    let out = finish(a, HANG);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    wait_file(&dir.path("b.term"), HANG);
    let b_term: u64 = std::fs::read_to_string(dir.path("b.term"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(b_term > a_term, "terms grow");
    std::fs::write(dir.path("b.stop"), b"").unwrap();
    assert_eq!(code(&finish(b, HANG)), 0);
    let none = output(cmd(&[&s[0]], &["leader", "sched"]));
    assert_eq!(code(&none), 1, "{}", stdout(&none));

    // The watcher saw a, then b (maybe nobody between), then nobody ("-").
    wait_until(HANG, "the watcher to show nobody", seen("-"));
    // SAFETY: kill(2) of the process this test started.
    unsafe { libc::kill(watch.id() as i32, libc::SIGTERM) };
    assert_eq!(code(&finish(watch, HANG)), 0, "a signal ends --watch");
    let values = values.lock().unwrap().clone();
    assert_eq!(
        values.first().map(String::as_str),
        Some("host-a"),
        "{values:?}"
    );
    assert!(values.contains(&"host-b".to_owned()), "{values:?}");
}

/// The values of `--watch --json`'s lines as they come ("-" for nobody).
fn follow(out: std::process::ChildStdout) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use std::io::BufRead as _;
    let values = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = std::sync::Arc::clone(&values);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            let value = v["value"].as_str().unwrap_or("-").to_owned();
            into.lock().unwrap().push(value);
        }
    });
    values
}

#[test]
fn a_deposed_leaders_command_is_stopped_and_kinds_are_checked() {
    let s = servers(1);
    let dir = Scratch::new("deposed");
    let script = format!("echo up > {up}; sleep 1000", up = dir.p("up"));
    let run = spawn(cmd(
        &[&s[0]],
        &[
            "elect",
            "jobs",
            "--ttl",
            "1500ms",
            "--kill-after",
            "1s",
            "--",
            "sh",
            "-c",
            &script,
        ],
    ));
    wait_file(&dir.path("up"), HANG);
    assert_eq!(s[0].del(b"jobs"), 1);
    let out = finish(run, HANG);
    assert_eq!(code(&out), 76, "{}", stderr(&out));
    let bad = output(cmd(&[&s[0]], &["elect", "jobs", "--shared", "--", "true"]));
    assert_eq!(code(&bad), 64);
    assert!(
        stderr(&bad).contains("an election's term is a lock"),
        "{}",
        stderr(&bad)
    );
}
