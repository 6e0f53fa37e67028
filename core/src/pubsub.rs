//! Release notifications: one subscriber per server, shared by every waiter of the manager.
//! A release names the first waiter in line (the message format is [`crate::queue`]'s) and
//! only that waiter is woken; an empty message, or a lost connection, wakes them all.
//!
//! On a standalone or Sentinel-managed server the subscriber is one RESP2 pub/sub connection
//! (SUBSCRIBE). On a cluster it is a cluster connection over RESP3 that subscribes with
//! SSUBSCRIBE (sharded pub/sub: the node that owns the channel's slot, where the release script
//! publishes with SPUBLISH), follows the slot map and subscribes again where a slot moved; a
//! channel the cluster drops (its slot migrated) wakes its waiters and is subscribed again by
//! the next one. On a cluster without sharded pub/sub (Redis 6.2) it subscribes with SUBSCRIBE
//! at the node that owns the channel's slot (so that the scripts there see it listen), and the
//! scripts publish with PUBLISH, which the cluster carries to every node; nothing moves such a
//! subscription when its slot moves, but the first wake-up the new owner sends without seeing
//! it listen ([`crate::queue::unheard`]) marks the connection stale: the next subscription
//! opens a new one, which reads the slot map afresh, and subscribes again to every channel
//! that has waiters, each at its slot's owner now (as after a lost connection).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redis::aio::PubSubSink;
use redis::cluster_async::ClusterConnection;
use redis::{PushInfo, PushKind, Value};
use tokio::sync::watch;

use crate::conn::Sharded;
use crate::failure::ServerFailure;
use crate::queue::{parse_wake, unheard, Handoff};
use crate::sync::lock;
use crate::timing::{SUBSCRIPTION_LINGER, UNSUBSCRIBE_TIMEOUT};
use crate::url::ClusterSpec;

/// Where a subscriber connects: one server (the client of its current master), or a cluster,
/// with whether its scripts publish with SPUBLISH (sharded pub/sub) or PUBLISH (Redis 6.2).
pub(crate) enum Source<'a> {
    Server(&'a redis::Client),
    Cluster(&'a ClusterSpec, Sharded),
}

/// The subscriber's command side.
enum Sink {
    Server(PubSubSink),
    Cluster(ClusterConnection, Sharded),
}

impl Sink {
    async fn subscribe(&mut self, channel: &[u8]) -> redis::RedisResult<()> {
        match self {
            Sink::Server(s) => s.subscribe(channel).await,
            Sink::Cluster(c, true) => c.ssubscribe(channel).await,
            Sink::Cluster(c, false) => c.subscribe(channel).await,
        }
    }

    async fn unsubscribe(&mut self, channel: &[u8]) -> redis::RedisResult<()> {
        match self {
            Sink::Server(s) => s.unsubscribe(channel).await,
            Sink::Cluster(c, true) => c.sunsubscribe(channel).await,
            Sink::Cluster(c, false) => c.unsubscribe(channel).await,
        }
    }

    /// Whether it listens the way `source` publishes (a cluster upgraded to sharded pub/sub
    /// since it connected does not).
    fn serves(&self, source: &Source<'_>) -> bool {
        match (self, source) {
            (Sink::Cluster(_, mine), Source::Cluster(_, theirs)) => mine == theirs,
            _ => true,
        }
    }
}

type Table = Arc<StdMutex<HashMap<Vec<u8>, ChannelEntry>>>;

/// Release notifications from one server, shared by every waiter of the manager.
#[derive(Default)]
pub(crate) struct Subscriber {
    /// Serialises SUBSCRIBE/UNSUBSCRIBE and (re)connecting.
    commands: tokio::sync::Mutex<SubscriberConn>,
    /// Channel → (number of waiters, notification counter). Read by the dispatcher task.
    table: Table,
    /// Channels a cluster dropped (their slot migrated): subscribed again by the next waiter.
    dropped: Arc<StdMutex<HashSet<Vec<u8>>>>,
}

#[derive(Default)]
pub(crate) struct SubscriberConn {
    sink: Option<(Sink, Arc<AtomicBool>)>,
    subscribed: HashSet<Vec<u8>>,
}

/// What a waiter's subscription hears: each release message that names it, and the last
/// handoff those messages reported.
type Wakes = watch::Receiver<Wake>;

/// What the messages of a subscription said so far (see [`Subscription::wake`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Wake {
    /// The last handoff the messages that named the token reported (for an election's
    /// observers, a term's renewal: see `election/observe.rs`).
    pub handoff: Option<Handoff>,
    /// How many messages reported a handoff (two can report the same one).
    pub handoffs: u64,
    /// How many wake-ups reported none: empty messages, messages naming the token without a
    /// handoff, a lost connection, a channel the cluster dropped.
    pub plain: u64,
}

