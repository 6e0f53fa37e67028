//! The signals fencelock passes on to the command (and that stop a wait for the lock): INT,
//! TERM, HUP, QUIT, USR1, USR2.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{self, Failure};

/// The signals, listened to from the start, so that none is lost between acquiring and
/// spawning (a signal that arrives before its handler would kill fencelock with the lock held).
///
/// A signal ignored when fencelock starts (`nohup` ignores HUP) stays ignored, and the command
/// inherits that. Any other handler is set aside first: in a host process (the Python and Node
/// packages run this program inside theirs) the host's own handler would otherwise run after
/// ours; Node's re-raises the signal, which would never end.
pub struct Signals {
    each: Vec<(libc::c_int, Signal)>,
}

impl Signals {
    pub fn listen() -> Result<Signals, Failure> {
        let numbers = [
            libc::SIGINT,
            libc::SIGTERM,
            libc::SIGHUP,
            libc::SIGQUIT,
            libc::SIGUSR1,
            libc::SIGUSR2,
        ];
        let mut each = Vec::with_capacity(numbers.len());
        for n in numbers {
            if !take_over(n) {
                continue;
            }
            let s = signal(SignalKind::from_raw(n)).map_err(|e| {
                Failure::new(exit::SOFTWARE, format!("cannot listen to signal {n}: {e}"))
            })?;
            each.push((n, s));
        }
        Ok(Signals { each })
    }

    /// The next signal received (its number).
    pub async fn recv(&mut self) -> libc::c_int {
        let waits = self.each.iter_mut().map(|(n, s)| {
            let n = *n;
            Box::pin(async move {
                s.recv().await;
                n
            })
        });
        futures_util::future::select_all(waits).await.0
    }
}

/// Sets `signal`'s handler back to the default unless it is ignored; whether it was not.
fn take_over(signal: libc::c_int) -> bool {
    // SAFETY: sigaction(2) reads the current disposition into a zeroed struct; signal(2) sets
    // the default. No handler of ours is involved yet.
    unsafe {
        let mut current: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
            return true;
        }
        if current.sa_sigaction == libc::SIG_IGN {
            return false;
        }
        libc::signal(signal, libc::SIG_DFL);
    }
    true
}

/// What a signal's name is, for messages.
pub fn name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        libc::SIGHUP => "SIGHUP",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGUSR2 => "SIGUSR2",
        _ => "a signal",
    }
}
