//! `fencelock acquire`, `release`, `extend` and `status`, the kinds (`--semaphore`,
//! `--shared`, `--exclusive`), bad usage, and secrets (issue 35 items 4, 5 and 8).

mod common;

use std::time::Duration;

use common::{
    cmd, code, finish, first_to_exit, gated_job, output, spawn, stderr, stdout, wait_file, Scratch,
};
use fencelock_testkit::{free_port, servers, RedisServer};

const HANG: Duration = Duration::from_secs(30);

#[test]
fn acquire_status_extend_and_release_by_token() {
    let s = servers(1);
    let out = output(cmd(
        &[&s[0]],
        &["acquire", "deploy", "--ttl", "10m", "--print", "json"],
    ));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let token = got["token"].as_str().unwrap().to_string();
    assert!(got["fencing_token"].as_u64().unwrap() >= 1);
    assert_eq!(got["ttl_ms"], 600_000);
    // Held after fencelock exited.
    let status = output(cmd(&[&s[0]], &["status", "deploy", "--json"]));
    assert_eq!(code(&status), 0, "{}", stderr(&status));
    let st: serde_json::Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert_eq!(
        (st["held"].as_bool(), st["kind"].as_str()),
        (Some(true), Some("lock"))
    );
    assert!(st["remaining_ms"].as_u64().unwrap() > 500_000, "{st}");
    assert_eq!(st["waiters"], 0, "{st}");
    // Someone else: not acquired, exit 75 at once with --no-wait.
    let other = output(cmd(&[&s[0]], &["acquire", "deploy", "--no-wait"]));
    assert_eq!(code(&other), 75, "{}", stderr(&other));
    let extend = output(cmd(
        &[&s[0]],
        &["extend", "deploy", "--token", &token, "--ttl", "20m"],
    ));
    assert_eq!(code(&extend), 0, "{}", stderr(&extend));
    assert!(s[0].pttl(b"deploy") > 1_000_000);
    let wrong = output(cmd(
        &[&s[0]],
        &["release", "deploy", "--token", "not-the-token-0000"],
    ));
    assert_eq!(code(&wrong), 1, "{}", stderr(&wrong));
    let release = output(cmd(&[&s[0]], &["release", "deploy", "--token", &token]));
    assert_eq!(code(&release), 0, "{}", stderr(&release));
    let free = output(cmd(&[&s[0]], &["status", "deploy"]));
    assert_eq!(
        (code(&free), stdout(&free).trim()),
        (1, "deploy: free, 0 waiting")
    );
    let again = output(cmd(&[&s[0]], &["release", "deploy", "--token", &token]));
    assert_eq!(code(&again), 1, "not held any more: {}", stderr(&again));
    let printed = output(cmd(
        &[&s[0]],
        &["acquire", "deploy", "--print", "fencing-token"],
    ));
    let fencing: u64 = stdout(&printed).trim().parse().unwrap();
    assert!(fencing > got["fencing_token"].as_u64().unwrap());
}

