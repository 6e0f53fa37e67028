//! One Redis server: a lazily opened multiplexed connection that is reopened after it breaks
//! (for a Sentinel entry: to the master the sentinels name; for a cluster entry: a cluster
//! connection, which routes each script by its first key's slot, follows MOVED and ASK and
//! refreshes its slot map after a failover), script calls within a per-call limit, and the
//! server's subscriber for release notifications ([`crate::pubsub`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex};
use std::time::{Duration, Instant};

use redis::{AsyncConnectionConfig, FromRedisValue};
use tokio::sync::watch;

use crate::config::ReplicaAck;
use crate::conn::Conn;
use crate::deadline::Clock;
use crate::direct::Direct;
use crate::failure::ServerFailure;
use crate::identity::Identities;
use crate::lane::{self, Lane, LoopIo};
use crate::probe;
use crate::pubsub::{Source, Subscriber, Subscription};
use crate::scripts::ScriptCall;
use crate::sync::lock;
use crate::timing;
use crate::url::{ClusterSpec, SentinelSpec, ServerSpec};

/// One server of the manager.
pub(crate) struct Server {
    /// `host:port[/db]`, for messages.
    pub label: String,
    /// What to connect to: the server itself, or a template for the master a Sentinel names.
    client: redis::Client,
    sentinel: Option<SentinelSpec>,
    /// For a cluster entry: its seed nodes.
    cluster: Option<ClusterSpec>,
    /// The client of the last connection opened (the Sentinel's current master), for the
    /// subscriber.
    current: StdMutex<redis::Client>,
    connect_timeout: Duration,
    state: StdMutex<ConnState>,
    /// For a plain TCP server of a manager that has one: the event loop's connections
    /// ([`crate::lane`]), and their command connection.
    loop_io: Option<Arc<dyn LoopIo>>,
    loop_state: StdMutex<ConnState>,
    /// For a plain server that is the manager's only one: the calling threads' own
    /// connections ([`crate::lane`]'s caller lane).
    direct: Option<Direct>,
    generation: AtomicU64,
    sub: Arc<Subscriber>,
    /// Keeps the time limits of the calls (a share in the process's deadline thread).
    clock: Clock,
    /// Run once on each new connection: a missing ACL permission fails the first call.
    preflight: Arc<ScriptCall>,
    /// The processes the manager's servers reached (shared by them): one process, one vote.
    identities: Arc<Identities>,
    /// Replica acknowledgment of the writes that ask for it, when the manager wants it.
    replica_ack: Option<ReplicaAck>,
    /// Whether the last connection opened to a cluster found sharded pub/sub (SPUBLISH): its
    /// subscriber listens the same way the scripts publish.
    sharded: AtomicBool,
}

/// The preflight's reply on a cluster without sharded pub/sub (`preflight.lua`).
const NO_SHARDED_PUBSUB: i64 = 2;

/// The command connection: none, being opened by a background task, open, or failed for a
/// reason that retrying cannot cure (told to every call for a while, see
/// [`timing::CONFIG_FAILURE_HOLD`]).
enum ConnState {
    Idle,
    Connecting(watch::Receiver<Option<Result<(), ServerFailure>>>),
    Ready(u64, Conn),
    Failed(Instant, ServerFailure),
}

impl Server {
    /// A server that runs `preflight` on each connection it opens (see `preflight.lua`);
    /// `only` when it is its manager's only server.
    pub fn new(
        spec: &ServerSpec,
        (connect_timeout, replica_ack, only): (Duration, Option<ReplicaAck>, bool),
        clock: Clock,
        (preflight, identities): (Arc<ScriptCall>, Arc<Identities>),
        loop_io: Option<&Arc<dyn LoopIo>>,
    ) -> Server {
        let plain_tcp = matches!(
            spec.client.get_connection_info().addr(),
            redis::ConnectionAddr::Tcp(..)
        );
        let loop_io = loop_io
            .filter(|_| plain_tcp && spec.sentinel.is_none() && spec.cluster.is_none())
            .cloned();
        let only = only && spec.sentinel.is_none() && spec.cluster.is_none();
        Server {
            loop_io,
            loop_state: StdMutex::new(ConnState::Idle),
            direct: Direct::new(&spec.client, connect_timeout, only),
            preflight,
            identities,
            replica_ack,
            label: spec.label.clone(),
            client: spec.client.clone(),
            sentinel: spec.sentinel.clone(),
            cluster: spec.cluster.clone(),
            current: StdMutex::new(spec.client.clone()),
            connect_timeout,
            state: StdMutex::new(ConnState::Idle),
            generation: AtomicU64::new(0),
            sharded: AtomicBool::new(true),
            sub: Arc::default(),
            clock,
        }
    }

