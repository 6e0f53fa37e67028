//! `fencelock run` with real children and real servers (issue 35 item 8): exit codes passed
//! through, the cron pattern, the environment, a lost lock ending the command's process group
//! behind `sh -c`, signals passed on, fencelock SIGKILLed, a Redlock with a server killed.

mod common;

use std::process::Output;
use std::time::Duration;

use common::{
    alive, cmd, code, finish, first_to_exit, gated_job, output, spawn, stderr, stdout, wait_file,
    Scratch,
};
use fencelock_testkit::{servers, wait_until};

const HANG: Duration = Duration::from_secs(30);

#[test]
fn the_commands_exit_code_is_fencelocks() {
    let s = servers(1);
    for (script, want) in [
        ("exit 0", 0),
        ("exit 1", 1),
        ("exit 42", 42),
        ("kill -9 $$", 128 + 9),
        ("kill -TERM $$", 128 + 15),
    ] {
        let out = output(cmd(&[&s[0]], &["run", "codes", "--", "sh", "-c", script]));
        assert_eq!(code(&out), want, "{script}: {}", stderr(&out));
    }
    // Released every time: the name is free.
    let status = output(cmd(&[&s[0]], &["status", "codes"]));
    assert_eq!(code(&status), 1, "{}", stderr(&status));
    // A command that cannot run: 127 not found, 126 not executable; the lock released.
    let out = output(cmd(&[&s[0]], &["run", "codes", "--", "/no/such/command"]));
    assert_eq!(code(&out), 127, "{}", stderr(&out));
    let dir = Scratch::new("codes");
    std::fs::write(dir.path("not-executable"), b"echo hi\n").unwrap();
    let out = output(cmd(
        &[&s[0]],
        &["run", "codes", "--", &dir.p("not-executable")],
    ));
    assert_eq!(code(&out), 126, "{}", stderr(&out));
    assert_eq!(code(&output(cmd(&[&s[0]], &["status", "codes"]))), 1);
}

/// Two hosts' cron entries start the same job at once: exactly one runs it, the other exits
/// 75 (or the code asked for).
#[test]
fn the_cron_pattern_runs_the_job_once() {
    let s = servers(1);
    let dir = Scratch::new("cron");
    let job = gated_job(&dir);
    let start = |extra: &[&str]| {
        let mut args = vec!["run", "nightly", "--no-wait"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", &job]);
        spawn(cmd(&[&s[0]], &args))
    };
    let mut both = vec![start(&[]), start(&["--conflict-exit-code", "3"])];
    wait_file(&dir.path("runs"), HANG);
    // The one that did not get the lock exits on its own while the job still runs.
    let loser = first_to_exit(&mut both, HANG);
    std::fs::write(dir.path("go"), b"").unwrap();
    let winner = finish(both.remove(0), HANG);
    let lines = std::fs::read_to_string(dir.path("runs")).unwrap();
    assert_eq!(lines.lines().count(), 1, "the job ran once: {lines}");
    assert!([75, 3].contains(&code(&loser)), "{}", stderr(&loser));
    assert!(stderr(&loser).contains("nightly"), "{}", stderr(&loser));
    assert_eq!(code(&winner), 0, "{}", stderr(&winner));
}

/// Issue 57 item 5: a refusal names what holds the name: the holder's label, since when and
/// its fencing token (it was taken with `--holder`), and the time left.
#[test]
fn a_refusal_names_the_holders_label_and_the_time_left() {
    let s = servers(1);
    let held = output(cmd(
        &[&s[0]],
        &[
            "acquire",
            "labelled",
            "--ttl",
            "60s",
            "--holder",
            "backup on db-3",
        ],
    ));
    assert_eq!(code(&held), 0, "{}", stderr(&held));
    let out = output(cmd(
        &[&s[0]],
        &["run", "labelled", "--no-wait", "--", "true"],
    ));
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("held by backup on db-3 for"), "{err}");
    assert!(err.contains("fencing token"), "{err}");
    assert!(err.contains("s left"), "{err}");
    assert!(err.trim_end().ends_with("not acquired"), "{err}");
}