#[test]
fn a_semaphore_runs_at_most_n_commands_and_a_writer_excludes_readers() {
    let s = servers(1);
    let dir = Scratch::new("kinds");
    let job = gated_job(&dir);
    let args = [
        "run",
        "pool",
        "--semaphore",
        "2",
        "--no-wait",
        "--",
        "sh",
        "-c",
        &job,
    ];
    let mut runs: Vec<_> = (0..3).map(|_| spawn(cmd(&[&s[0]], &args))).collect();
    let refused = first_to_exit(&mut runs, HANG);
    assert_eq!(code(&refused), 75, "{}", stderr(&refused));
    let st = output(cmd(
        &[&s[0]],
        &["status", "pool", "--semaphore", "2", "--json"],
    ));
    let st: serde_json::Value = serde_json::from_str(&stdout(&st)).unwrap();
    assert_eq!(
        (st["permits_held"].as_u64(), st["limit"].as_u64()),
        (Some(2), Some(2))
    );
    // Issue 57 item 4: `status` finds the kind on its own, with the limit the servers keep,
    // and a --semaphore whose limit is not theirs is an error naming both.
    let found = output(cmd(&[&s[0]], &["status", "pool", "--json"]));
    assert_eq!(code(&found), 0, "{}", stderr(&found));
    let found: serde_json::Value = serde_json::from_str(&stdout(&found)).unwrap();
    assert_eq!(
        (found["permits_held"].as_u64(), found["limit"].as_u64()),
        (Some(2), Some(2)),
        "{found}"
    );
    let wrong = output(cmd(&[&s[0]], &["status", "pool", "--semaphore", "5"]));
    assert_eq!(code(&wrong), 64, "{}", stderr(&wrong));
    assert!(
        stderr(&wrong).contains("--semaphore 5: the semaphore pool has limit 2 on the servers"),
        "{}",
        stderr(&wrong)
    );
    std::fs::write(dir.path("go"), b"").unwrap();
    for run in runs {
        assert_eq!(code(&finish(run, HANG)), 0);
    }
    wait_file(&dir.path("runs"), HANG);
    let lines = std::fs::read_to_string(dir.path("runs")).unwrap();
    assert_eq!(lines.lines().count(), 2, "{lines}");

    for _ in 0..2 {
        let r = output(cmd(
            &[&s[0]],
            &["acquire", "cache", "--shared", "--ttl", "1m"],
        ));
        assert_eq!(code(&r), 0, "{}", stderr(&r));
    }
    let w = output(cmd(
        &[&s[0]],
        &["acquire", "cache", "--exclusive", "--no-wait"],
    ));
    assert_eq!(code(&w), 75, "{}", stderr(&w));
    let st = output(cmd(&[&s[0]], &["status", "cache", "--shared"]));
    assert_eq!(code(&st), 0);
    assert!(stdout(&st).contains("held by 2 readers"), "{}", stdout(&st));
    // One name, one kind: the read-write lock is not a lock.
    let wrong = output(cmd(&[&s[0]], &["acquire", "cache", "--no-wait"]));
    assert_eq!(code(&wrong), 65, "{}", stderr(&wrong));
}