    /// The open connection, opening one if needed. Opening runs in a background task bounded by
    /// the connect timeout, so a caller that gives up (its own call timeout) does not waste
    /// the handshake: the next caller finds the connection open.
    async fn connection(self: &Arc<Self>, lane: Lane) -> Result<(u64, Conn), ServerFailure> {
        loop {
            let mut rx = {
                let mut state = lock(self.slot(lane));
                match &*state {
                    ConnState::Ready(generation, conn) => return Ok((*generation, conn.clone())),
                    ConnState::Connecting(rx) => rx.clone(),
                    ConnState::Failed(at, failure)
                        if at.elapsed() < timing::CONFIG_FAILURE_HOLD =>
                    {
                        return Err(failure.clone())
                    }
                    ConnState::Idle | ConnState::Failed(..) => {
                        let (tx, rx) = watch::channel(None);
                        *state = ConnState::Connecting(rx.clone());
                        let server = Arc::clone(self);
                        tokio::spawn(async move { server.open(tx, lane).await });
                        rx
                    }
                }
            };
            let outcome = rx
                .wait_for(Option::is_some)
                .await
                .map(|o| o.clone())
                .unwrap_or(Some(Err(ServerFailure::Connection(
                    "connect task ended".into(),
                ))));
            if let Some(Err(failure)) = outcome {
                return Err(failure);
            }
        }
    }

    /// The lane a call polled in `lane` rides on this server.
    fn lane(&self, lane: Lane) -> Lane {
        match lane {
            Lane::Loop if self.loop_io.is_some() => Lane::Loop,
            Lane::Caller if self.direct.is_some() && lane::on_caller_thread() => Lane::Caller,
            _ => Lane::Runtime,
        }
    }

    fn slot(&self, lane: Lane) -> &StdMutex<ConnState> {
        match lane {
            Lane::Loop => &self.loop_state,
            Lane::Runtime | Lane::Caller => &self.state,
        }
    }

    /// The connection a call in `lane` sends on: on the caller lane the calling thread's own
    /// (opened once the runtime's is up), else [`connection`](Self::connection).
    async fn command_connection(
        self: &Arc<Self>,
        lane: Lane,
    ) -> Result<(u64, Conn), ServerFailure> {
        if let (Some(direct), Lane::Caller) = (&self.direct, lane) {
            let open = direct.get().or_else(|| {
                let up = matches!(&*lock(&self.state), ConnState::Ready(..));
                up.then(|| direct.open(self.generation.fetch_add(1, Ordering::Relaxed) + 1))
                    .flatten()
            });
            if let Some((generation, conn)) = open {
                return Ok((generation, Conn::Direct(conn)));
            }
        }
        self.connection(lane).await
    }

    async fn open(&self, done: watch::Sender<Option<Result<(), ServerFailure>>>, lane: Lane) {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(None)
            .set_response_timeout(None);
        let attempt = async {
            let mut conn = self.connect(&config, lane).await?;
            let checked = run_script::<i64>(&mut conn, &self.preflight)
                .await
                .map_err(|e| ServerFailure::from_script(&e, self.preflight.source()))?;
            if checked == NO_SHARDED_PUBSUB {
                // A cluster of Redis 6.2: wake-ups by PUBLISH, heard on any node.
                conn = conn.unsharded();
            }
            self.sharded.store(conn.sharded(), Ordering::Relaxed);
            self.identities.claim(&mut conn, &self.label).await?;
            Ok(conn)
        };
        let result = match tokio::time::timeout(self.connect_timeout, attempt).await {
            Ok(result) => result,
            Err(_) => Err(ServerFailure::Connection(format!(
                "connect timed out after {} ms",
                self.connect_timeout.as_millis()
            ))),
        };
        let result = match result {
            // A Sentinel's master is whatever the sentinels say, a cluster's nodes whatever
            // its slot map says: nothing to probe.
            Err(failure) if self.sentinel.is_none() && self.cluster.is_none() => {
                let addr = self.client.get_connection_info().addr();
                Err(probe::explain(addr, failure, self.connect_timeout).await)
            }
            Err(failure) if self.cluster.is_some() => {
                let nodes = self.cluster.as_ref().map_or(&[][..], |c| &c.nodes[..]);
                Err(probe::cluster(nodes, failure, self.connect_timeout).await)
            }
            other => other,
        };
        let mut state = lock(self.slot(lane));
        let reply = match result {
            Ok(conn) => {
                let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
                *state = ConnState::Ready(generation, conn);
                Ok(())
            }
            Err(failure) => {
                *state = if failure.is_permanent() {
                    ConnState::Failed(Instant::now(), failure.clone())
                } else {
                    ConnState::Idle
                };
                Err(failure)
            }
        };
        done.send_replace(Some(reply));
    }

