//! `chaos-check`, the history checker as a process: it reads the `HOLD` lines of worker output
//! (from workers in any language) and its exit status is the verdict.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use fencelock_chaos::history::Hold;
use fencelock_chaos::worker::{num, Worker};
use fencelock_testkit::servers;

const WORKER: &str = env!("CARGO_BIN_EXE_chaos-worker");
const CHECK: &str = env!("CARGO_BIN_EXE_chaos-check");

fn run_check(file: &Path) -> (bool, String) {
    let out = Command::new(CHECK)
        .arg("--timeline")
        .arg(file)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn the_checker_process_judges_worker_output_and_fails_on_a_planted_overlap() {
    let srv = servers(3);
    let urls: Vec<String> = srv.iter().map(|s| s.url()).collect();
    let args = [
        "contend",
        "--servers",
        &urls.join(","),
        "--names",
        "alpha",
        "--ttl-ms",
        "1000",
        // A count of rounds, not a duration: a busy machine once fitted only 10 holds into
        // 500 ms.
        "--duration-ms",
        "30000",
        "--rounds",
        "8",
        "--holders",
        "2",
    ]
    .map(String::from);
    let mut w = Worker::spawn(Path::new(WORKER), &args);
    let mut lines = Vec::new();
    loop {
        let line = w
            .next_line(Duration::from_secs(20))
            .expect("worker finishes");
        let done = line.starts_with("DONE");
        lines.push(line);
        if done {
            break;
        }
    }
    assert_eq!(num(lines.last().unwrap(), "acquired"), 16, "{lines:?}");
    let dir = std::env::temp_dir().join(format!("fencelock-chaos-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("worker.out");
    std::fs::write(&file, lines.join("\n")).unwrap();
    let (ok, out) = run_check(&file);
    assert!(ok, "a clean run passes: {out}");
    assert!(out.contains("OK: "), "{out}");
    assert!(out.contains("token"), "the timeline lists holds: {out}");

    // Plant a hold that starts inside the first hold's validity.
    let first = lines.iter().find_map(|l| Hold::parse_line(l)).unwrap();
    let planted = Hold {
        holder: "planted".into(),
        start_us: first.start_us + 1,
        end_us: first.start_us + 2,
        fencing_token: first.fencing_token + 1_000_000,
        ..first.clone()
    };
    lines.push(planted.to_line());
    std::fs::write(&file, lines.join("\n")).unwrap();
    let (ok, out) = run_check(&file);
    assert!(!ok, "the planted overlap fails the check: {out}");
    assert!(out.contains("overlap"), "{out}");
    let _ = std::fs::remove_dir_all(&dir);
}
