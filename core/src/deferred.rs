//! Starts that wait for their time without a task each, one queue per manager.
//!
//! A lock's auto-extension is first due a third of its TTL after the grant, and most holds end
//! before that. A task spawned at the grant and aborted at the release costs a runtime thread
//! two wake-ups per hold when the lock is taken from outside the runtime's threads (Node's
//! JavaScript thread, a blocking caller): about 80 µs of CPU per uncontended cycle on a
//! two-core machine, a quarter of the cycle (bench/notes.md, "auto-extension started when
//! due"). Here a hold puts its start in the manager's queue and a release takes it out: a lock
//! held past its first extension is started then, by the one task that serves the queue and
//! wakes only when the earliest start is due.
//!
//! The serving task runs on the runtime of the hold that found none serving; each start spawns
//! its own work on its own runtime. If the serving task's runtime shuts down first, whatever is
//! still queued is started at once (each start's work waits for its own time), so a hold taken
//! on another runtime keeps its extension.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::Notify;

use crate::sync::lock;

/// What runs when a start is due (or, when the serving task's runtime shuts down, at once).
pub(crate) type Start = Box<dyn FnOnce() + Send>;

/// One manager's queue of starts.
#[derive(Default)]
pub(crate) struct Deferred {
    queue: Mutex<Queue>,
    wake: Notify,
}

#[derive(Default)]
struct Queue {
    due: BTreeMap<Ticket, Start>,
    next_id: u64,
    /// Whether a task serves the queue.
    serving: bool,
    /// When the serving task looks next (`None`: it is looking now).
    looks_at: Option<Instant>,
}

/// A start's place in the queue: when it is due, and a number that tells it from another due
/// at the same instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ticket(Instant, u64);

impl Deferred {
    /// A ticket for a start due `at`, to [`schedule`](Self::schedule) (a ticket is known
    /// before its start is queued, so the start can check that it is still wanted).
    pub fn ticket(&self, at: Instant) -> Ticket {
        let mut q = lock(&self.queue);
        q.next_id += 1;
        Ticket(at, q.next_id)
    }

    /// Queues `start` for its ticket's time; with no task serving the queue, spawns one on
    /// `runtime`. Wakes the serving task only when this start is due before it looks next.
    pub fn schedule(self: &Arc<Self>, runtime: &Handle, ticket: Ticket, start: Start) {
        let mut q = lock(&self.queue);
        q.due.insert(ticket, start);
        if !q.serving {
            q.serving = true;
            q.looks_at = None;
            drop(q);
            // Made before the spawn and moved into the task: dropped with it even if the
            // runtime drops the task unpolled.
            let serving = Serving(Arc::clone(self), true);
            runtime.spawn(serve(serving));
        } else if q.looks_at.is_some_and(|next| ticket.0 < next) {
            q.looks_at = Some(ticket.0);
            drop(q);
            self.wake.notify_one();
        }
    }

    /// Takes a start out of the queue; returns whether it was there (not yet started).
    pub fn cancel(&self, ticket: Ticket) -> bool {
        let start = lock(&self.queue).due.remove(&ticket);
        start.is_some()
    }

    /// How many starts wait.
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.queue).due.len()
    }
}

/// The serving task's hold on the queue. Dropped with the task before the task ended it (its
/// runtime shut down): whatever is still queued is started at once.
struct Serving(Arc<Deferred>, bool);

impl Drop for Serving {
    fn drop(&mut self) {
        if !self.1 {
            return;
        }
        let left = {
            let mut q = lock(&self.0.queue);
            q.serving = false;
            q.looks_at = None;
            std::mem::take(&mut q.due)
        };
        left.into_values().for_each(|start| start());
    }
}

/// Starts what is due, then sleeps until the next start is due or an earlier one is queued;
/// ends when the queue is empty.
async fn serve(mut serving: Serving) {
    let d = Arc::clone(&serving.0);
    loop {
        let (ready, next) = {
            let mut q = lock(&d.queue);
            let later = q.due.split_off(&Ticket(Instant::now(), u64::MAX));
            let ready = std::mem::replace(&mut q.due, later);
            let next = q.due.keys().next().map(|t| t.0);
            q.looks_at = next;
            if next.is_none() {
                q.serving = false;
            }
            (ready, next)
        };
        ready.into_values().for_each(|start| start());
        let Some(next) = next else {
            // Not serving any more (marked above): a start queued since has spawned a new
            // serving task, whose queue this one leaves alone.
            serving.1 = false;
            return;
        };
        tokio::select! {
            _ = tokio::time::sleep_until(next.into()) => {}
            _ = d.wake.notified() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn counter(n: &Arc<AtomicUsize>) -> Start {
        let n = Arc::clone(n);
        Box::new(move || {
            n.fetch_add(1, Ordering::SeqCst);
        })
    }

    async fn until(n: &AtomicUsize, want: usize) {
        let limit = Instant::now() + Duration::from_secs(10);
        while n.load(Ordering::SeqCst) < want {
            assert!(
                Instant::now() < limit,
                "stuck at {} of {want}",
                n.load(Ordering::SeqCst)
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn starts_run_when_due_and_cancelled_ones_never() {
        let d = Arc::new(Deferred::default());
        let n = Arc::new(AtomicUsize::new(0));
        let at = Instant::now() + Duration::from_millis(1500);
        let kept = d.ticket(at);
        let cancelled = d.ticket(at);
        d.schedule(&Handle::current(), kept, counter(&n));
        d.schedule(&Handle::current(), cancelled, counter(&n));
        assert!(d.cancel(cancelled));
        assert!(!d.cancel(cancelled));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(n.load(Ordering::SeqCst), 0, "started before it was due");
        until(&n, 1).await;
        assert!(Instant::now() >= at);
        assert!(!d.cancel(kept), "a started start is out of the queue");
        // The queue empty, the serving task ends; a new start brings one back.
        let again = d.ticket(Instant::now());
        d.schedule(&Handle::current(), again, counter(&n));
        until(&n, 2).await;
        assert_eq!(d.len(), 0);
    }

    #[tokio::test]
    async fn an_earlier_start_wakes_the_serving_task() {
        let d = Arc::new(Deferred::default());
        let n = Arc::new(AtomicUsize::new(0));
        let late = d.ticket(Instant::now() + Duration::from_secs(3600));
        d.schedule(&Handle::current(), late, counter(&n));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let soon = d.ticket(Instant::now() + Duration::from_millis(10));
        d.schedule(&Handle::current(), soon, counter(&n));
        until(&n, 1).await;
        assert!(d.cancel(late), "the late start is still queued");
    }

    #[test]
    fn a_runtime_shut_down_starts_what_it_served_at_once() {
        let d = Arc::new(Deferred::default());
        let n = Arc::new(AtomicUsize::new(0));
        let first = tokio::runtime::Runtime::new().unwrap();
        let far = Instant::now() + Duration::from_secs(3600);
        for _ in 0..3 {
            let t = d.ticket(far);
            d.schedule(first.handle(), t, counter(&n));
        }
        first.block_on(async { tokio::time::sleep(Duration::from_millis(20)).await });
        drop(first);
        assert_eq!(n.load(Ordering::SeqCst), 3);
        assert_eq!(d.len(), 0);
        // A later start finds no task serving and spawns one on its own runtime.
        let second = tokio::runtime::Runtime::new().unwrap();
        let t = d.ticket(Instant::now());
        d.schedule(second.handle(), t, counter(&n));
        second.block_on(until(&n, 4));
    }
}
