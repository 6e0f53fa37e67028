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
//! Instead, one thread keeps every pending deadline in order and sleeps until the earliest.
//! Registering a deadline later than the one that thread sleeps until (the usual case: calls
//! share a limit, and a new call starts after the pending ones) is a mutex and a map insert, no
//! system call; the thread wakes about once per limit, not once per call.
//!
//! The thread runs while a [`Clock`] handle exists: every server holds one, so it starts with
//! the first manager and stops (joined) when the last manager and its background work are
//! gone — a C program that frees its managers leaves no thread behind. A child process after
//! `fork()` has no thread (threads are not copied): a manager made there starts its own (a
//! manager made before the fork is not used in the child: the Python binding rebuilds it there,
//! the C API says to make a new one). If the thread cannot be started, [`within`] falls back to
//! a tokio timer.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::future::{poll_fn, Future};
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::task::Poll;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use futures_util::task::AtomicWaker;

/// The time limit of [`within`] passed before its future completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Elapsed;

/// Runs `fut` to completion unless `limit` passes first (then `Err(Elapsed)`, and `fut` is
/// dropped). Like `tokio::time::timeout`, `fut` is polled before the limit is looked at, so a
/// future that is ready wins.
pub(crate) async fn within<F: Future>(
    clock: &Clock,
    limit: Duration,
    fut: F,
) -> Result<F::Output, Elapsed> {
    let Some(at) = Instant::now().checked_add(limit) else {
        return Ok(fut.await); // no instant that far ahead: no limit
    };
    let shared = &clock.running.shared;
    if clock.running.thread.is_none() {
        return tokio::time::timeout(limit, fut).await.map_err(|_| Elapsed);
    }
    let mut fut = pin!(fut);
    // A future ready at its first poll (a call on the caller's own connection, see
    // `direct/`) needs no alarm.
    let first = poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
    if let Poll::Ready(out) = first {
        return Ok(out);
    }
    let alarm = Arc::new(Alarm::default());
    let entry = Entry {
        key: shared.add(at, Arc::clone(&alarm)),
        shared,
    };
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

/// A share in the deadline thread of this process: the thread runs while one exists.
#[derive(Clone)]
pub(crate) struct Clock {
    running: Arc<Running>,
}

impl Clock {
    /// A share in this process's deadline thread, started if none runs in this process.
    pub(crate) fn share() -> Clock {
        static CURRENT: Mutex<Weak<Running>> = Mutex::new(Weak::new());
        let pid = std::process::id();
        let mut current = lock(&CURRENT);
        let running = match current.upgrade().filter(|r| r.pid == pid) {
            Some(running) => running,
            None => {
                let running = Arc::new(Running::start(pid));
                *current = Arc::downgrade(&running);
                running
            }
        };
        Clock { running }
    }
}

/// The thread and its table; stopping the thread is the last share's drop.
struct Running {
    pid: u32,
    shared: Arc<Timetable>,
    /// `None` when the thread could not be started.
    thread: Option<JoinHandle<()>>,
}

impl Running {
    fn start(pid: u32) -> Running {
        let shared = Arc::new(Timetable {
            table: Mutex::new(Table::default()),
            changed: Condvar::new(),
        });
        let ringer = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("fencelock-deadlines".into())
            .spawn(move || ringer.run())
            .ok();
        Running {
            pid,
            shared,
            thread,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let Some(thread) = self.thread.take() else {
            return;
        };
        if self.pid != std::process::id() {
            return; // a child after fork(): the thread is the parent's, not here
        }
        lock(&self.shared.table).stop = true;
        self.shared.changed.notify_one();
        // The last share can be dropped on the thread itself (an alarm's wake-up dropping a
        // task of a runtime that was shut down): it stops after this round, unjoined.
        if !ON_CLOCK_THREAD.with(Cell::get) {
            let _ = thread.join();
        }
    }
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

/// A deadline in the table, removed when dropped (the call completed or was dropped).
struct Entry<'a> {
    shared: &'a Timetable,
    key: (Instant, u64),
}

impl Drop for Entry<'_> {
    fn drop(&mut self) {
        lock(&self.shared.table).pending.remove(&self.key);
    }
}

/// The pending deadlines, shared by the thread and the calls.
struct Timetable {
    table: Mutex<Table>,
    /// Signalled when a deadline earlier than the thread's alarm is added, or to stop.
    changed: Condvar,
}

#[derive(Default)]
struct Table {
    /// By deadline; the sequence number tells equal instants apart.
    pending: BTreeMap<(Instant, u64), Arc<Alarm>>,
    next: u64,
    /// The instant the thread sleeps until; `None` while it waits for a deadline.
    alarm: Option<Instant>,
    stop: bool,
}

thread_local! {
    /// True on the deadline thread. (Not `std::thread::current()`: in a C program's child
    /// process that allocates a handle which exit() never frees.)
    static ON_CLOCK_THREAD: Cell<bool> = const { Cell::new(false) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain data, consistent after any panic in these short critical sections.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Timetable {
    /// Adds a deadline; wakes the thread only when it sleeps past `at` (or without an alarm).
    fn add(&self, at: Instant, alarm: Arc<Alarm>) -> (Instant, u64) {
        let mut t = lock(&self.table);
        let key = (at, t.next);
        t.next += 1;
        t.pending.insert(key, alarm);
        if t.alarm.is_none_or(|a| at < a) {
            t.alarm = Some(at);
            self.changed.notify_one();
        }
        key
    }

    /// The thread: rings every deadline that passed, then sleeps until the next one (or until
    /// one is added), until told to stop.
    fn run(&self) {
        ON_CLOCK_THREAD.with(|on| on.set(true));
        let mut due = Vec::new();
        let mut t = lock(&self.table);
        while !t.stop {
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
                    self.changed
                        .wait_timeout(t, at.saturating_duration_since(now))
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
                None => {
                    t.alarm = None;
                    self.changed.wait(t).unwrap_or_else(|e| e.into_inner())
                }
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deadlines pending between `now + from` and `now + to`: each test uses limits of its own
    /// range, as the tests of this module share the thread and may run at the same time.
    fn pending_within(clock: &Clock, from: Duration, to: Duration) -> usize {
        let now = Instant::now();
        let t = lock(&clock.running.shared.table);
        t.pending.range((now + from, 0)..(now + to, 0)).count()
    }

    fn pending<'a>(
        clock: &'a Clock,
        limit: Duration,
    ) -> impl Future<Output = Result<(), Elapsed>> + 'a {
        within(clock, limit, std::future::pending::<()>())
    }

    #[tokio::test]
    async fn a_ready_future_wins_and_leaves_no_deadline_behind() {
        let clock = Clock::share();
        let limit = Duration::from_secs(100_000);
        assert_eq!(within(&clock, limit, async { 7 }).await, Ok(7));
        let slow = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            8
        };
        assert_eq!(within(&clock, limit, slow).await, Ok(8));
        let range = (Duration::from_secs(90_000), Duration::from_secs(110_000));
        assert_eq!(pending_within(&clock, range.0, range.1), 0);
    }

    #[tokio::test]
    async fn a_future_that_never_completes_ends_at_its_limit_not_before() {
        let clock = Clock::share();
        let started = Instant::now();
        let limit = Duration::from_millis(80);
        assert_eq!(pending(&clock, limit).await, Err(Elapsed));
        assert!(
            started.elapsed() >= limit,
            "ended after {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn an_earlier_deadline_added_later_wakes_the_clock() {
        // The thread first sleeps towards a deadline an hour away; a 50 ms one added after it
        // must still ring (the outer timeout only keeps a broken clock from hanging the test).
        let clock = Clock::share();
        let long = {
            let clock = clock.clone();
            tokio::spawn(async move { pending(&clock, Duration::from_secs(3600)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let short = pending(&clock, Duration::from_millis(50));
        let out = tokio::time::timeout(Duration::from_secs(30), short).await;
        assert_eq!(out, Ok(Err(Elapsed)));
        long.abort();
        let _ = long.await;
    }

    #[tokio::test]
    async fn a_dropped_call_removes_its_deadline() {
        let clock = Clock::share();
        let call = {
            let clock = clock.clone();
            tokio::spawn(async move { pending(&clock, Duration::from_secs(7200)).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let range = (Duration::from_secs(7000), Duration::from_secs(7300));
        assert_eq!(pending_within(&clock, range.0, range.1), 1);
        call.abort();
        let _ = call.await;
        assert_eq!(pending_within(&clock, range.0, range.1), 0);
    }

    #[tokio::test]
    async fn many_deadlines_ring_whatever_the_order_they_were_added_in() {
        let clock = Clock::share();
        let limits = [90u64, 10, 50, 30, 70, 20];
        let calls = limits.iter().map(|&ms| {
            let clock = &clock;
            async move {
                let started = Instant::now();
                let out = pending(clock, Duration::from_millis(ms)).await;
                (out, started.elapsed() >= Duration::from_millis(ms))
            }
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
        let clock = Clock::share();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let out = rt.block_on(pending(&clock, Duration::from_millis(30)));
        assert_eq!(out, Err(Elapsed));
    }

    #[test]
    fn the_thread_stops_when_the_last_share_is_dropped() {
        // A clock of its own (other tests share the process's one).
        let clock = Clock {
            running: Arc::new(Running::start(std::process::id())),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        assert_eq!(
            rt.block_on(pending(&clock, Duration::from_millis(10))),
            Err(Elapsed)
        );
        let second = clock.clone();
        let table = Arc::downgrade(&clock.running.shared);
        drop(clock);
        assert!(table.upgrade().is_some(), "stopped while a share was left");
        drop(second);
        // The thread held the table until it returned, and the drop joined it.
        assert!(table.upgrade().is_none(), "the thread still runs");
    }
}
