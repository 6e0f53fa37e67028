//! Time limits without a runtime timer per call.
//!
//! Every script call to a server runs within the per-server timeout, and the blocking API
//! wakes up at a fixed interval while it waits, to look for interrupts (Ctrl-C in Python). A
//! tokio timer per call costs more than it seems: registering one wakes the runtime's I/O
//! driver thread whenever that thread sleeps without an earlier timer, which is almost every
//! call (a write to its eventfd, then a context switch there and back). Measured on an
//! acquire+release cycle of the Python binding: about 3 system calls and 0.8 context switches
//! of the 21 and 7.5 per cycle (`bench/notes.md`).
//!
//! Instead, one thread per process keeps every pending deadline in order and sleeps until the
//! earliest. Registering a deadline later than the one that thread sleeps until (the usual
//! case: calls share a limit, and a new call starts after the pending ones) is a mutex and a
//! map insert, no system call; the thread wakes about once per limit, not once per call.
//!
//! The thread is made on first use. A child process after `fork()` has none (threads are not
//! copied): every new manager calls [`for_this_process`], which makes one in a process that
//! does not have its own yet (a manager made before the fork is not used in the child: the
//! Python binding rebuilds it there, the C API says to make a new one). If the thread cannot be
//! made, [`within`] uses a tokio timer.

use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::task::Poll;
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;

/// The time limit of [`within`] passed before its future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// Runs `fut` to completion unless `limit` passes first (then `Err(Elapsed)`, and `fut` is
/// dropped). Like `tokio::time::timeout`, `fut` is polled before the limit is looked at, so a
/// future that is ready wins.
pub(crate) async fn within<F: Future>(limit: Duration, fut: F) -> Result<F::Output, Elapsed> {
    let Some(at) = Instant::now().checked_add(limit) else {
        return Ok(fut.await); // no instant that far ahead: no limit
    };
    let Some(clock) = clock() else {
        return tokio::time::timeout(limit, fut).await.map_err(|_| Elapsed);
    };
    let alarm = Arc::new(Alarm::default());
    let entry = Entry {
        key: clock.add(at, Arc::clone(&alarm)),
        clock,
    };
    let mut fut = pin!(fut);
    let out = poll_fn(|cx| {
        if let Poll::Ready(out) = fut.as_mut().poll(cx) {
            return Poll::Ready(Ok(out));
        }
        alarm.waker.register(cx.waker());
        if alarm.rang.load(Ordering::Acquire) {
            return Poll::Ready(Err(Elapsed));
        }
        Poll::Pending
    })
    .await;
    drop(entry);
    out
}

/// What the clock thread sets and wakes when a deadline passes.
#[derive(Default)]
struct Alarm {
    rang: AtomicBool,
    waker: AtomicWaker,
}

impl Alarm {
    fn ring(&self) {
        self.rang.store(true, Ordering::Release);
        self.waker.wake();
    }
}

/// A deadline in the clock's table, removed when dropped (the call completed or was dropped).
struct Entry {
    clock: Arc<Clock>,
    key: (Instant, u64),
}

impl Drop for Entry {
    fn drop(&mut self) {
        lock(&self.clock.table).pending.remove(&self.key);
    }
}

/// The pending deadlines of one process, and the thread that rings them.
struct Clock {
    /// The process this clock's thread runs in.
    pid: u32,
    table: Mutex<Table>,
    /// Signalled when a deadline earlier than the thread's alarm is added.
    earlier: Condvar,
}

#[derive(Default)]
struct Table {
    /// By deadline; the sequence number tells equal instants apart.
    pending: BTreeMap<(Instant, u64), Arc<Alarm>>,
    next: u64,
    /// The instant the thread sleeps until; `None` while it waits for a deadline.
    alarm: Option<Instant>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data, consistent after any panic in these short critical sections.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The clock, its thread started on first use; `None` if the thread cannot be started.
static CURRENT: Mutex<Option<Arc<Clock>>> = Mutex::new(None);

fn clock() -> Option<Arc<Clock>> {
    let mut current = lock(&CURRENT);
    match current.as_ref() {
        Some(c) => Some(Arc::clone(c)),
        None => start(&mut current, std::process::id()),
    }
}

/// Makes sure the clock's thread runs in this process: in a child process after `fork()`, the
/// parent's clock is replaced by a new one (the parent's table is left behind: its calls do
/// not exist here). Called by every new manager, so calls need not ask for the process id.
pub(crate) fn for_this_process() {
    let pid = std::process::id();
    let mut current = lock(&CURRENT);
    if current.as_ref().map_or(true, |c| c.pid != pid) {
        start(&mut current, pid);
    }
}

fn start(current: &mut Option<Arc<Clock>>, pid: u32) -> Option<Arc<Clock>> {
    let fresh = Arc::new(Clock {
        pid,
        table: Mutex::new(Table::default()),
        earlier: Condvar::new(),
    });
    let ringer = Arc::clone(&fresh);
    std::thread::Builder::new()
        .name("fencelock-deadlines".into())
        .spawn(move || ringer.run())
        .ok()?;
    *current = Some(Arc::clone(&fresh));
    Some(fresh)
}

impl Clock {
    /// Adds a deadline; wakes the thread only when it sleeps past `at` (or without an alarm).
    fn add(&self, at: Instant, alarm: Arc<Alarm>) -> (Instant, u64) {
        let mut t = lock(&self.table);
        let key = (at, t.next);
        t.next += 1;
        t.pending.insert(key, alarm);
        if t.alarm.map_or(true, |a| at < a) {
            t.alarm = Some(at);
            self.earlier.notify_one();
        }
        key
    }

