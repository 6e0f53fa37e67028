//! One Redis server: a lazily opened multiplexed connection that is reopened after it breaks,
//! a per-call timeout, and a shared subscriber for release notifications.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use redis::aio::{MultiplexedConnection, PubSubSink};
use redis::{AsyncConnectionConfig, FromRedisValue, RedisError, Script};
use tokio::sync::watch;

use crate::config::{SentinelSpec, ServerSpec};
use crate::deadline::Clock;

/// How long an unused release subscription is kept, so that a busy lock does not cost a
/// SUBSCRIBE/UNSUBSCRIBE pair per wait.
const SUBSCRIPTION_LINGER: Duration = Duration::from_secs(2);

/// Why one server did not answer a call as hoped.
#[derive(Debug, Clone)]
pub(crate) enum Failure {
    /// No reply within the per-server timeout.
    Timeout(Duration),
    /// Could not connect, or the connection broke.
    Connection(String),
    /// The server refused our credentials or permissions, or the TLS handshake failed on a
    /// certificate: retrying will not help.
    Auth(String),
    /// The server answered with an error (for example WRONGTYPE) or an unexpected reply.
    Reply(String),
}

impl Failure {
    /// Failures that retrying will not cure.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Failure::Auth(_) | Failure::Reply(_))
    }

    fn from_redis(e: &RedisError) -> Failure {
        // Messages of redis-rs name the command and the server's reply; they do not contain
        // URLs or passwords.
        if e.is_timeout() {
            Failure::Timeout(Duration::ZERO)
        } else if e.code() == Some("READONLY") || e.to_string().contains("READONLY") {
            // A replica, e.g. a master demoted by a failover: reconnect (and re-ask the
            // sentinels) rather than fail for good.
            Failure::Connection("the server is a read-only replica".into())
        } else if e.code() == Some("NOPERM") {
            // The ACL user lacks a command, key or channel (the detail names which).
            Failure::Auth(format!(
                "permission denied by the server's ACL: {}",
                e.detail().unwrap_or("NOPERM")
            ))
        } else if e.kind() == redis::ErrorKind::AuthenticationFailed
            || e.code() == Some("WRONGPASS")
            || e.code() == Some("NOAUTH")
        {
            Failure::Auth(format!(
                "authentication failed ({})",
                e.code().unwrap_or("bad credentials")
            ))
        } else if e.to_string().contains("certificate") {
            // A TLS handshake that failed on a certificate: configuration, not a transient
            // network problem (the message names the reason, never key material).
            Failure::Auth(format!("TLS handshake failed: {e}"))
        } else if e.is_io_error()
            || e.is_connection_dropped()
            || e.is_connection_refusal()
            || e.is_unrecoverable_error()
        {
            Failure::Connection(e.to_string())
        } else {
            Failure::Reply(e.to_string())
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Timeout(t) if t.is_zero() => f.write_str("timed out"),
            Failure::Timeout(t) => write!(f, "no reply within {} ms", t.as_millis()),
            Failure::Connection(m) => write!(f, "connection failed: {m}"),
            Failure::Auth(m) => f.write_str(m),
            Failure::Reply(m) => write!(f, "unexpected reply: {m}"),
        }
    }
}

