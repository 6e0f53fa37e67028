//! A write to a connection the peer has closed, on the blocking manager's runtime, fails with
//! `EPIPE` and does not kill the process, even where SIGPIPE has its default action (a C or Go
//! host). Its own test binary: it gives SIGPIPE back its default action, which would kill any
//! other test of the binary that wrote to a closed socket.

use std::io::IoSlice;
use std::time::Duration;

use fencelock::blocking::LockManager;
use tokio::io::AsyncWriteExt;

fn default_sigpipe() {
    // SAFETY: restores the default action; called before the test's threads write.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

#[test]
fn a_write_to_a_closed_connection_on_the_runtime_fails_with_epipe_not_a_signal() {
    default_sigpipe();
    let m = LockManager::new(["redis://127.0.0.1:1"]).unwrap();
    let outcome = m
        .block_on(async {
            // Spawned: it runs on the runtime's worker thread, where the core's connections
            // write, not on this one.
            tokio::spawn(async {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let mut client = tokio::net::TcpStream::connect(listener.local_addr().unwrap())
                    .await
                    .unwrap();
                drop(listener.accept().await.unwrap());
                let chunk = [b'x'; 4096];
                // The first writes may be accepted before the peer's reset arrives; a vectored
                // write (as redis-rs's) after it raises SIGPIPE unless it is blocked.
                for _ in 0..200 {
                    if let Err(e) = client.write_vectored(&[IoSlice::new(&chunk)]).await {
                        return Some(e.kind());
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                None
            })
            .await
            .unwrap()
        })
        .unwrap();
    assert!(
        matches!(
            outcome,
            Some(std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset)
        ),
        "{outcome:?}"
    );
}
