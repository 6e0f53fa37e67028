//! `fencelock::ffi_support::observe`: listeners registered from outside Rust receive the core's events.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fencelock::ffi_support::observe::{add_listener, remove_listener, EventLevel};
use fencelock::LockManager;
use fencelock_testkit::RedisServer;

const MS: fn(u64) -> Duration = Duration::from_millis;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_receive_events_at_their_level_until_removed() {
    let server = RedisServer::start();
    // Pass the event sites once while only a warn listener exists: a debug listener added
    // later must still hear them (tracing caches per-site interest).
    let early = add_listener(EventLevel::Warn, |_| {}).unwrap();
    let m0 = LockManager::new([server.url()]).unwrap();
    m0.acquire("observed", MS(2000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert!(remove_listener(early));
    let debug = Arc::new(Mutex::new(Vec::new()));
    let warn = Arc::new(Mutex::new(Vec::new()));
    let d = Arc::clone(&debug);
    let debug_id = add_listener(EventLevel::Debug, move |e| {
        d.lock().unwrap().push(e.clone())
    })
    .unwrap();
    let w = Arc::clone(&warn);
    let warn_id =
        add_listener(EventLevel::Warn, move |e| w.lock().unwrap().push(e.clone())).unwrap();
    // A listener that panics must not disturb the others or the lock.
    let bad = add_listener(EventLevel::Trace, |_| panic!("listener bug")).unwrap();

    let m = LockManager::new([server.url()]).unwrap();
    let lock = m.acquire("observed", MS(2000), None).await.unwrap();
    let token = String::from_utf8(lock.token().to_vec()).unwrap();
    lock.auto_extend(None);
    server.del(b"observed");
    assert!(tokio::time::timeout(MS(3000), lock.lost())
        .await
        .unwrap()
        .is_some());

    let events = debug.lock().unwrap().clone();
    let acquired = events
        .iter()
        .find(|e| e.message == "acquired")
        .expect("an acquired event");
    assert_eq!(acquired.level, EventLevel::Debug);
    assert!(
        acquired
            .fields
            .iter()
            .any(|(k, v)| k == "lock" && v == "\"observed\""),
        "{acquired:?}"
    );
    assert!(
        acquired
            .to_line()
            .contains("handed_over=false fencing_token=")
            || acquired.to_line().contains("handed_over=false elapsed_ms="),
        "{}",
        acquired.to_line()
    );
    // A waiter the holder's release hands the lock to says so. (Its manager's first wait on
    // the lock subscribes and tries once more; the second joins the lingering subscription
    // before trying, and is handed the lock.)
    let waiting = Arc::new(LockManager::new([server.url()]).unwrap());
    for _ in 0..2 {
        let holder = m.acquire("handed", MS(5000), None).await.unwrap();
        let w = Arc::clone(&waiting);
        let waiter =
            tokio::spawn(async move { w.acquire("handed", MS(5000), None).await.unwrap() });
        while server.queued("", "handed") != 1 {
            tokio::time::sleep(MS(5)).await;
        }
        holder.release().await.unwrap();
        waiter.await.unwrap().release().await.unwrap();
    }
    assert!(
        debug.lock().unwrap().iter().any(|e| e.message == "acquired"
            && e.fields
                .iter()
                .any(|(k, v)| k == "lock" && v == "\"handed\"")
            && e.fields
                .iter()
                .any(|(k, v)| k == "handed_over" && v == "true")),
        "{:?}",
        debug.lock().unwrap()
    );
    assert!(
        events.iter().all(|e| e.level >= EventLevel::Debug),
        "no trace events below the level"
    );
    assert!(events.iter().any(|e| e.message == "lock lost"));
    let warned = warn.lock().unwrap().clone();
    assert!(
        !warned.is_empty() && warned.iter().all(|e| e.level >= EventLevel::Warn),
        "{warned:?}"
    );
    assert!(
        warned.iter().any(|e| e.message == "lock lost"
            && e.fields
                .iter()
                .any(|(k, v)| k == "reason" && v.trim_matches('"') == "expired")),
        "the lost event says why: {warned:?}"
    );
    assert!(
        events
            .iter()
            .chain(&warned)
            .all(|e| !e.to_line().contains(&token)),
        "no token"
    );

    assert!(remove_listener(debug_id));
    assert!(remove_listener(warn_id));
    assert!(remove_listener(bad));
    assert!(!remove_listener(debug_id));
    let seen = debug.lock().unwrap().len();
    m.acquire("observed", MS(2000), None)
        .await
        .unwrap()
        .release()
        .await
        .unwrap();
    assert_eq!(
        debug.lock().unwrap().len(),
        seen,
        "a removed listener hears nothing"
    );
}
