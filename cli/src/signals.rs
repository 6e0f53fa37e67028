//! The signals fencelock passes on to the command (and that stop a wait for the lock): INT,
//! TERM, HUP, QUIT, USR1, USR2.

use tokio::signal::unix::{signal, Signal, SignalKind};

use crate::exit::{self, Failure};

/// The signals, listened to from the start, so that none is lost between acquiring and
/// spawning (a signal that arrives before its handler would kill fencelock with the lock held).
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