/// The waiters of one channel, by token: a release names the first waiter in line (the token
/// ends its message, see [`parse_wake`]) and only that waiter is woken; an empty message, or a
/// lost connection, wakes them all.
#[derive(Default)]
struct ChannelEntry {
    users: usize,
    /// Per waiting token: how many waiters, and the last handoff its messages named.
    waiters: HashMap<Vec<u8>, (usize, watch::Sender<Wake>)>,
    /// When `users` last fell to 0.
    idle_since: Option<Instant>,
    /// A task lingers to unsubscribe the channel once it has been idle long enough: one such
    /// task per channel, however often the channel falls idle.
    lingering: bool,
}

impl ChannelEntry {
    fn wake_all(&self) {
        for (_, notify) in self.waiters.values() {
            notify.send_modify(|w| w.plain += 1);
        }
    }

    fn wake(&self, payload: &[u8]) {
        let (token, handoff) = parse_wake(payload);
        if token.is_empty() {
            self.wake_all();
        } else if let Some((_, notify)) = self.waiters.get(token) {
            notify.send_modify(|w| match handoff {
                Some(_) => {
                    w.handoff = handoff;
                    w.handoffs += 1;
                }
                None => w.plain += 1,
            });
        }
    }
}

impl Subscriber {
    /// Subscribes a waiter with `token` to `channel` (through `client`'s server), within
    /// `timeout`.
    pub async fn subscribe(
        self: &Arc<Self>,
        source: Source<'_>,
        channel: &[u8],
        token: &[u8],
        timeout: Duration,
    ) -> Result<Subscription, ServerFailure> {
        match tokio::time::timeout(timeout, self.add_subscribed(source, channel, token)).await {
            Ok(Ok(rx)) => Ok(Subscription::new(self, channel, token, rx)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ServerFailure::Timeout(timeout)),
        }
    }

    /// Joins `channel` without a network call when it is already subscribed on a live
    /// connection (another waiter of this manager holds it, or it lingers after a recent
    /// wait); `None` otherwise, or while a SUBSCRIBE or UNSUBSCRIBE is under way.
    pub fn join_subscribed(self: &Arc<Self>, channel: &[u8], token: &[u8]) -> Option<Subscription> {
        let rx = self.join_if_subscribed(channel, token)?;
        Some(Subscription::new(self, channel, token, rx))
    }

    /// Opens the subscriber's connection: its sink, and a dispatcher that wakes the waiters
    /// named by the messages (and all of them when the connection is lost).
    async fn connect(&self, source: Source<'_>) -> Result<(Sink, Arc<AtomicBool>), ServerFailure> {
        let alive = Arc::new(AtomicBool::new(true));
        let table = Arc::clone(&self.table);
        let sink = match source {
            Source::Server(client) => {
                let pubsub = client
                    .get_async_pubsub()
                    .await
                    .map_err(|e| ServerFailure::from_redis(&e))?;
                let (sink, mut stream) = pubsub.split();
                let flag = Arc::clone(&alive);
                tokio::spawn(async move {
                    while let Some(msg) = stream.next().await {
                        if let Some(entry) = lock(&table).get(msg.get_channel_name().as_bytes()) {
                            entry.wake(msg.get_payload_bytes());
                        }
                    }
                    flag.store(false, Ordering::Release);
                    // Wake every waiter: they retry at once, then fall back to timed retries.
                    wake_everyone(&table);
                });
                Sink::Server(sink)
            }
            Source::Cluster(cluster, sharded) => {
                let dropped = Arc::clone(&self.dropped);
                let flag = Arc::clone(&alive);
                let push = move |info: PushInfo| {
                    dispatch_push(&table, &dropped, &flag, info);
                    Ok::<(), std::convert::Infallible>(())
                };
                let conn = cluster
                    .client_with_push(push)
                    .map_err(|e| ServerFailure::from_redis(&e))?
                    .get_async_connection()
                    .await
                    .map_err(|e| ServerFailure::from_redis(&e))?;
                Sink::Cluster(conn, sharded)
            }
        };
        Ok((sink, alive))
    }