    /// A new command connection: to the cluster, to the server on the event loop's lane
    /// (through its [`LoopIo`]), or to the server (for a Sentinel entry, the master the
    /// sentinels name, checked to be one; it becomes the subscriber's server).
    async fn connect(
        &self,
        config: &AsyncConnectionConfig,
        lane: Lane,
    ) -> Result<Conn, ServerFailure> {
        if let (Some(io), Lane::Loop) = (&self.loop_io, lane) {
            let info = self.client.get_connection_info().clone();
            let conn = io.connect(info, config.clone()).await;
            return Ok(Conn::Single(
                conn.map_err(|e| ServerFailure::from_redis(&e))?,
            ));
        }
        if let Some(cluster) = &self.cluster {
            let client = cluster
                .client()
                .map_err(|e| ServerFailure::from_redis(&e))?;
            let conn = client
                .get_async_connection()
                .await
                .map_err(|e| ServerFailure::from_redis(&e))?;
            return Ok(Conn::Cluster(conn, true));
        }
        let client = self.resolve().await?;
        let sentinel = self.sentinel.is_some();
        let mut conn = client
            .get_multiplexed_async_connection_with_config(config)
            .await
            .map_err(|e| {
                let failure = ServerFailure::from_redis(&e);
                // The master the sentinels named refusing: a failover is on its way.
                if sentinel {
                    failure.in_failover()
                } else {
                    failure
                }
            })?;
        if sentinel {
            // During a failover a sentinel may still name the old master: make sure.
            let role: Vec<redis::Value> = redis::cmd("ROLE")
                .query_async(&mut conn)
                .await
                .map_err(|e| ServerFailure::from_redis(&e))?;
            if !matches!(role.first(), Some(redis::Value::BulkString(r)) if r == b"master") {
                return Err(ServerFailure::Connection(
                    "the server the sentinels named is not a master (failover in progress)".into(),
                ));
            }
        }
        *lock(&self.current) = client;
        Ok(Conn::Single(conn))
    }

    /// The client to connect with: the server's own, or the master the first answering
    /// sentinel names.
    async fn resolve(&self) -> Result<redis::Client, ServerFailure> {
        match &self.sentinel {
            None => Ok(self.client.clone()),
            Some(spec) => crate::sentinel::master(spec, &self.client).await,
        }
    }

    fn forget_connection(&self, generation: u64) {
        if let Some(direct) = &self.direct {
            direct.forget(generation);
        }
        for slot in [&self.state, &self.loop_state] {
            let mut state = lock(slot);
            if matches!(&*state, ConnState::Ready(g, _) if *g == generation) {
                *state = ConnState::Idle;
            }
        }
    }