fn lock<T>(m: &StdMutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these short critical sections leaves plain data behind,
    // still consistent: keep going rather than poison every later call.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One server of the manager.
pub(crate) struct Server {
    /// `host:port[/db]`, for messages.
    pub label: String,
    /// What to connect to: the server itself, or a template for the master a Sentinel names.
    client: redis::Client,
    sentinel: Option<SentinelSpec>,
    /// The client of the last connection opened (the Sentinel's current master), for the
    /// subscriber.
    current: StdMutex<redis::Client>,
    connect_timeout: Duration,
    state: StdMutex<ConnState>,
    generation: AtomicU64,
    sub: Subscriber,
    /// Keeps the time limits of the calls (a share in the process's deadline thread).
    clock: Clock,
}

/// The command connection: none, being opened by a background task, or open.
enum ConnState {
    Idle,
    Connecting(watch::Receiver<Option<Result<(), Failure>>>),
    Ready(u64, MultiplexedConnection),
}

impl Server {
    pub fn new(spec: &ServerSpec, connect_timeout: Duration, clock: Clock) -> Server {
        Server {
            label: spec.label.clone(),
            client: spec.client.clone(),
            sentinel: spec.sentinel.clone(),
            current: StdMutex::new(spec.client.clone()),
            connect_timeout,
            state: StdMutex::new(ConnState::Idle),
            generation: AtomicU64::new(0),
            sub: Subscriber::default(),
            clock,
        }
    }

    /// The open connection, opening one if needed. Opening runs in a background task bounded by
    /// the connect timeout, so a caller that gives up (its own call timeout) does not waste
    /// the handshake: the next caller finds the connection open.
    async fn connection(self: &Arc<Self>) -> Result<(u64, MultiplexedConnection), Failure> {
        loop {
            let mut rx = {
                let mut state = lock(&self.state);
                match &*state {
                    ConnState::Ready(generation, conn) => return Ok((*generation, conn.clone())),
                    ConnState::Connecting(rx) => rx.clone(),
                    ConnState::Idle => {
                        let (tx, rx) = watch::channel(None);
                        *state = ConnState::Connecting(rx.clone());
                        let server = Arc::clone(self);
                        tokio::spawn(async move { server.open(tx).await });
                        rx
                    }
                }
            };
            let outcome = rx
                .wait_for(Option::is_some)
                .await
                .map(|o| o.clone())
                .unwrap_or(Some(Err(Failure::Connection("connect task ended".into()))));
            if let Some(Err(failure)) = outcome {
                return Err(failure);
            }
        }
    }

    async fn open(&self, done: watch::Sender<Option<Result<(), Failure>>>) {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(None)
            .set_response_timeout(None);
        let attempt = async {
            let client = self.resolve().await?;
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await
                .map_err(|e| Failure::from_redis(&e))?;
            if self.sentinel.is_some() {
                // During a failover a sentinel may still name the old master: make sure.
                let role: Vec<redis::Value> = redis::cmd("ROLE")
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| Failure::from_redis(&e))?;
                if !matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
                    return Err(Failure::Connection(
                        "the server the sentinels named is not a master (failover in progress)"
                            .into(),
                    ));
                }
            }
            *lock(&self.current) = client;
            Ok(conn)
        };
        let result = match tokio::time::timeout(self.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(Failure::Connection(format!(
                "connect timed out after {} ms",
                self.connect_timeout.as_millis()
            ))),
        };
        let mut state = lock(&self.state);
        let reply = match result {
            Ok(conn) => {
                let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
                *state = ConnState::Ready(generation, conn);
                Ok(())
            }
            Err(failure) => {
                *state = ConnState::Idle;
                Err(failure)
            }
        };
        done.send_replace(Some(reply));
    }

    /// The client to connect with: the server's own, or the master the first answering
    /// sentinel names.
    async fn resolve(&self) -> Result<redis::Client, Failure> {
        let Some(spec) = &self.sentinel else {
            return Ok(self.client.clone());
        };
        let mut why = Vec::new();
        for sentinel in &spec.sentinels {
            let asked = async {
                let mut conn = sentinel.get_multiplexed_async_connection().await?;
                redis::cmd("SENTINEL")
                    .arg("get-master-addr-by-name")
                    .arg(&spec.master)
                    .query_async::<Option<(String, u16)>>(&mut conn)
                    .await
            };
            match asked.await {
                Ok(Some((host, port))) => {
                    let info = self
                        .client
                        .get_connection_info()
                        .clone()
                        .set_addr(redis::ConnectionAddr::Tcp(host, port));
                    return redis::Client::open(info).map_err(|e| Failure::from_redis(&e));
                }
                Ok(None) => why.push(format!(
                    "{} does not know master {:?}",
                    sentinel.get_connection_info().addr(),
                    spec.master
                )),
                Err(e) => why.push(format!(
                    "{}: {}",
                    sentinel.get_connection_info().addr(),
                    Failure::from_redis(&e)
                )),
            }
        }
        Err(Failure::Connection(format!(
            "no sentinel named a master: {}",
            why.join("; ")
        )))
    }

    fn forget_connection(&self, generation: u64) {
        let mut state = lock(&self.state);
        if matches!(&*state, ConnState::Ready(g, _) if *g == generation) {
            *state = ConnState::Idle;
        }
    }

    /// Runs a script with the given keys and arguments, within `timeout` (kept by
    /// [`crate::deadline`]: no tokio timer per call). When the connection turns out to be
    /// broken (e.g. the server restarted), it is reopened and the script run once more: every
    /// fencelock script has the same effect when repeated with the same token, so a retry
    /// after a lost reply is safe.
    pub async fn eval<T: FromRedisValue>(
        self: &Arc<Self>,
        script: &Script,
        keys: &[&[u8]],
        args: &[&[u8]],
        timeout: Duration,
    ) -> Result<T, Failure> {
        // One EVALSHA command, built once and sized up front (redis-rs's ScriptInvocation
        // copies every key and argument twice more before sending them).
        let size = keys.iter().chain(args).map(|a| a.len()).sum::<usize>() + 7 + 40 + 4;
        let mut cmd = redis::Cmd::with_capacity(3 + keys.len() + args.len(), size);
        cmd.arg("EVALSHA").arg(script.get_hash()).arg(keys.len());
        for a in keys.iter().chain(args) {
            cmd.arg(*a);
        }
        let call = async {
            let mut retried = false;
            loop {
                let (generation, mut conn) = self.connection().await?;
                let mut result = cmd.query_async(&mut conn).await;
                if matches!(&result, Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript))
                {
                    // The server does not know the script (yet: a restart empties its cache).
                    result = match script.load_async(&mut conn).await {
                        Ok(_) => cmd.query_async(&mut conn).await,
                        Err(e) => Err(e),
                    };
                }
                match result {
                    Ok(value) => return Ok(value),
                    Err(e) => {
                        let failure = Failure::from_redis(&e);
                        if matches!(failure, Failure::Connection(_)) {
                            self.forget_connection(generation);
                            if !retried {
                                retried = true;
                                continue;
                            }
                        }
                        return Err(failure);
                    }
                }
            }
        };
        match crate::deadline::within(&self.clock, timeout, call).await {
            Ok(result) => result,
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }

    /// Joins a release channel this server's subscriber already listens to, without a network
    /// call; `None` when it does not (then [`subscribe`](Self::subscribe)).
    pub fn join_subscribed(self: &Arc<Self>, channel: &[u8], token: &[u8]) -> Option<Subscription> {
        let rx = self.sub.join_subscribed(channel, token)?;
        Some(Subscription::new(self, channel, token, rx))
    }

    /// Subscribes to a release channel on this server, within `timeout`.
    pub async fn subscribe(
        self: &Arc<Self>,
        channel: &[u8],
        token: &[u8],
        timeout: Duration,
    ) -> Result<Subscription, Failure> {
        let client = lock(&self.current).clone();
        match tokio::time::timeout(timeout, self.sub.subscribe(&client, channel, token)).await {
            Ok(Ok(rx)) => Ok(Subscription::new(self, channel, token, rx)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Failure::Timeout(timeout)),
        }
    }
}