/// `-q`: a refusal says nothing (the exit code says it), as the cron recipe of docs/cli.md
/// promises: cron mails whatever a job prints. Without `-q` it is said.
#[test]
fn quiet_says_nothing_when_another_holds_the_name() {
    let s = servers(1);
    let holder = output(cmd(&[&s[0]], &["acquire", "busy-q", "--ttl", "60s"]));
    assert_eq!(code(&holder), 0, "{}", stderr(&holder));
    let quiet = output(cmd(
        &[&s[0]],
        &["run", "-q", "busy-q", "--no-wait", "--", "true"],
    ));
    assert_eq!(code(&quiet), 75, "{}", stderr(&quiet));
    assert_eq!(stderr(&quiet), "", "-q printed something");
    let loud = output(cmd(&[&s[0]], &["run", "busy-q", "--no-wait", "--", "true"]));
    assert_eq!(code(&loud), 75);
    assert!(stderr(&loud).contains("not acquired"), "{}", stderr(&loud));
}

/// A negative duration is our own usage error (64), naming the value, before anything runs;
/// clap used to answer it with a tip to write `-- -5s`, which here starts the command.
#[test]
fn a_negative_duration_is_a_usage_error_of_ours() {
    let s = servers(1);
    let dir = Scratch::new("negative");
    let marker = dir.p("ran");
    for flag in ["--ttl", "--wait"] {
        let args = ["run", "neg", flag, "-5s", "--", "touch", &marker];
        let out = output(cmd(&[&s[0]], &args));
        assert_eq!(code(&out), 64, "{flag}: {}", stderr(&out));
        assert!(
            stderr(&out).contains("a duration cannot be negative"),
            "{flag}: {}",
            stderr(&out)
        );
        assert!(!dir.path("ran").exists(), "{flag}: the command ran");
    }
}