    async fn add_subscribed(
        &self,
        source: Source<'_>,
        channel: &[u8],
        token: &[u8],
    ) -> Result<Wakes, ServerFailure> {
        let mut conn = self.commands.lock().await;
        let alive = matches!(&conn.sink, Some((sink, alive)) if alive.load(Ordering::Acquire) && sink.serves(&source));
        if !alive {
            conn.subscribed.clear();
            conn.sink = None;
            conn.sink = Some(self.connect(source).await?);
            self.resubscribe(&mut conn).await?;
        }
        if lock(&self.dropped).remove(channel) {
            conn.subscribed.remove(channel);
        }
        let rx = self.add_user(channel, token);
        // Until the channel is known to be subscribed, a failed, timed-out or cancelled
        // SUBSCRIBE takes this waiter back out (else the channel kept a waiter for good and
        // was never unsubscribed). A SUBSCRIBE that did reach the server leaves the
        // connection listening to a channel nobody waits on: its messages are ignored, and
        // the next waiter subscribes again (Redis accepts a repeated SUBSCRIBE).
        let mut user = NewUser {
            sub: self,
            channel,
            token,
            done: false,
        };
        if !conn.subscribed.contains(channel) {
            let (sink, _) = conn.sink.as_mut().expect("connected above");
            sink.subscribe(channel)
                .await
                .map_err(|e| ServerFailure::from_redis(&e))?;
            conn.subscribed.insert(channel.to_vec());
        }
        user.done = true;
        Ok(rx)
    }

    /// Subscribes a new connection to every channel that has waiters (they subscribed on the
    /// one it replaces: lost, or stale), then wakes them all: a release that came while they
    /// were not listening is not missed, they try at once.
    async fn resubscribe(&self, conn: &mut SubscriberConn) -> Result<(), ServerFailure> {
        let channels: Vec<Vec<u8>> = lock(&self.table)
            .iter()
            .filter(|(_, e)| e.users > 0)
            .map(|(c, _)| c.clone())
            .collect();
        if channels.is_empty() {
            return Ok(());
        }
        let (sink, _) = conn.sink.as_mut().expect("connected by the caller");
        for channel in channels {
            sink.subscribe(&channel)
                .await
                .map_err(|e| ServerFailure::from_redis(&e))?;
            lock(&self.dropped).remove(&channel);
            conn.subscribed.insert(channel);
        }
        wake_everyone(&self.table);
        Ok(())
    }

    fn join_if_subscribed(&self, channel: &[u8], token: &[u8]) -> Option<Wakes> {
        let conn = self.commands.try_lock().ok()?;
        let alive = |conn: &SubscriberConn| matches!(&conn.sink, Some((_, alive)) if alive.load(Ordering::Acquire));
        if !alive(&conn)
            || !conn.subscribed.contains(channel)
            || lock(&self.dropped).contains(channel)
        {
            return None;
        }
        let rx = self.add_user(channel, token);
        // The connection may have dropped in between; its last act wakes the waiters it knew,
        // which may not have included this one.
        if !alive(&conn) {
            drop(conn);
            self.release_user(channel, token);
            self.forget_if_unused(channel);
            return None;
        }
        Some(rx)
    }

    /// Registers one waiter of `channel` with `token`, to be woken by messages naming it.
    fn add_user(&self, channel: &[u8], token: &[u8]) -> Wakes {
        let mut table = lock(&self.table);
        let entry = table.entry(channel.to_vec()).or_default();
        entry.users += 1;
        let (count, notify) = entry
            .waiters
            .entry(token.to_vec())
            .or_insert_with(|| (0, watch::channel(Wake::default()).0));
        *count += 1;
        notify.subscribe()
    }

    /// Drops one waiter; returns true when the channel has none left and no task lingers to
    /// unsubscribe it yet (the caller starts one).
    fn release_user(&self, channel: &[u8], token: &[u8]) -> bool {
        let mut table = lock(&self.table);
        match table.get_mut(channel) {
            Some(entry) => {
                if let Some((count, _)) = entry.waiters.get_mut(token) {
                    *count -= 1;
                    if *count == 0 {
                        entry.waiters.remove(token);
                    }
                }
                entry.users = entry.users.saturating_sub(1);
                if entry.users > 0 {
                    return false;
                }
                entry.idle_since = Some(Instant::now());
                !std::mem::replace(&mut entry.lingering, true)
            }
            None => false,
        }
    }

    /// Forgets `channel` if it has no waiter (after a SUBSCRIBE that failed: nothing to
    /// unsubscribe).
    fn forget_if_unused(&self, channel: &[u8]) {
        let mut table = lock(&self.table);
        if table.get(channel).is_some_and(|e| e.users == 0) {
            table.remove(channel);
        }
    }