/// Release notifications from one server, shared by every waiter of the manager.
#[derive(Default)]
struct Subscriber {
    /// Serialises SUBSCRIBE/UNSUBSCRIBE and (re)connecting.
    commands: tokio::sync::Mutex<SubscriberConn>,
    /// Channel → (number of waiters, notification counter). Read by the dispatcher task.
    table: Arc<StdMutex<HashMap<Vec<u8>, ChannelEntry>>>,
}

#[derive(Default)]
struct SubscriberConn {
    sink: Option<(PubSubSink, Arc<AtomicBool>)>,
    subscribed: HashSet<Vec<u8>>,
}

/// A release that handed the lock to a waiter, as its message told it: the fencing counter the
/// server gave it and the arrival of the place it was handed to (which names the acquire call).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Handoff {
    pub fence: u64,
    pub arrival: u64,
}

/// Parses a release message, "COUNTER ARRIVAL TOKEN" (release.lua): the token it names and the
/// handoff (`None` for a counter of 0: a plain wake-up). Anything else names the whole payload
/// as the token (an empty one wakes every waiter).
fn parse_wake(payload: &[u8]) -> (&[u8], Option<Handoff>) {
    let mut parts = payload.splitn(3, |&b| b == b' ');
    let number = |p: Option<&[u8]>| std::str::from_utf8(p?).ok()?.parse::<u64>().ok();
    match (number(parts.next()), number(parts.next()), parts.next()) {
        (Some(fence), Some(arrival), Some(token)) => {
            (token, (fence > 0).then_some(Handoff { fence, arrival }))
        }
        _ => (payload, None),
    }
}

