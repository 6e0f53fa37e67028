//! The command as a child: in a process group of its own (so that a lost lock or a forwarded
//! signal reaches everything it started, also behind `sh -c`), told by a parent-death signal
//! when fencelock is killed, and ended with SIGTERM then SIGKILL.

use std::ffi::OsString;
use std::io;
use std::os::unix::process::ExitStatusExt as _;
use std::process::ExitStatus;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::exit::{self, Failure};

/// A running command and its process group (the child's pid); `foreground` when it was given
/// the terminal.
pub struct Running {
    pub child: Child,
    pub group: libc::pid_t,
    foreground: bool,
}

/// Whether fencelock runs in the foreground of a terminal (its stdin): then the command's
/// group gets the terminal, so that it can read it and Ctrl-C reaches it, as a shell does.
fn in_foreground() -> bool {
    // SAFETY: plain queries of the calling process and its stdin.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Makes `group` the terminal's foreground group, from a process that may be in the
/// background (SIGTTOU ignored meanwhile, as shells do). Async-signal-safe.
fn give_terminal(group: libc::pid_t) {
    // SAFETY: signal(2) and tcsetpgrp(3) on stdin; no memory involved.
    unsafe {
        let previous = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
        libc::tcsetpgrp(0, group);
        libc::signal(libc::SIGTTOU, previous);
    }
}

/// Starts `command` with `env` added, in a new process group, with SIGTERM as its parent-death
/// signal. Must be called on the main thread: Linux sends that signal when the *thread* that
/// forked the child ends (the CLI runs on one thread).
pub fn spawn(command: &[OsString], env: &[(&str, String)]) -> Result<Running, Failure> {
    let (program, args) = command.split_first().expect("clap requires a command");
    let parent = std::process::id() as libc::pid_t;
    let foreground = in_foreground();
    let mut cmd = Command::new(program);
    cmd.args(args).envs(env.iter().map(|(k, v)| (k, v)));
    // SAFETY: between fork and exec only async-signal-safe calls: setpgid, prctl, getppid,
    // signal, tcsetpgrp.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(io::Error::last_os_error());
            }
            if foreground {
                give_terminal(libc::getpid());
            }
            // fencelock died before the prctl: nobody would send the signal.
            if libc::getppid() != parent {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| cannot_run(program, &e))?;
    let group = child.id().expect("a child just spawned has a pid") as libc::pid_t;
    Ok(Running {
        child,
        group,
        foreground,
    })
}

fn cannot_run(program: &std::ffi::OsStr, e: &io::Error) -> Failure {
    let code = if e.kind() == io::ErrorKind::NotFound {
        exit::NOT_FOUND
    } else {
        exit::CANNOT_RUN
    };
    Failure::new(
        code,
        format!("cannot run {}: {e}", program.to_string_lossy()),
    )
}

impl Running {
    /// Takes the terminal back once the command is gone.
    pub fn give_back_terminal(&self) {
        if self.foreground {
            // SAFETY: getpgrp(2) cannot fail.
            give_terminal(unsafe { libc::getpgrp() });
        }
    }

    /// Sends `signal` to the command's whole process group (ignoring a group already gone).
    pub fn signal_group(&self, signal: libc::c_int) {
        // SAFETY: kill(2) with a negative pid signals that process group; no memory involved.
        unsafe {
            libc::kill(-self.group, signal);
        }
    }

    /// Whether any process of the group is still alive (or not yet reaped).
    fn group_alive(&self) -> bool {
        // SAFETY: signal 0 only checks that the group exists.
        unsafe { libc::kill(-self.group, 0) == 0 }
    }

    /// Ends the command: SIGTERM to its group, then SIGKILL to what is left of the group once
    /// `kill_after` passed (or at once when the group is gone sooner); returns the child's status.
    pub async fn terminate(&mut self, kill_after: Duration) -> io::Result<ExitStatus> {
        self.signal_group(libc::SIGTERM);
        let deadline = tokio::time::Instant::now() + kill_after;
        let status = match tokio::time::timeout_at(deadline, self.child.wait()).await {
            Ok(status) => status?,
            Err(_) => {
                self.signal_group(libc::SIGKILL);
                return self.child.wait().await;
            }
        };
        // The child is gone; what it started in its group gets the rest of the time.
        while self.group_alive() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if self.group_alive() {
            self.signal_group(libc::SIGKILL);
        }
        Ok(status)
    }
}

/// The exit code a shell would report for `status`: the code, or 128 + the signal.
pub fn exit_code(status: ExitStatus) -> u8 {
    match end(status) {
        Some(Ok(code)) => code as u8,
        Some(Err(signal)) => exit::SIGNALLED.saturating_add(signal as u8),
        None => exit::SOFTWARE,
    }
}

/// How the command ended: `Ok(its exit code)` or `Err(the signal that killed it)`.
pub fn end(status: ExitStatus) -> Option<Result<i32, i32>> {
    match (status.code(), status.signal()) {
        (Some(code), _) => Some(Ok(code)),
        (None, Some(signal)) => Some(Err(signal)),
        (None, None) => None,
    }
}
