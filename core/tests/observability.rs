//! The core's `tracing` events: emitted for acquire, extend, release and loss, with the lock
//! name and counts, and never with a token or a password.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fencelock::LockManager;
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn events_name_the_lock_and_never_show_secrets() {
    let server = RedisServer::start();
    // An ACL user for the library; the default user stays open for the test's own tampering.
    server.cmd(&[
        b"ACL",
        b"SETUSER",
        b"locker",
        b"on",
        b">pw-in-url-0xC0FFEE",
        b"~*",
        b"&*",
        b"+@all",
    ]);
    let url = format!(
        "redis://locker:pw-in-url-0xC0FFEE@127.0.0.1:{}",
        server.port()
    );
    let buffer = Buffer::default();
    let writer = buffer.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = rt.block_on(async {
        let m = LockManager::new([url.as_str()]).unwrap();
        let lock = m.acquire("traced-lock", MS(2000), None).await.unwrap();
        let token = String::from_utf8(lock.token().to_vec()).unwrap();
        lock.extend(MS(2000)).await.unwrap();
        lock.auto_extend(None);
        server.del(b"traced-lock");
        assert!(lock.lost().await.is_some());
        let other = m.acquire("traced-lock", MS(2000), None).await.unwrap();
        other.release().await.unwrap();
        token
    });
    let log = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    for needle in [
        "acquire attempt",
        "granted=1",
        "acquired",
        "fencing_token=",
        "extend",
        "release",
        "lock lost",
        "lock=\"traced-lock\"",
    ] {
        assert!(log.contains(needle), "missing {needle:?} in:\n{log}");
    }
    assert!(log.contains("WARN"), "a loss is a warning:\n{log}");
    assert!(!log.contains(&token), "token leaked:\n{log}");
    assert!(
        !log.contains("pw-in-url-0xC0FFEE"),
        "password leaked:\n{log}"
    );
}