    /// The thread: rings every deadline that passed, then sleeps until the next one (or until
    /// one is added). Runs for the life of the process.
    fn run(&self) {
        let mut due = Vec::new();
        let mut t = lock(&self.table);
        loop {
            let now = Instant::now();
            while let Some(first) = t.pending.first_entry() {
                if first.key().0 > now {
                    break;
                }
                due.push(first.remove());
            }
            if !due.is_empty() {
                // Wake outside the lock: a waker may run code that adds a deadline.
                drop(t);
                due.drain(..).for_each(|a| a.ring());
                t = lock(&self.table);
                continue;
            }
            t = match t.pending.first_key_value().map(|(k, _)| k.0) {
                Some(at) => {
                    t.alarm = Some(at);
                    self.earlier
                        .wait_timeout(t, at.saturating_duration_since(now))
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => {
                    t.alarm = None;
                    self.earlier.wait(t).unwrap_or_else(|e| e.into_inner())
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deadlines pending between `now + from` and `now + to`: each test uses limits of its own
    /// range, as the tests of this module share the clock and may run at the same time.
    fn pending_within(from: Duration, to: Duration) -> usize {
        let now = Instant::now();
        let c = clock().expect("clock");
        let t = lock(&c.table);
        t.pending.range((now + from, 0)..(now + to, 0)).count()
    }

    #[tokio::test]
    async fn a_ready_future_wins_and_leaves_no_deadline_behind() {
        let limit = Duration::from_secs(100_000);
        assert_eq!(within(limit, async { 7 }).await, Ok(7));
        let slow = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            8
        };
        assert_eq!(within(limit, slow).await, Ok(8));
        let range = (Duration::from_secs(90_000), Duration::from_secs(110_000));
        assert_eq!(pending_within(range.0, range.1), 0);
    }

    #[tokio::test]
    async fn a_future_that_never_completes_ends_at_its_limit_not_before() {
        let started = Instant::now();
        let limit = Duration::from_millis(80);
        let out = within(limit, std::future::pending::<()>()).await;
        assert_eq!(out, Err(Elapsed));
        assert!(
            started.elapsed() >= limit,
            "ended after {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn an_earlier_deadline_added_later_wakes_the_clock() {
        // The clock first sleeps towards a deadline an hour away; a 50 ms one added after it
        // must still ring (the outer timeout only keeps a broken clock from hanging the test).
        let long = tokio::spawn(within(
            Duration::from_secs(3600),
            std::future::pending::<()>(),
        ));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let short = within(Duration::from_millis(50), std::future::pending::<()>());
        let out = tokio::time::timeout(Duration::from_secs(30), short).await;
        assert_eq!(out, Ok(Err(Elapsed)));
        long.abort();
        let _ = long.await;
    }

    #[tokio::test]
    async fn a_dropped_call_removes_its_deadline() {
        let call = tokio::spawn(within(
            Duration::from_secs(7200),
            std::future::pending::<()>(),
        ));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let range = (Duration::from_secs(7000), Duration::from_secs(7300));
        assert_eq!(pending_within(range.0, range.1), 1);
        call.abort();
        let _ = call.await;
        assert_eq!(pending_within(range.0, range.1), 0);
    }

    #[tokio::test]
    async fn many_deadlines_ring_whatever_the_order_they_were_added_in() {
        let limits = [90u64, 10, 50, 30, 70, 20];
        let calls = limits.iter().map(|&ms| async move {
            let started = Instant::now();
            let out = within(Duration::from_millis(ms), std::future::pending::<()>()).await;
            (out, started.elapsed() >= Duration::from_millis(ms))
        });
        for (out, not_early) in futures_util::future::join_all(calls).await {
            assert_eq!(out, Err(Elapsed));
            assert!(not_early, "a deadline rang early");
        }
    }

    #[test]
    fn it_needs_no_timer_driver_in_the_runtime() {
        // A runtime built without `enable_time` cannot run a tokio timer; the clock is its own
        // thread, and wakes the task like any waker.
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let out = rt.block_on(within(
            Duration::from_millis(30),
            std::future::pending::<()>(),
        ));
        assert_eq!(out, Err(Elapsed));
    }
}
