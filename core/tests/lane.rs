//! Lanes (`fencelock::ffi_support::lane`): the calls a binding polls on its event loop's thread ride the
//! connections its `LoopIo` opens; everything else keeps the runtime's; an abandoned attempt's
//! undo rides the attempt's connection. The test's `LoopIo` names its connections, and
//! `CLIENT LIST` shows which connections the server saw commands on.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use fencelock::ffi_support::lane::{on_loop, LoopIo};
use fencelock::LockManager;
use fencelock_testkit::{wait_until_async, RedisServer, Reply};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, ConnectionInfo, RedisResult};

const MS: fn(u64) -> Duration = Duration::from_millis;
const LOOP_NAME: &str = "test-loop";

/// Opens ordinary connections, named so that `CLIENT LIST` tells them apart.
#[derive(Default)]
struct NamedLoop {
    opened: AtomicUsize,
}

impl LoopIo for NamedLoop {
    fn connect(
        &self,
        info: ConnectionInfo,
        config: AsyncConnectionConfig,
    ) -> Pin<Box<dyn Future<Output = RedisResult<MultiplexedConnection>> + Send>> {
        self.opened.fetch_add(1, Ordering::SeqCst);
        Box::pin(async move {
            let client = redis::Client::open(info)?;
            let mut conn = client
                .get_multiplexed_async_connection_with_config(&config)
                .await?;
            redis::cmd("CLIENT")
                .arg("SETNAME")
                .arg(LOOP_NAME)
                .query_async::<()>(&mut conn)
                .await?;
            Ok(conn)
        })
    }
}

/// `fut`, every poll of it inside `on_loop` (as a binding's executor polls its calls).
struct OnLoop<F>(Pin<Box<F>>);

impl<F: Future> Future for OnLoop<F> {
    type Output = F::Output;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        on_loop(|| self.0.as_mut().poll(cx))
    }
}

fn on_the_loop<F: Future>(fut: F) -> OnLoop<F> {
    OnLoop(Box::pin(fut))
}

/// The server's command connections (not subscribers, not the test's own): (loop's, others).
fn command_clients(server: &RedisServer) -> (usize, usize) {
    let Reply::Bulk(Some(list)) = server.cmd(&[b"CLIENT", b"LIST"]) else {
        panic!("CLIENT LIST failed");
    };
    let list = String::from_utf8(list).unwrap();
    let clients = list.lines().filter(|l| {
        !l.contains(" cmd=client|list ") && l.contains(" sub=0 ") && l.contains(" psub=0 ")
    });
    let (named, other): (Vec<&str>, Vec<&str>) =
        clients.partition(|l| l.contains(&format!(" name={LOOP_NAME} ")));
    (named.len(), other.len())
}

fn manager(server: &RedisServer, io: &Arc<NamedLoop>) -> LockManager {
    LockManager::builder([server.url()])
        .loop_io(Arc::clone(io) as Arc<dyn LoopIo>)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_polled_on_the_loop_ride_its_connections_and_the_others_the_runtimes() {
    let server = RedisServer::start();
    let io = Arc::new(NamedLoop::default());
    let m = manager(&server, &io);

    let lock = on_the_loop(m.acquire("a", MS(10_000), None)).await.unwrap();
    assert!(lock.fencing_token() > 0);
    on_the_loop(lock.release()).await.unwrap();
    assert_eq!(io.opened.load(Ordering::SeqCst), 1);
    assert_eq!(
        command_clients(&server),
        (1, 0),
        "only the loop's connection ran commands"
    );

    // The same manager, polled elsewhere: the runtime's connection.
    assert!(!m.is_locked("a").await.unwrap());
    assert_eq!(io.opened.load(Ordering::SeqCst), 1);
    assert_eq!(command_clients(&server), (1, 1));

    // And back on the loop: its connection, still open.
    let lock = on_the_loop(m.acquire("a", MS(10_000), None)).await.unwrap();
    on_the_loop(lock.release()).await.unwrap();
    assert_eq!(io.opened.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_attempts_undo_rides_the_attempts_connection() {
    let server = RedisServer::start();
    let io = Arc::new(NamedLoop::default());
    let m = manager(&server, &io);
    // A classic holder: the waiter below queues behind it.
    server.cmd(&[b"SET", b"b", b"someone-else", b"PX", b"60000"]);

    let waiting = on_the_loop(m.acquire("b", MS(10_000), Some(MS(30_000))));
    assert!(tokio::time::timeout(MS(300), waiting).await.is_err());
    // Dropped mid-wait: its undo (leaving the queue) runs in the background, on the runtime's
    // threads, and still on the loop's connection.
    wait_until_async(MS(10_000), "the waiter leaves the queue", || {
        server.queued("", "b") == 0
    })
    .await;
    assert_eq!(
        command_clients(&server),
        (1, 0),
        "the undo rode the loop's connection"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_extension_keeps_the_runtimes_connection() {
    let server = RedisServer::start();
    let io = Arc::new(NamedLoop::default());
    let m = manager(&server, &io);
    let opts = fencelock::AcquireOptions::new(MS(300)).auto_extend(None);
    let lock = on_the_loop(m.acquire_with("c", &opts)).await.unwrap();
    // Several extensions, each at a third of the TTL.
    tokio::time::sleep(MS(700)).await;
    assert!(on_the_loop(lock.is_held()).await.unwrap());
    let (_, others) = command_clients(&server);
    assert_eq!(others, 1, "the extensions rode the runtime's connection");
    on_the_loop(lock.release()).await.unwrap();
}