/// What a waiter's subscription hears: each release message that names it, and the last
/// handoff those messages reported.
type Wakes = watch::Receiver<Option<Handoff>>;

/// The waiters of one channel, by token: a release names the first waiter in line (the token
/// ends its message, see [`parse_wake`]) and only that waiter is woken; an empty message, or a
/// lost connection, wakes them all.
#[derive(Default)]
struct ChannelEntry {
    users: usize,
    /// Per waiting token: how many waiters, and the last handoff its messages named.
    waiters: HashMap<Vec<u8>, (usize, watch::Sender<Option<Handoff>>)>,
    /// When `users` last fell to 0.
    idle_since: Option<Instant>,
    /// A task lingers to unsubscribe the channel once it has been idle long enough: one such
    /// task per channel, however often the channel falls idle.
    lingering: bool,
}

impl ChannelEntry {
    fn wake_all(&self) {
        for (_, notify) in self.waiters.values() {
            notify.send_modify(|_| {});
        }
    }

    fn wake(&self, payload: &[u8]) {
        let (token, handoff) = parse_wake(payload);
        if token.is_empty() {
            self.wake_all();
        } else if let Some((_, notify)) = self.waiters.get(token) {
            notify.send_modify(|h| {
                if handoff.is_some() {
                    *h = handoff;
                }
            });
        }
    }
}

impl Subscriber {
    async fn subscribe(
        &self,
        client: &redis::Client,
        channel: &[u8],
        token: &[u8],
    ) -> Result<Wakes, Failure> {
        let mut conn = self.commands.lock().await;
        let alive = matches!(&conn.sink, Some((_, alive)) if alive.load(Ordering::Acquire));
        if !alive {
            conn.subscribed.clear();
            conn.sink = None;
            let pubsub = client
                .get_async_pubsub()
                .await
                .map_err(|e| Failure::from_redis(&e))?;
            let (sink, mut stream) = pubsub.split();
            let alive = Arc::new(AtomicBool::new(true));
            let table = Arc::clone(&self.table);
            let flag = Arc::clone(&alive);
            tokio::spawn(async move {
                while let Some(msg) = stream.next().await {
                    if let Some(entry) = lock(&table).get(msg.get_channel_name().as_bytes()) {
                        entry.wake(msg.get_payload_bytes());
                    }
                }
                flag.store(false, Ordering::Release);
                // Wake every waiter: they retry at once, then fall back to timed retries.
                for entry in lock(&table).values() {
                    entry.wake_all();
                }
            });
            conn.sink = Some((sink, alive));
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
                .map_err(|e| Failure::from_redis(&e))?;
            conn.subscribed.insert(channel.to_vec());
        }
        user.done = true;
        Ok(rx)
    }