#[test]
fn bad_usage_is_64_and_configuration_78_before_any_server_is_asked() {
    let unreachable = format!("redis://127.0.0.1:{}", free_port());
    let run = |args: &[&str]| {
        let mut c = cmd(&[], args);
        c.env("FENCELOCK_SERVERS", &unreachable);
        output(c)
    };
    for (args, says) in [
        (&["run", "x", "--bogus", "--", "true"][..], "--bogus"),
        (&["run", "x", "--ttl", "10x", "--", "true"][..], "unit"),
        (&["run", "x"][..], "COMMAND"),
        (
            &["run", "x", "--wait", "1s", "--no-wait", "--", "true"][..],
            "cannot be used",
        ),
        (&["run", "x", "--semaphore", "0", "--", "true"][..], "limit"),
        (&["frobnicate"][..], "frobnicate"),
    ] {
        let out = run(args);
        assert_eq!(code(&out), 64, "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
    let none = output(cmd(&[], &["status", "x"]));
    assert_eq!(code(&none), 78, "{}", stderr(&none));
    assert!(
        stderr(&none).contains("FENCELOCK_SERVERS"),
        "{}",
        stderr(&none)
    );
    let bad_url = output(cmd(&[], &["status", "x", "--server", "http://nope"]));
    assert_eq!(code(&bad_url), 78, "{}", stderr(&bad_url));
    let down = run(&["run", "x", "--no-wait", "--", "true"]);
    assert_eq!(code(&down), 69, "{}", stderr(&down));
    let help = output(cmd(&[], &["run", "--help"]));
    assert_eq!(code(&help), 0);
    assert!(stdout(&help).contains("Examples:"));
    let version = output(cmd(&[], &["--version"]));
    assert_eq!(
        stdout(&version).trim(),
        format!("fencelock {}", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn a_password_never_shows_and_comes_from_the_environment_or_a_file() {
    let secured = RedisServer::start();
    let set = secured.cmd(&[b"CONFIG", b"SET", b"requirepass", b"right-pw-4417"]);
    assert_eq!(set, fencelock_testkit::Reply::Status("OK".into()));
    let dir = Scratch::new("secrets");
    let url = secured.url();
    // The right password from a file, or from FENCELOCK_PASSWORD: it works (the name is free).
    std::fs::write(dir.path("pw"), "right-pw-4417\n").unwrap();
    let from_file = output(cmd(
        &[],
        &[
            "status",
            "x",
            "--server",
            &url,
            "--password-file",
            &dir.p("pw"),
        ],
    ));
    assert_eq!(code(&from_file), 1, "{}", stderr(&from_file));
    let mut c = cmd(&[], &["status", "x", "--server", &url]);
    c.env("FENCELOCK_PASSWORD", "right-pw-4417");
    assert_eq!(code(&output(c)), 1);
    // A wrong one, from each place: an error that never shows it.
    let mut c = cmd(
        &[],
        &["run", "x", "--no-wait", "--server", &url, "--", "true"],
    );
    c.env("FENCELOCK_PASSWORD", "wrong-pw-from-env");
    let out = output(c);
    assert_ne!(code(&out), 0);
    assert!(
        !stderr(&out).contains("wrong-pw-from-env"),
        "{}",
        stderr(&out)
    );
    let on_line = url.replacen("redis://", "redis://:wrong-pw-on-line@", 1);
    let out = output(cmd(
        &[],
        &["run", "x", "--no-wait", "--server", &on_line, "--", "true"],
    ));
    let err = stderr(&out);
    assert_ne!(code(&out), 0);
    assert!(
        err.contains("warning: a password in a --server URL"),
        "{err}"
    );
    assert!(!err.contains("wrong-pw-on-line"), "{err}");
    // The command's environment has no password either.
    let mut c = cmd(&[], &["run", "x", "--server", &url, "--", "env"]);
    c.env("FENCELOCK_PASSWORD", "right-pw-4417");
    let out = output(c);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains("FENCELOCK_FENCING_TOKEN="));
    let env = stdout(&out);
    let leaked: Vec<&str> = env
        .lines()
        .filter(|l| l.contains("right-pw-4417") && !l.starts_with("FENCELOCK_PASSWORD="))
        .collect();
    assert!(leaked.is_empty(), "{leaked:?}");
}

/// `fencelock man`: the pages come from the same definitions as `--help`.
#[test]
fn man_pages_are_rendered_from_the_help() {
    let top = output(cmd(&[], &["man"]));
    assert_eq!(code(&top), 0, "{}", stderr(&top));
    let page = stdout(&top);
    assert!(page.contains(".TH fencelock 1"), "{page}");
    assert!(page.contains("Exit codes"), "{page}");
    let run = stdout(&output(cmd(&[], &["man", "run"])));
    assert!(run.contains(".TH fencelock-run 1"), "{run}");
    assert!(run.contains("kill\\-after"), "{run}");
    assert!(run.contains("FENCELOCK_FENCING_TOKEN"), "{run}");
    let none = output(cmd(&[], &["man", "nope"]));
    assert_eq!(code(&none), 64, "{}", stderr(&none));
}

/// A person at a terminal (a pseudo-terminal made by script(1)) sees one updating line while
/// fencelock waits: the name and the holder's remaining TTL. Without a terminal, or with -q,
/// only the outcome.
#[test]
fn the_waiting_line_shows_on_a_terminal_only() {
    let s = servers(1);
    let held = output(cmd(&[&s[0]], &["acquire", "tty", "--ttl", "60s"]));
    assert_eq!(code(&held), 0, "{}", stderr(&held));
    let on_terminal = |quiet: &str| {
        let line = format!(
            "{} run tty {quiet} --wait 1200ms --server {} -- true",
            common::BIN,
            s[0].url()
        );
        let out = std::process::Command::new("script")
            .args(["-qec", &line, "/dev/null"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("script(1) runs");
        assert_eq!(out.status.code(), Some(75), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let seen = on_terminal("");
    assert!(
        seen.contains("\r\x1b[Kfencelock: waiting for tty (held, "),
        "{seen:?}"
    );
    assert!(seen.contains("not acquired"), "{seen:?}");
    // fencelock itself waits in line once its first attempt was refused.
    assert!(seen.contains("left, 1 waiting)"), "{seen:?}");
    let quiet = on_terminal("-q");
    assert!(!quiet.contains("waiting for"), "{quiet:?}");
    let plain = output(cmd(
        &[&s[0]],
        &["run", "tty", "--wait", "600ms", "--", "true"],
    ));
    assert_eq!(code(&plain), 75);
    assert!(
        !stderr(&plain).contains("waiting for"),
        "{}",
        stderr(&plain)
    );
}

#[test]
fn status_shows_who_holds_a_lock_taken_with_holder() {
    let s = servers(1);
    let out = output(cmd(
        &[&s[0]],
        &[
            "acquire",
            "deploy",
            "--ttl",
            "10m",
            "--holder",
            "deploy-bot (ci 1234)",
            "--print",
            "json",
        ],
    ));
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let got: serde_json::Value = serde_json::from_str(&stdout(&out)).unwrap();
    let status = output(cmd(&[&s[0]], &["status", "deploy", "--json"]));
    let st: serde_json::Value = serde_json::from_str(&stdout(&status)).unwrap();
    assert_eq!(st["holder"]["label"], "deploy-bot (ci 1234)", "{st}");
    assert_eq!(st["holder"]["fencing_token"], got["fencing_token"], "{st}");
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let since = st["holder"]["since_ms"].as_u64().unwrap();
    assert!(since <= now_ms && now_ms - since < 60_000, "{st}");
    let line = stdout(&output(cmd(&[&s[0]], &["status", "deploy"])));
    assert!(
        line.starts_with("deploy: held by deploy-bot (ci 1234) for "),
        "{line}"
    );
    assert!(
        line.contains(&format!("fencing token {}", got["fencing_token"])),
        "{line}"
    );
    // Without --holder: held, and no holder.
    let plain = output(cmd(&[&s[0]], &["acquire", "other", "--ttl", "10m"]));
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    let st = output(cmd(&[&s[0]], &["status", "other", "--json"]));
    let st: serde_json::Value = serde_json::from_str(&stdout(&st)).unwrap();
    assert_eq!(
        (st["held"].as_bool(), &st["holder"]),
        (Some(true), &serde_json::Value::Null)
    );
    // `run --holder` without a label: host:pid of the fencelock process running the command
    // (the child's parent).
    let script = format!(
        "\"{}\" status job --server {} --json; echo \"parent=$PPID\"",
        common::BIN,
        s[0].url()
    );
    let run = output(cmd(
        &[&s[0]],
        &["run", "job", "--holder", "--", "sh", "-c", &script],
    ));
    assert_eq!(code(&run), 0, "{}", stderr(&run));
    let text = stdout(&run);
    let (json, parent) = text.trim().rsplit_once('\n').unwrap();
    let st: serde_json::Value = serde_json::from_str(json).unwrap();
    let label = st["holder"]["label"].as_str().unwrap().to_string();
    assert!(
        label.ends_with(&format!(":{}", parent.trim_start_matches("parent="))),
        "{label} {parent}"
    );
    let bad = output(cmd(&[&s[0]], &["acquire", "x", "--holder", "two\nlines"]));
    assert_eq!(code(&bad), 78, "{}", stderr(&bad));
}

#[test]
fn status_lists_a_semaphores_noted_holders() {
    let s = servers(1);
    for label in ["render-a", "render-b"] {
        let out = output(cmd(
            &[&s[0]],
            &[
                "acquire",
                "render",
                "--semaphore",
                "3",
                "--ttl",
                "10m",
                "--holder",
                label,
            ],
        ));
        assert_eq!(code(&out), 0, "{}", stderr(&out));
    }
    let plain = output(cmd(
        &[&s[0]],
        &["acquire", "render", "--semaphore", "3", "--ttl", "10m"],
    ));
    assert_eq!(code(&plain), 0, "{}", stderr(&plain));
    let st = output(cmd(
        &[&s[0]],
        &["status", "render", "--semaphore", "3", "--json"],
    ));
    let st: serde_json::Value = serde_json::from_str(&stdout(&st)).unwrap();
    assert_eq!(st["holders"], 3, "{st}");
    let mut labels: Vec<&str> = st["holders_noted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["label"].as_str().unwrap())
        .collect();
    labels.sort_unstable();
    assert_eq!(labels, ["render-a", "render-b"], "{st}");
    let line = stdout(&output(cmd(
        &[&s[0]],
        &["status", "render", "--semaphore", "3"],
    )));
    assert!(
        line.contains("3 of 3 permits held by 3") && line.contains("; noted: render-"),
        "{line}"
    );
}