/// Issue 57 item 3: a wait on servers that do not answer is not silent (stderr is a pipe here,
/// not a terminal): the core's warning names the server and why, every few seconds; `-q`
/// keeps it quiet.
#[test]
fn a_wait_on_a_server_that_does_not_answer_says_so_unless_quiet() {
    let port = fencelock_testkit::free_port();
    let url = format!("redis://127.0.0.1:{port}");
    let args = |quiet: bool| {
        // Refusals waited through (0), as for a server that does not answer.
        let mut a = vec![
            "run",
            "nobody-home",
            "--server",
            &url,
            "--wait",
            "4s",
            "--refused-attempts",
            "0",
        ];
        if quiet {
            a.push("-q");
        }
        a.extend(["--", "true"]);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |quiet: bool| {
        let mut c = std::process::Command::new(common::BIN);
        c.args(args(quiet)).env_remove("FENCELOCK_SERVERS");
        output(c)
    };
    let loud = run(false);
    assert_eq!(code(&loud), 69, "{}", stderr(&loud));
    assert!(
        stderr(&loud).contains("warning: acquire still waiting"),
        "{}",
        stderr(&loud)
    );
    assert!(stderr(&loud).contains(&format!("127.0.0.1:{port}")));
    let quiet = run(true);
    assert_eq!(code(&quiet), 69);
    assert!(
        !stderr(&quiet).contains("still waiting"),
        "{}",
        stderr(&quiet)
    );
}

/// Issue 57 item 3: a wait without limit on an address nobody listens at gives up (exit 69)
/// after `--refused-attempts` (10 by default), saying so.
#[test]
fn a_wait_on_an_address_nobody_listens_at_gives_up() {
    let url = format!("redis://127.0.0.1:{}", fencelock_testkit::free_port());
    for (extra, times) in [(None, 10), (Some("3"), 3)] {
        let mut c = std::process::Command::new(common::BIN);
        // A wait limit far past the bound: a regression fails instead of hanging.
        c.args([
            "run",
            "nobody-listens",
            "--server",
            &url,
            "-q",
            "--wait",
            "60s",
        ])
        .env_remove("FENCELOCK_SERVERS");
        if let Some(n) = extra {
            c.args(["--refused-attempts", n]);
        }
        c.args(["--", "true"]);
        let out = output(c);
        assert_eq!(code(&out), 69, "{}", stderr(&out));
        let want = format!("refused the connection on {times} attempts in a row");
        assert!(stderr(&out).contains(&want), "{}", stderr(&out));
    }
}

/// Issue 57 item 4: `--max-hold` ends the hold there (with the default 30 s TTL, longer than
/// it): the command's group is stopped, fencelock exits with the lost code and says
/// `--max-hold`. It used to run the whole command and exit 0.
#[test]
fn max_hold_ends_the_hold_and_the_command_at_max_hold() {
    let s = servers(1);
    let started = std::time::Instant::now();
    let out = output(cmd(
        &[&s[0]],
        &[
            "run",
            "bounded-short",
            "--max-hold",
            "1s",
            "--",
            "sleep",
            "20",
        ],
    ));
    let took = started.elapsed();
    assert_eq!(code(&out), 76, "{}", stderr(&out));
    assert!(stderr(&out).contains("--max-hold 1s"), "{}", stderr(&out));
    // A hang check: the command sleeps 20 s.
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(
        s[0].get(b"bounded-short"),
        None,
        "the lock outlived --max-hold"
    );
}

#[test]
fn the_command_gets_the_name_and_tokens_and_can_extend_by_token() {
    let s = servers(1);
    let dir = Scratch::new("env");
    let script = format!(
        "echo \"$FENCELOCK_NAME $FENCELOCK_FENCING_TOKEN $FENCELOCK_TOKEN\" > {env}; \
         {bin} extend --server {url} \"$FENCELOCK_NAME\" --ttl 60s",
        env = dir.p("env"),
        bin = common::BIN,
        url = s[0].url(),
    );
    let first = output(cmd(&[&s[0]], &["run", "report", "--", "true"]));
    assert_eq!(code(&first), 0);
    let out = output(cmd(&[&s[0]], &["run", "report", "--", "sh", "-c", &script]));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let env = std::fs::read_to_string(dir.path("env")).unwrap();
    let fields: Vec<&str> = env.split_whitespace().collect();
    assert_eq!(fields[0], "report");
    assert!(
        fields[1].parse::<u64>().unwrap() >= 2,
        "a fencing token: {env}"
    );
    assert!(fields[2].len() >= 16, "a token: {env}");
}

/// The lock deleted by hand while the command runs behind `sh -c`: the whole process group
/// is stopped, stderr says why, the exit code says "lost".
#[test]
fn a_lost_lock_stops_the_commands_process_group() {
    let s = servers(1);
    let dir = Scratch::new("lost");
    // The real work is a grandchild (behind the shell), and it ignores SIGTERM: only the
    // group's SIGKILL, --kill-after later, ends it.
    let script = format!(
        "trap '' TERM; sleep 1000 & echo $! > {pid}; wait",
        pid = dir.p("pid")
    );
    let run = spawn(cmd(
        &[&s[0]],
        &[
            "run",
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
    wait_file(&dir.path("pid"), HANG);
    let pid: i32 = std::fs::read_to_string(dir.path("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(alive(pid));
    let lost_at = std::time::Instant::now();
    assert_eq!(s[0].del(b"jobs"), 1);
    let out = finish(run, HANG);
    assert_eq!(code(&out), 76, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("lost the lock jobs"), "{err}");
    assert!(
        lost_at.elapsed() >= Duration::from_secs(1),
        "SIGKILL only after --kill-after"
    );
    wait_until(HANG, "the grandchild to be gone", || !alive(pid));
}

/// Signals sent to fencelock reach the command's group; the command's exit is fencelock's and
/// the lock is released.
#[test]
fn signals_are_passed_to_the_command() {
    let s = servers(1);
    let dir = Scratch::new("signals");
    let script = format!(
        "trap 'exit 9' USR1; echo up > {up}; while :; do sleep 0.05; done",
        up = dir.p("up")
    );
    let run = spawn(cmd(&[&s[0]], &["run", "sig", "--", "sh", "-c", &script]));
    wait_file(&dir.path("up"), HANG);
    // SAFETY: kill(2) of the fencelock this test started.
    unsafe { libc::kill(run.id() as i32, libc::SIGUSR1) };
    let out = finish(run, HANG);
    assert_eq!(code(&out), 9, "{}", stderr(&out));
    assert_eq!(
        code(&output(cmd(&[&s[0]], &["status", "sig"]))),
        1,
        "released"
    );
}

/// A signal while waiting stops the wait (128 + the signal), and fencelock gives its place in
/// line back before it exits: the line is empty at once, not when the place expires.
#[test]
fn a_signal_stops_the_wait_and_gives_the_place_back() {
    let s = servers(1);
    let held = output(cmd(&[&s[0]], &["acquire", "line", "--ttl", "10m"]));
    assert_eq!(code(&held), 0, "{}", stderr(&held));
    let waiters = || {
        let out = output(cmd(&[&s[0]], &["status", "line", "--json"]));
        let st: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
        st["waiters"].as_u64().unwrap()
    };
    let run = spawn(cmd(&[&s[0]], &["run", "line", "--", "true"]));
    wait_until(HANG, "fencelock to take its place in line", || {
        waiters() == 1
    });
    // SAFETY: kill(2) of the fencelock this test started.
    unsafe { libc::kill(run.id() as i32, libc::SIGINT) };
    let out = finish(run, HANG);
    assert_eq!(code(&out), 128 + 2, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("stopped by SIGINT while waiting for line"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        waiters(),
        0,
        "the place was given back before fencelock exited"
    );
}

/// fencelock SIGKILLed: the command is told (its parent-death signal, SIGTERM) and the lock
/// expires after its TTL.
#[test]
fn a_killed_fencelock_tells_its_command_and_the_lock_expires() {
    let s = servers(1);
    let dir = Scratch::new("killed");
    let script = format!(
        "trap 'echo told > {told}; exit 0' TERM; echo up > {up}; while :; do sleep 0.05; done",
        told = dir.p("told"),
        up = dir.p("up")
    );
    let mut run = spawn(cmd(
        &[&s[0]],
        &["run", "orphan", "--ttl", "2s", "--", "sh", "-c", &script],
    ));
    wait_file(&dir.path("up"), HANG);
    run.kill().unwrap();
    run.wait().unwrap();
    wait_file(&dir.path("told"), HANG);
    assert_eq!(
        code(&output(cmd(&[&s[0]], &["status", "orphan"]))),
        0,
        "still held"
    );
    wait_until(HANG, "the lock to expire", || {
        code(&output(cmd(&[&s[0]], &["status", "orphan"]))) == 1
    });
}

/// A Redlock of three: one server killed while the command runs changes nothing.
#[test]
fn a_redlock_keeps_its_lock_with_one_of_three_servers_killed() {
    let mut s = servers(3);
    let dir = Scratch::new("redlock");
    let script = format!(
        "echo up > {up}; while [ ! -e {go} ]; do sleep 0.02; done",
        up = dir.p("up"),
        go = dir.p("go")
    );
    let run = spawn(cmd(
        &[&s[0], &s[1], &s[2]],
        &["run", "red", "--ttl", "1s", "--", "sh", "-c", &script],
    ));
    wait_file(&dir.path("up"), HANG);
    s[2].kill();
    // Several extensions (every ttl/3) with one server gone.
    let other = output(cmd(&[&s[0], &s[1]], &["status", "red"]));
    assert_eq!(code(&other), 0, "{}", stderr(&other));
    std::thread::sleep(Duration::from_millis(1500));
    let still = output(cmd(&[&s[0], &s[1]], &["status", "red"]));
    assert_eq!(code(&still), 0, "held past its TTL: {}", stderr(&still));
    std::fs::write(dir.path("go"), b"").unwrap();
    let out = finish(run, HANG);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// `--max-hold`: the lock is kept at most that long, then lost like any other, and the
/// command stopped.
#[test]
fn max_hold_ends_a_command_that_runs_too_long() {
    let s = servers(1);
    let started = std::time::Instant::now();
    let out = output(cmd(
        &[&s[0]],
        &[
            "run",
            "bounded",
            "--ttl",
            "600ms",
            "--max-hold",
            "1500ms",
            "--kill-after",
            "500ms",
            "--",
            "sleep",
            "1000",
        ],
    ));
    assert_eq!(code(&out), 76, "{}", stderr(&out));
    assert!(
        stderr(&out).contains("held the lock bounded for --max-hold 1.5s"),
        "{}",
        stderr(&out)
    );
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "not before --max-hold"
    );
    assert!(started.elapsed() < HANG);
}

/// A signal ignored when fencelock starts (`nohup` ignores HUP) stays ignored for the command;
/// the others are passed on (the command's SIGINT is its default).
#[test]
fn an_ignored_signal_stays_ignored_for_the_command() {
    use std::os::unix::process::CommandExt as _;
    let s = servers(1);
    let dir = Scratch::new("nohup");
    let script = format!("grep SigIgn /proc/$$/status > {}", dir.p("ign"));
    let mut c = cmd(&[&s[0]], &["run", "nohup", "--", "sh", "-c", &script]);
    // SAFETY: signal(2) in the child before exec, as nohup does.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGHUP, libc::SIG_IGN);
            Ok(())
        });
    }
    let out = output(c);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = std::fs::read_to_string(dir.path("ign")).unwrap();
    let mask = u64::from_str_radix(line.split_whitespace().nth(1).unwrap(), 16).unwrap();
    assert_ne!(mask & (1 << (libc::SIGHUP - 1)), 0, "HUP ignored: {line}");
    assert_eq!(
        mask & (1 << (libc::SIGUSR1 - 1)),
        0,
        "USR1 not ignored: {line}"
    );
}

/// `run --json`: fencelock's own lines on stderr are JSON objects, the first saying it was
/// acquired, the last how it ended; the command's output is its own and the token is never
/// among fencelock's lines.
#[test]
fn run_json_says_how_each_run_ended() {
    let s = servers(1);
    let events = |out: &Output| -> Vec<serde_json::Value> {
        stderr(out)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect()
    };
    let run = |args: &[&str]| {
        let mut all = vec!["run", "report", "--json"];
        all.extend_from_slice(args);
        output(cmd(&[&s[0]], &all))
    };
    let out = run(&["--", "sh", "-c", "echo \"$FENCELOCK_TOKEN\"; exit 3"]);
    assert_eq!(code(&out), 3, "{}", stderr(&out));
    let token = stdout(&out).trim().to_string();
    assert!(token.len() >= 16, "{token:?}");
    assert!(!stderr(&out).contains(&token), "the token on stderr");
    let ev = events(&out);
    let acquired = &ev[0];
    assert_eq!(
        (
            acquired["event"].as_str(),
            acquired["name"].as_str(),
            acquired["kind"].as_str()
        ),
        (Some("acquired"), Some("report"), Some("lock"))
    );
    assert!(
        acquired["fencing_token"].as_u64().unwrap() >= 1,
        "{acquired}"
    );
    assert_eq!(
        ev.last().unwrap(),
        &serde_json::json!({"event": "exit", "exit_code": 3, "outcome": "completed",
                            "command_exit_code": 3})
    );

    let out = run(&["--", "sh", "-c", "kill -9 $$"]);
    assert_eq!(code(&out), 128 + 9, "{}", stderr(&out));
    assert_eq!(events(&out).last().unwrap()["command_signal"], 9);

    let held = output(cmd(&[&s[0]], &["acquire", "report", "--ttl", "10m"]));
    let out = run(&["--no-wait", "--", "true"]);
    assert_eq!(code(&out), 75, "{}", stderr(&out));
    let last = events(&out).pop().unwrap();
    assert_eq!(
        (
            last["event"].as_str(),
            last["outcome"].as_str(),
            last["exit_code"].as_u64()
        ),
        (Some("exit"), Some("not_acquired"), Some(75))
    );
    assert!(
        last["message"].as_str().unwrap().contains("report"),
        "{last}"
    );
    let held = stdout(&held);
    let release = ["release", "report", "--token", held.trim()];
    assert_eq!(code(&output(cmd(&[&s[0]], &release))), 0);

    // Lost (--max-hold): a `lost` line with the reason, then the command's SIGTERM.
    let out = run(&["--ttl", "1s", "--max-hold", "300ms", "--", "sleep", "30"]);
    assert_eq!(code(&out), 76, "{}", stderr(&out));
    let ev = events(&out);
    let lost = ev
        .iter()
        .find(|e| e["event"] == "lost")
        .expect("a lost line");
    assert_eq!(
        (lost["name"].as_str(), lost["reason"].as_str()),
        (Some("report"), Some("max_hold"))
    );
    assert_eq!(
        ev.last().unwrap(),
        &serde_json::json!({"event": "exit", "exit_code": 76, "outcome": "lost",
                            "command_signal": 15})
    );
}
