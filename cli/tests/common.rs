//! Running the `fencelock` binary against real servers, for the CLI's tests.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

use fencelock_testkit::RedisServer;

pub const BIN: &str = env!("CARGO_BIN_EXE_fencelock");

/// `fencelock ARGS` with `--server` for each of `servers` placed after the subcommand's name,
/// nothing inherited from the test's own FENCELOCK_* environment, and INT and QUIT at their
/// default: a shell without job control starts a background command (`cmd &`) with them
/// ignored, and fencelock leaves an ignored signal ignored, so the tests that send SIGINT
/// would depend on how the test run was started.
pub fn cmd(servers: &[&RedisServer], args: &[&str]) -> Command {
    use std::os::unix::process::CommandExt as _;
    let mut c = Command::new(BIN);
    // SAFETY: signal(2) in the child before exec; no memory involved.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGQUIT, libc::SIG_DFL);
            Ok(())
        });
    }
    c.arg(args[0]);
    for s in servers {
        c.arg("--server").arg(s.url());
    }
    c.args(&args[1..]);
    for (k, _) in std::env::vars() {
        if k.starts_with("FENCELOCK_") {
            c.env_remove(k);
        }
    }
    c.stdin(Stdio::null());
    c
}

pub fn output(mut c: Command) -> Output {
    c.output().expect("fencelock runs")
}

pub fn code(out: &Output) -> i32 {
    out.status.code().expect("fencelock exited, not killed")
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts `c` with its output piped.
pub fn spawn(mut c: Command) -> Child {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c.spawn().expect("fencelock starts")
}

/// A scratch directory of the test (removed at the end).
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("fencelock-cli-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    pub fn p(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Waits (a hang bound, not a speed goal) until `path` exists.
pub fn wait_file(path: &Path, limit: Duration) {
    let what = format!("{} to appear", path.display());
    fencelock_testkit::wait_until(limit, &what, || path.exists());
}

/// Whether process `pid` is alive (a zombie counts as gone).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(") ").next().and_then(|s| s.chars().next());
            state != Some('Z')
        }
        Err(_) => false,
    }
}

/// Waits for `child` to exit within `limit` (a hang bound); its output.
pub fn finish(child: Child, limit: Duration) -> Output {
    let pid = child.id() as i32;
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = std::sync::Arc::clone(&done);
        std::thread::spawn(move || {
            let end = std::time::Instant::now() + limit;
            while std::time::Instant::now() < end {
                if done.load(std::sync::atomic::Ordering::SeqCst) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // SAFETY: kill(2) of the process this test started.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            true
        })
    };
    let out = child.wait_with_output().expect("fencelock's output");
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(!watchdog.join().unwrap(), "fencelock hung past {limit:?}");
    out
}

/// A job that records its run in `runs` and waits for `go` to exist: several fencelock runs of
/// it show how many got in (lines of `runs`) while the others gave up.
pub fn gated_job(dir: &Scratch) -> String {
    format!(
        "echo $$ >> {runs}; while [ ! -e {go} ]; do sleep 0.02; done",
        runs = dir.p("runs"),
        go = dir.p("go")
    )
}

/// Waits (a hang bound) for one of `runs` to exit; removes it and returns its output.
pub fn first_to_exit(runs: &mut Vec<Child>, limit: Duration) -> Output {
    let mut done = None;
    fencelock_testkit::wait_until(limit, "one run to exit", || {
        done = runs
            .iter_mut()
            .position(|c| c.try_wait().unwrap().is_some());
        done.is_some()
    });
    finish(runs.remove(done.unwrap()), limit)
}