    /// Joins `channel` without a network call when it is already subscribed on a live
    /// connection (another waiter of this manager holds it, or it lingers after a recent
    /// wait); `None` otherwise, or while a SUBSCRIBE or UNSUBSCRIBE is under way.
    fn join_subscribed(&self, channel: &[u8], token: &[u8]) -> Option<Wakes> {
        let conn = self.commands.try_lock().ok()?;
        let alive = |conn: &SubscriberConn| matches!(&conn.sink, Some((_, alive)) if alive.load(Ordering::Acquire));
        if !alive(&conn) || !conn.subscribed.contains(channel) {
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
            .or_insert_with(|| (0, watch::channel(None).0));
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
                let _ =
                    tokio::time::timeout(Duration::from_secs(1), sink.unsubscribe(&channel)).await;
            }
        }
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
    server: Arc<Server>,
    runtime: Option<tokio::runtime::Handle>,
    channel: Vec<u8>,
    token: Vec<u8>,
    rx: Wakes,
}

impl Subscription {
    fn new(server: &Arc<Server>, channel: &[u8], token: &[u8], rx: Wakes) -> Self {
        Subscription {
            server: Arc::clone(server),
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
        *self.rx.borrow()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if self.server.sub.release_user(&self.channel, &self.token) {
            if let Some(runtime) = &self.runtime {
                let server = Arc::clone(&self.server);
                let channel = std::mem::take(&mut self.channel);
                runtime.spawn(async move { server.sub.unsubscribe_if_unused(channel).await });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(url: &str) -> Arc<Server> {
        let spec = ServerSpec {
            client: redis::Client::open(url).unwrap(),
            sentinel: None,
            label: url.to_owned(),
            tls: false,
        };
        Arc::new(Server::new(&spec, Duration::from_secs(2), Clock::share()))
    }

    fn waiting(server: &Server, channel: &[u8]) -> bool {
        lock(&server.sub.table).contains_key(channel)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_subscribe_cut_short_leaves_no_waiter_behind() {
        let mut srv = fencelock_testkit::RedisServer::start();
        let server = server(&srv.url());
        // Open the subscriber's connection first, so that what hangs below is the SUBSCRIBE.
        drop(server.subscribe(b"warm", b"t0", MS(5000)).await.unwrap());
        srv.stop();
        // Timed out by the call's own limit...
        let r = server.subscribe(b"late", b"t1", MS(200)).await;
        assert!(matches!(r, Err(Failure::Timeout(_))), "{:?}", r.err());
        // ... and dropped by its caller.
        let cut = tokio::time::timeout(MS(200), server.subscribe(b"cut", b"t2", MS(10_000))).await;
        assert!(cut.is_err(), "the SUBSCRIBE hung on the stopped server");
        assert!(
            !waiting(&server, b"late"),
            "no waiter left on the timed-out channel"
        );
        assert!(
            !waiting(&server, b"cut"),
            "no waiter left on the cancelled channel"
        );
        srv.cont();
        // The connection still serves: a new waiter is woken by a message naming it.
        let mut sub = server.subscribe(b"late", b"t3", MS(5000)).await.unwrap();
        sub.mark_seen();
        assert!(waiting(&server, b"late"));
        srv.cmd(&[b"PUBLISH", b"late", b"0 0 t3"]);
        tokio::time::timeout(MS(5000), sub.notified())
            .await
            .expect("the waiter was woken");
        drop(sub);
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn release_messages_name_the_token_and_the_handoff() {
        assert_eq!(
            parse_wake(b"42 1795481775922188 abc.def"),
            (
                &b"abc.def"[..],
                Some(Handoff {
                    fence: 42,
                    arrival: 1795481775922188
                })
            )
        );
        // Tokens are any bytes, spaces included: everything after the second space.
        assert_eq!(
            parse_wake(b"7 1 a b c"),
            (
                &b"a b c"[..],
                Some(Handoff {
                    fence: 7,
                    arrival: 1
                })
            )
        );
        // A counter of 0 is a plain wake-up.
        assert_eq!(parse_wake(b"0 0 tok"), (&b"tok"[..], None));
        // Anything else is a token as a whole (an empty one wakes everyone).
        assert_eq!(parse_wake(b"tok"), (&b"tok"[..], None));
        assert_eq!(parse_wake(b"x 1 tok"), (&b"x 1 tok"[..], None));
        assert_eq!(parse_wake(b"1 tok"), (&b"1 tok"[..], None));
        assert_eq!(parse_wake(b""), (&b""[..], None));
    }
}