    /// Unsubscribes `channel` once it has had no waiter for [`SUBSCRIPTION_LINGER`].
    async fn unsubscribe_if_unused(&self, channel: Vec<u8>) {
        let mut wait = SUBSCRIPTION_LINGER;
        let mut conn = loop {
            tokio::time::sleep(wait).await;
            let conn = self.commands.lock().await;
            let mut table = lock(&self.table);
            let Some(entry) = table.get_mut(&channel) else {
                return;
            };
            if entry.users > 0 {
                // In use again: the waiter that next leaves it idle starts a new linger.
                entry.lingering = false;
                return;
            }
            let idle = entry
                .idle_since
                .map_or(SUBSCRIPTION_LINGER, |t| t.elapsed());
            if idle >= SUBSCRIPTION_LINGER {
                table.remove(&channel);
                drop(table);
                break conn;
            }
            wait = SUBSCRIPTION_LINGER - idle;
        };
        if conn.subscribed.remove(&channel) {
            if let Some((sink, _)) = conn.sink.as_mut() {
                // Best effort: a failure here only leaves an idle subscription behind.
                let _ = tokio::time::timeout(UNSUBSCRIBE_TIMEOUT, sink.unsubscribe(&channel)).await;
            }
        }
    }
}

/// Wakes every waiter of every channel (a lost connection: they retry at once, then fall back
/// to timed retries).
fn wake_everyone(table: &Table) {
    for entry in lock(table).values() {
        entry.wake_all();
    }
}

/// What a cluster's nodes push to the subscriber: a message wakes the waiter it names, and one
/// its sender did not see this subscriber listen for (a plain subscription left on a node
/// that no longer owns the slot) marks the connection stale (`alive` false: the next
/// subscription opens a new one); a channel dropped by the cluster (its slot migrated to
/// another node) wakes its waiters and is subscribed again by the next one; a lost node
/// connection wakes everyone.
fn dispatch_push(
    table: &Table,
    dropped: &StdMutex<HashSet<Vec<u8>>>,
    alive: &AtomicBool,
    info: PushInfo,
) {
    let bytes = |v: Option<&Value>| match v {
        Some(Value::BulkString(b)) => Some(b.clone()),
        _ => None,
    };
    match info.kind {
        PushKind::SMessage | PushKind::Message => {
            if let (Some(channel), Some(payload)) =
                (bytes(info.data.first()), bytes(info.data.get(1)))
            {
                if info.kind == PushKind::Message && unheard(&payload) {
                    alive.store(false, Ordering::Release);
                }
                if let Some(entry) = lock(table).get(&channel) {
                    entry.wake(&payload);
                }
            }
        }
        PushKind::SUnsubscribe => {
            if let Some(channel) = bytes(info.data.first()) {
                lock(dropped).insert(channel.clone());
                if let Some(entry) = lock(table).get(&channel) {
                    entry.wake_all();
                }
            }
        }
        PushKind::Disconnection => wake_everyone(table),
        _ => {}
    }
}

impl Subscriber {
    /// Whether any waiter is registered on `channel` (tests).
    #[cfg(test)]
    pub fn has_waiters(&self, channel: &[u8]) -> bool {
        lock(&self.table).contains_key(channel)
    }
}

/// A waiter registered by [`Subscriber::subscribe`], taken back out on drop unless `done`.
struct NewUser<'a> {
    sub: &'a Subscriber,
    channel: &'a [u8],
    token: &'a [u8],
    done: bool,
}

impl Drop for NewUser<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.sub.release_user(self.channel, self.token);
            self.sub.forget_if_unused(self.channel);
        }
    }
}

/// One waiter's subscription to a release channel on one server, woken when a release names
/// its token (or names nobody); unsubscribes (after a short linger) when the last waiter
/// drops it.
pub(crate) struct Subscription {
    sub: Arc<Subscriber>,
    runtime: Option<tokio::runtime::Handle>,
    channel: Vec<u8>,
    token: Vec<u8>,
    rx: Wakes,
}

impl Subscription {
    fn new(sub: &Arc<Subscriber>, channel: &[u8], token: &[u8], rx: Wakes) -> Self {
        Subscription {
            sub: Arc::clone(sub),
            runtime: tokio::runtime::Handle::try_current().ok(),
            channel: channel.to_vec(),
            token: token.to_vec(),
            rx,
        }
    }

    /// Marks every notification so far as seen.
    pub fn mark_seen(&mut self) {
        self.rx.borrow_and_update();
    }

    /// Completes at the next notification after the last [`mark_seen`](Self::mark_seen).
    pub async fn notified(&mut self) {
        if self.rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }

    /// The last handoff this server's messages named for the token, if any (it names the
    /// acquire call it was for by its place's arrival: the caller checks that it is its own).
    pub fn handoff(&self) -> Option<Handoff> {
        self.rx.borrow().handoff
    }

    /// What this server's messages said so far: compared with an earlier value, whether a
    /// plain wake-up came since, or only a new handoff.
    pub fn wake(&self) -> Wake {
        *self.rx.borrow()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.sub.release_user(&self.channel, &self.token) {
            if let Some(runtime) = &self.runtime {
                let sub = Arc::clone(&self.sub);
                let channel = std::mem::take(&mut self.channel);
                runtime.spawn(async move { sub.unsubscribe_if_unused(channel).await });
            }
        }
    }
}