    /// Runs a script call within `timeout` (kept by [`crate::deadline`]: no tokio timer per
    /// call). When the connection turns out to be broken (e.g. the server restarted), it is
    /// reopened and the script run once more: every fencelock script has the same effect when
    /// repeated with the same token, so a retry after a lost reply is safe. A server that does
    /// not know the script (a restart empties its cache) is sent it and asked again.
    ///
    /// With replica acknowledgment, a call that asks for it is followed on the same
    /// connection (the same node, on a cluster) by `WAIT`, in one round trip; fewer
    /// acknowledgments than asked make it a [`ServerFailure::NotReplicated`].
    pub async fn eval<T: FromRedisValue>(
        self: &Arc<Self>,
        call: &ScriptCall,
        timeout: Duration,
    ) -> Result<T, ServerFailure> {
        let lane = self.lane(lane::current());
        let run = async {
            let mut retried = false;
            loop {
                let (generation, mut conn) = self.command_connection(lane).await?;
                if let Conn::Direct(direct) = &conn {
                    direct.limit(timeout);
                }
                let ack = self.replica_ack.filter(|_| call.wants_ack()).map(|a| {
                    // At least 1 ms: WAIT 0 would wait for ever.
                    let wait = a.timeout.min(timeout * 3 / 4).max(Duration::from_millis(1));
                    (a.replicas, wait)
                });
                let result = match ack {
                    None => run_script(&mut conn, call).await,
                    Some(ack) => match run_script_acked(&mut conn, call, ack).await {
                        Ok((_, acked)) if acked < i64::from(ack.0) => {
                            return Err(ServerFailure::NotReplicated(format!(
                                "written, but acknowledged by {acked} of {} replicas within {} ms (WAIT), so not counted",
                                ack.0,
                                ack.1.as_millis()
                            )))
                        }
                        other => other.map(|(value, _)| value),
                    },
                };
                match result {
                    Ok(value) => return Ok(value),
                    Err(e) if matches!(conn, Conn::Direct(_)) && e.is_timeout() => {
                        // The reply may still come: the connection is out of step.
                        self.forget_connection(generation);
                        return Err(ServerFailure::Timeout(timeout));
                    }
                    Err(e) => {
                        let mut failure = ServerFailure::from_script(&e, call.source());
                        if self.cluster.is_some() {
                            // A node the slot map names: a failover may be moving its slots.
                            failure = failure.in_failover();
                        }
                        // A cluster slot half moved: the script's keys are split between two
                        // nodes for a moment (TRYAGAIN), or a redirection is not settled yet:
                        // try again within the call's time.
                        if matches!(failure, ServerFailure::SlotMoving(_)) {
                            tokio::time::sleep(timing::TRYAGAIN_PAUSE).await;
                            continue;
                        }
                        if matches!(
                            failure,
                            ServerFailure::Connection(_) | ServerFailure::NotListening(_)
                        ) {
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
        let result = match crate::deadline::within(&self.clock, timeout, run).await {
            Ok(result) => result,
            Err(_) => Err(ServerFailure::Timeout(timeout)),
        };
        if let Err(failure) = &result {
            crate::measure::server_error(failure.label());
        }
        result
    }

    /// Joins a release channel this server's subscriber already listens to, without a network
    /// call; `None` when it does not (then [`subscribe`](Self::subscribe)).
    pub fn join_subscribed(&self, channel: &[u8], token: &[u8]) -> Option<Subscription> {
        self.sub.join_subscribed(channel, token)
    }

    /// Subscribes to a release channel on this server (the master of the last connection
    /// opened, for a Sentinel entry; the node that owns the channel's slot, for a cluster with
    /// sharded pub/sub, any node for one without), within `timeout`.
    pub async fn subscribe(
        &self,
        channel: &[u8],
        token: &[u8],
        timeout: Duration,
    ) -> Result<Subscription, ServerFailure> {
        if let Some(cluster) = &self.cluster {
            return (self.sub)
                .subscribe(
                    Source::Cluster(cluster, self.sharded.load(Ordering::Relaxed)),
                    channel,
                    token,
                    timeout,
                )
                .await;
        }
        let client = lock(&self.current).clone();
        (self.sub)
            .subscribe(Source::Server(&client), channel, token, timeout)
            .await
    }
}

/// Runs a script call on `conn` followed by `WAIT replicas ms` in one pipeline (on a cluster,
/// routed to the master of the script's slot, where its write happened): the reply and how
/// many replicas acknowledged.
async fn run_script_acked<T: FromRedisValue>(
    conn: &mut Conn,
    call: &ScriptCall,
    (replicas, within): (u32, Duration),
) -> redis::RedisResult<(T, i64)> {
    let mut pipe = redis::pipe();
    pipe.add_command(call.cmd_for(conn.route()).clone())
        .cmd("WAIT")
        .arg(replicas)
        .arg(within.as_millis() as u64);
    run_loaded(conn, call, Request::Pipeline(&pipe)).await
}

/// Runs a script call on `conn`.
async fn run_script<T: FromRedisValue>(
    conn: &mut Conn,
    call: &ScriptCall,
) -> redis::RedisResult<T> {
    let cmd = call.cmd_for(conn.route());
    run_loaded(conn, call, Request::Cmd(cmd)).await
}

/// What a script call sends: its EVALSHA alone, or in a pipeline.
enum Request<'a> {
    Cmd(&'a redis::Cmd),
    Pipeline(&'a redis::Pipeline),
}

/// Sends `request`; a server that does not know `call`'s script (a restart empties its cache)
/// is sent it and asked again. On a cluster SCRIPT LOAD goes to every master (a replica
/// promoted by a failover may not know the script yet).
async fn run_loaded<T: FromRedisValue>(
    conn: &mut Conn,
    call: &ScriptCall,
    request: Request<'_>,
) -> redis::RedisResult<T> {
    let send = async |conn: &mut Conn| match &request {
        Request::Cmd(cmd) => cmd.query_async(conn).await,
        Request::Pipeline(pipe) => pipe.query_async(conn).await,
    };
    match send(conn).await {
        Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
            call.script().load_async(conn).await?;
            send(conn).await
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(url: &str) -> Arc<Server> {
        let spec = ServerSpec {
            client: redis::Client::open(url).unwrap(),
            sentinel: None,
            cluster: None,
            label: url.to_owned(),
            tls: false,
        };
        let shared = (Arc::new(ScriptCall::preflight(b"")), Arc::default());
        Arc::new(Server::new(
            &spec,
            (Duration::from_secs(2), None, true),
            Clock::share(),
            shared,
            None,
        ))
    }

    fn waiting(server: &Server, channel: &[u8]) -> bool {
        server.sub.has_waiters(channel)
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
        assert!(matches!(r, Err(ServerFailure::Timeout(_))), "{:?}", r.err());
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
}
