//! Batching (issue 37): the lock calls of one process that meet at a server go out as one
//! script call, so that the server pays a script call's fixed cost (the command's arguments,
//! the Lua call, the reply) once per batch instead of once per lock.
//!
//! Below the quorum engine, per server ([`crate::server::Server::eval`]), for the calls a
//! batch may carry (`scripts/batch.rs`: a lock's and a lease's acquire, release and extend):
//!
//! - A call that finds the server idle here (nothing of this batcher's in flight, nobody
//!   waiting) goes out alone, at once, as it always did: no added latency.
//! - A call that finds something in flight waits in the batcher's line. The first to wait
//!   starts the flusher, a task that lets the calls runnable now join (one yield), then
//!   sends everything waiting, up to [`MAX_BATCH`] calls, as one script call, waits for
//!   its reply, hands each call its own, and goes on while calls wait. So while a batch is
//!   at the server the next one gathers: a call waits at most for the batch in flight, and
//!   never for a timer.
//! - Each call keeps its own time limit: one that gives up before the flusher takes it is
//!   left out. One taken is in its batch; its caller's undo, if it sends one, is a call of
//!   this batcher too and goes out after the batch (the line is sent in order and only after
//!   the batch before has its reply), so the server runs an attempt before its undo as for a
//!   call of its own.
//! - Each call's result is its own: the script's code per call is unchanged and one call's
//!   failure never touches another's (`scripts/batch.rs`). A batch that fails as a whole (the
//!   connection, the time limit) fails each call in it as the call alone would have failed.
//!   A broken connection's batch is sent once more on a new one, as a call alone is: every
//!   fencelock script has the same effect repeated with the same token.
//!
//! Not batched: a cluster (a script touches one slot), calls with replica acknowledgment,
//! the calls a binding polls on its event loop's own connections ([`crate::lane`]), and the
//! scripts of several names, the inspection and the fencing write-back.

use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use redis::Value;
use tokio::sync::oneshot;

use crate::failure::ServerFailure;
use crate::lane::Lane;
use crate::scripts::{parse_batch, Carried, ScriptCall};
use crate::server::Server;
use crate::sync::lock;

/// Most calls in one batch: a batch of acquires that all take the lean path runs for about
/// TODO µs on the server (bench/notes.md, issue 37), so a batch never blocks the server for
/// long.
pub(crate) const MAX_BATCH: usize = 128;

/// One server's batcher.
#[derive(Default)]
pub(crate) struct Batcher {
    state: StdMutex<State>,
}

#[derive(Default)]
struct State {
    /// Calls alone and batches in flight.
    busy: usize,
    /// The calls waiting for the next batch.
    line: Vec<Waiting>,
    /// Whether the flusher runs.
    flushing: bool,
}

struct Waiting {
    carried: Carried,
    timeout: Duration,
    reply: oneshot::Sender<Result<Value, ServerFailure>>,
}

/// How a call goes out.
pub(crate) enum Entry {
    /// Alone, now: the server was idle here. Counted in flight until dropped.
    Alone(Busy),
    /// In a batch: its reply.
    Queued(oneshot::Receiver<Result<Value, ServerFailure>>),
}

/// The flusher's task: however it ends (its runtime shut down before it ran, or while it
/// waited), the batcher is left with nobody waiting and no flusher, so that the next call
/// starts one; the calls still in line are told their batch was not sent.
struct Flusher {
    batcher: Arc<Batcher>,
    /// It ended with nobody waiting (and said so in the batcher's state).
    done: bool,
}

impl Flusher {
    /// Sends the line in batches, one at a time, until nobody waits.
    async fn run(mut self, server: Arc<Server>) {
        // The calls runnable now join this batch.
        tokio::task::yield_now().await;
        loop {
            let batch = {
                let mut state = lock(&self.batcher.state);
                state.line.retain(|w| !w.reply.is_closed());
                if state.line.is_empty() {
                    state.flushing = false;
                    self.done = true;
                    return;
                }
                let take = state.line.len().min(MAX_BATCH);
                state.busy += 1;
                state.line.drain(..take).collect::<Vec<_>>()
            };
            let _busy = Busy(Arc::clone(&self.batcher));
            self.batcher.send(&server, batch).await;
        }
    }
}

impl Drop for Flusher {
    fn drop(&mut self) {
        if !self.done {
            let mut state = lock(&self.batcher.state);
            state.flushing = false;
            state.line.clear();
        }
    }
}

/// A call alone in flight.
pub(crate) struct Busy(Arc<Batcher>);

impl Drop for Busy {
    fn drop(&mut self) {
        lock(&self.0.state).busy -= 1;
    }
}

impl Batcher {
    /// Where `call` (batchable) to `server` goes: alone when the server is idle here, else in
    /// the line of the next batch.
    pub fn enter(
        self: &Arc<Self>,
        server: &Arc<Server>,
        call: &ScriptCall,
        timeout: Duration,
    ) -> Entry {
        let mut state = lock(&self.state);
        let carried = match call.carried() {
            Some(c) if state.busy > 0 || !state.line.is_empty() => c,
            _ => {
                state.busy += 1;
                return Entry::Alone(Busy(Arc::clone(self)));
            }
        };
        let (reply, rx) = oneshot::channel();
        state.line.push(Waiting {
            carried,
            timeout,
            reply,
        });
        if !std::mem::replace(&mut state.flushing, true) {
            let flusher = Flusher {
                batcher: Arc::clone(self),
                done: false,
            };
            let server = Arc::clone(server);
            tokio::spawn(flusher.run(server));
        }
        Entry::Queued(rx)
    }

    /// Sends one batch (a call alone as its own script) and hands each call its reply.
    async fn send(&self, server: &Arc<Server>, batch: Vec<Waiting>) {
        let timeout = batch.iter().map(|w| w.timeout).max().unwrap_or_default();
        let carried: Vec<&Carried> = batch.iter().map(|w| &w.carried).collect();
        let replies = if let [one] = carried[..] {
            let alone = one.alone();
            let sent = server
                .eval_within::<Value>(&alone, Lane::Runtime, timeout)
                .await;
            vec![sent.unwrap_or(Err(ServerFailure::Timeout(timeout)))]
        } else {
            let call = ScriptCall::batch(&carried);
            match server
                .eval_within::<Value>(&call, Lane::Runtime, timeout)
                .await
            {
                Ok(Ok(reply)) => parse_batch(reply, &carried)
                    .into_iter()
                    .zip(&carried)
                    .map(|(r, c)| r.map_err(|e| ServerFailure::from_script(&e, c.source())))
                    .collect(),
                Ok(Err(failure)) => carried.iter().map(|_| Err(failure.clone())).collect(),
                Err(_) => carried
                    .iter()
                    .map(|_| Err(ServerFailure::Timeout(timeout)))
                    .collect(),
            }
        };
        for (waiting, reply) in batch.into_iter().zip(replies) {
            let _ = waiting.reply.send(reply);
        }
    }
}
