//! The C functions called from Rust against a real redis-server: the cases that are simpler
//! to state here than in C (the C program in tests/fencelock_test.c covers the whole API).

use std::ffi::{c_char, c_void, CStr, CString};
use std::ptr;
use std::time::{Duration, Instant};

use fencelock_c::*;
use fencelock_testkit::RedisServer;

fn manager(server: &RedisServer) -> *mut fl_manager {
    let url = CString::new(server.url()).unwrap();
    let urls = [url.as_ptr()];
    let mut m = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_new(urls.as_ptr(), 1, ptr::null(), &mut m) },
        fl_status::FL_OK
    );
    m
}

fn last_error() -> String {
    unsafe { CStr::from_ptr(fl_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn round_trip_writes_the_token_as_the_key_value() {
    let server = RedisServer::start();
    let m = manager(&server);
    let mut lock = ptr::null_mut();
    let st = unsafe { fl_lock_acquire(m, c"ffi-rt".as_ptr(), 10_000, 0, &mut lock) };
    assert_eq!(st, fl_status::FL_OK);
    let mut tok: *const c_char = ptr::null();
    assert_eq!(unsafe { fl_lock_token(lock, &mut tok) }, fl_status::FL_OK);
    let tok = unsafe { CStr::from_ptr(tok) }.to_bytes().to_vec();
    assert_eq!(server.get(b"ffi-rt"), Some(tok));
    assert_eq!(unsafe { fl_lock_release(lock) }, fl_status::FL_OK);
    assert_eq!(server.get(b"ffi-rt"), None);
    assert_eq!(
        unsafe { fl_lock_release(lock) },
        fl_status::FL_INVALID_ARGUMENT
    );
    assert!(
        last_error().contains("already released"),
        "{}",
        last_error()
    );
    unsafe {
        fl_lock_free(lock);
        fl_manager_free(m);
    }
}

#[test]
fn try_acquire_on_a_held_lock_leaves_out_untouched() {
    let server = RedisServer::start();
    let m = manager(&server);
    assert!(server.set_nx_px(b"ffi-held", b"someone", 30_000));
    let marker = 0x5a5a_usize as *mut fl_lock;
    let mut out = marker;
    let st = unsafe { fl_lock_try_acquire(m, c"ffi-held".as_ptr(), 1000, &mut out) };
    assert_eq!(st, fl_status::FL_NOT_ACQUIRED);
    assert_eq!(out, marker);
    assert!(last_error().contains("held by another"), "{}", last_error());
    unsafe { fl_manager_free(m) };
}

#[test]
fn a_server_count_over_the_limit_is_refused_before_the_array_is_read() {
    // One URL, a count far beyond it: reading them would walk past the array.
    let urls = [c"redis://127.0.0.1:1".as_ptr()];
    let mut m = ptr::null_mut();
    let st = unsafe { fl_manager_new(urls.as_ptr(), usize::MAX, ptr::null(), &mut m) };
    assert_eq!(st, fl_status::FL_INVALID_ARGUMENT);
    assert!(m.is_null());
    assert!(last_error().contains("the limit is 64"), "{}", last_error());
}

#[test]
fn non_utf8_url_and_bad_wait_are_rejected_before_any_network_call() {
    let bad = b"redis://127.0.0.1:1/\xff\0";
    let urls = [bad.as_ptr().cast::<c_char>()];
    let mut m = ptr::null_mut();
    let st = unsafe { fl_manager_new(urls.as_ptr(), 1, ptr::null(), &mut m) };
    assert_eq!(st, fl_status::FL_INVALID_ARGUMENT);
    assert!(m.is_null());
    assert!(
        last_error().contains("URL #0 is not valid UTF-8"),
        "{}",
        last_error()
    );

    // A manager for a port nothing listens on: the argument errors must come first.
    let urls = [c"redis://127.0.0.1:1".as_ptr()];
    assert_eq!(
        unsafe { fl_manager_new(urls.as_ptr(), 1, ptr::null(), &mut m) },
        fl_status::FL_OK
    );
    let mut lock = ptr::null_mut();
    let st = unsafe { fl_lock_acquire(m, c"x".as_ptr(), 1000, -7, &mut lock) };
    assert_eq!(st, fl_status::FL_INVALID_ARGUMENT);
    let st = unsafe { fl_lock_acquire(m, c"x".as_ptr(), 0, 0, &mut lock) };
    assert_eq!(st, fl_status::FL_INVALID_ARGUMENT);
    let st = unsafe { fl_lock_acquire(m, c"x".as_ptr(), 1000, 0, &mut lock) };
    assert_eq!(st, fl_status::FL_UNAVAILABLE);
    assert!(lock.is_null());
    unsafe { fl_manager_free(m) };
}

struct Scope<'a> {
    server: &'a RedisServer,
    calls: u32,
    fence: u64,
    saw_lost: bool,
}

unsafe extern "C" fn delete_key_then_wait_for_loss(lock: *const fl_lock, data: *mut c_void) {
    let scope = unsafe { &mut *data.cast::<Scope>() };
    scope.calls += 1;
    unsafe { fl_lock_fencing_token(lock, &mut scope.fence) };
    scope.server.del(b"ffi-scope");
    let start = Instant::now();
    while !scope.saw_lost && start.elapsed() < Duration::from_secs(5) {
        std::thread::sleep(Duration::from_millis(20));
        unsafe { fl_lock_is_lost(lock, &mut scope.saw_lost) };
    }
}

#[test]
fn with_lock_reports_a_lock_lost_while_the_callback_ran() {
    let server = RedisServer::start();
    let m = manager(&server);
    let mut scope = Scope {
        server: &server,
        calls: 0,
        fence: 0,
        saw_lost: false,
    };
    let st = unsafe {
        fl_with_lock(
            m,
            c"ffi-scope".as_ptr(),
            600,
            -1,
            Some(delete_key_then_wait_for_loss),
            (&mut scope as *mut Scope).cast(),
        )
    };
    assert_eq!(st, fl_status::FL_NOT_HELD, "{}", last_error());
    assert_eq!(scope.calls, 1);
    assert!(scope.fence > 0);
    assert!(scope.saw_lost, "the auto-extension marked it lost");
    unsafe { fl_manager_free(m) };
}

#[test]
fn lock_handle_calls_from_several_threads_are_serialized() {
    let server = RedisServer::start();
    let m = manager(&server);
    let mut lock = ptr::null_mut();
    let st = unsafe { fl_lock_acquire(m, c"ffi-shared".as_ptr(), 10_000, 0, &mut lock) };
    assert_eq!(st, fl_status::FL_OK);
    // The header promises calls on one handle may come from any thread.
    struct Shared(*mut fl_lock);
    unsafe impl Send for Shared {}
    unsafe impl Sync for Shared {}
    let shared = Shared(lock);
    let statuses: Vec<fl_status> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4)
            .map(|i| {
                let shared = &shared;
                s.spawn(move || {
                    if i == 0 {
                        unsafe { fl_lock_release(shared.0) }
                    } else {
                        unsafe { fl_lock_extend(shared.0, 10_000) }
                    }
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    // The release happened exactly once; each extend came before it (OK) or after it
    // (released handle: FL_INVALID_ARGUMENT), never anything else.
    assert_eq!(statuses[0], fl_status::FL_OK);
    for st in &statuses[1..] {
        assert!(
            *st == fl_status::FL_OK || *st == fl_status::FL_INVALID_ARGUMENT,
            "{st:?}"
        );
    }
    assert_eq!(server.get(b"ffi-shared"), None);
    unsafe {
        fl_lock_free(lock);
        fl_manager_free(m);
    }
}

/// `n` passwords of printable characters (and a few beyond), from a seeded generator: a '%'
/// is written "%25" in a URL (the escape rule the docs state), NUL is not in C strings.
fn generated_passwords(n: usize, mut seed: u64) -> Vec<String> {
    let mut alphabet: Vec<char> = (0x21u8..0x7f).map(char::from).collect();
    alphabet.extend(['é', '中', '🔒']);
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    (0..n)
        .map(|_| {
            let len = 8 + next() % 17;
            (0..len)
                .map(|_| alphabet[next() % alphabet.len()])
                .collect()
        })
        .collect()
}

#[test]
fn generated_passwords_never_appear_whatever_the_url_form_and_the_failure() {
    // Issue 20, item 1, for C: parse, connect, authentication and TLS failures, in each URL
    // form, never show the password in fl_last_error_message.
    let server = RedisServer::start();
    let closed = fencelock_testkit::free_port();
    let mut opts = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_options_new(&mut opts) },
        fl_status::FL_OK
    );
    unsafe {
        fl_manager_options_set_server_timeout_ms(opts, 200);
        fl_manager_options_set_connect_timeout_ms(opts, 300);
    }
    let mut tls_opts = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_options_new(&mut tls_opts) },
        fl_status::FL_OK
    );
    unsafe {
        fl_manager_options_set_server_timeout_ms(tls_opts, 200);
        fl_manager_options_set_connect_timeout_ms(tls_opts, 300);
        fl_manager_options_set_tls_insecure(tls_opts, true);
    }
    let mut shown = Vec::new();
    let passwords = generated_passwords(25, 20);
    for pw in &passwords {
        let w = pw.replace('%', "%25");
        let p = server.port();
        let forms = [
            format!("redis://user:{w}@127.0.0.1:{p}"),
            format!("redis://:{w}@127.0.0.1:{closed}"),
            format!("rediss://user:{w}@127.0.0.1:{p}"),
            format!("redis+unix:///nonexistent/redis.sock?db=0&pass={w}"),
            format!("redis+sentinel://:{w}@127.0.0.1:{closed}/mymaster?sentinel_password={w}"),
            format!("redis://user:{w}@127.0.0.1:notaport"),
        ];
        for url in &forms {
            let c = CString::new(url.as_str()).unwrap();
            let urls = [c.as_ptr()];
            let o = if url.starts_with("rediss") {
                tls_opts
            } else {
                opts
            };
            let mut m = ptr::null_mut();
            let st = unsafe { fl_manager_new(urls.as_ptr(), 1, o, &mut m) };
            if st != fl_status::FL_OK {
                shown.push(last_error());
                continue;
            }
            let mut lock = ptr::null_mut();
            let st = unsafe { fl_lock_acquire(m, c"k".as_ptr(), 5000, 300, &mut lock) };
            assert_ne!(st, fl_status::FL_OK, "{url} acquired");
            shown.push(last_error());
            unsafe { fl_manager_free(m) };
        }
    }
    unsafe {
        fl_manager_options_free(opts);
        fl_manager_options_free(tls_opts);
    }
    assert!(
        shown.iter().any(|s| s.contains("authentication failed")),
        "{shown:?}"
    );
    for pw in &passwords {
        for text in &shown {
            assert!(
                !text.contains(pw.as_str()),
                "password {pw:?} shown in {text:?}"
            );
        }
    }
}

#[test]
fn a_sentinel_entry_follows_a_forced_failover_from_c() {
    use fencelock_testkit::sentinel::SentinelSetup;
    let setup = SentinelSetup::start();
    let url = CString::new(setup.url()).unwrap();
    let urls = [url.as_ptr()];
    let mut m = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_new(urls.as_ptr(), 1, ptr::null(), &mut m) },
        fl_status::FL_OK
    );
    let token_of = |lock: *mut fl_lock| {
        let mut tok: *const c_char = ptr::null();
        assert_eq!(unsafe { fl_lock_token(lock, &mut tok) }, fl_status::FL_OK);
        unsafe { CStr::from_ptr(tok) }.to_bytes().to_vec()
    };
    let mut lock = ptr::null_mut();
    let st = unsafe { fl_lock_acquire(m, c"failover".as_ptr(), 5000, 5000, &mut lock) };
    assert_eq!(st, fl_status::FL_OK, "{}", last_error());
    assert_eq!(setup.master.get(b"failover"), Some(token_of(lock)));
    assert_eq!(unsafe { fl_lock_release(lock) }, fl_status::FL_OK);
    unsafe { fl_lock_free(lock) };

    setup.failover();
    let mut lock = ptr::null_mut();
    let st = unsafe { fl_lock_acquire(m, c"failover".as_ptr(), 5000, 10_000, &mut lock) };
    assert_eq!(st, fl_status::FL_OK, "{}", last_error());
    assert_eq!(
        setup.replica.get(b"failover"),
        Some(token_of(lock)),
        "written to the new master"
    );
    assert_eq!(unsafe { fl_lock_release(lock) }, fl_status::FL_OK);
    unsafe {
        fl_lock_free(lock);
        fl_manager_free(m);
    }
}

/// `fl_lock_acquire` with no wait limit (-1), on its own thread: it must end by itself; the
/// outer bound only catches a hang.
fn acquire_forever(m: *mut fl_manager) -> (fl_status, String) {
    struct Send(*mut fl_manager);
    unsafe impl std::marker::Send for Send {}
    let m = Send(m);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let m = m;
        let mut lock = ptr::null_mut();
        let st = unsafe { fl_lock_acquire(m.0, c"at-once".as_ptr(), 5000, -1, &mut lock) };
        let _ = tx.send((st, last_error()));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("a configuration mistake was retried forever")
}

#[test]
fn mutual_tls_mistakes_fail_at_once_without_a_wait_limit() {
    // Issue 20, item 2, from C.
    let s = fencelock_testkit::tls::TlsServer::start(true);
    let url = CString::new(s.url()).unwrap();
    let urls = [url.as_ptr()];
    let ca = CString::new(s.file("ca.crt").display().to_string()).unwrap();
    let mut opts = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_options_new(&mut opts) },
        fl_status::FL_OK
    );
    assert_eq!(
        unsafe { fl_manager_options_set_tls_ca_file(opts, ca.as_ptr()) },
        fl_status::FL_OK
    );
    let mut m = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_new(urls.as_ptr(), 1, opts, &mut m) },
        fl_status::FL_OK
    );
    let (st, msg) = acquire_forever(m);
    assert_eq!(st, fl_status::FL_UNAVAILABLE, "{msg}");
    assert!(
        msg.contains("TLS handshake failed") && msg.contains("CertificateRequired"),
        "{msg}"
    );
    unsafe {
        fl_manager_free(m);
        fl_manager_options_free(opts);
    }
}

#[test]
fn a_wait_limit_holds_on_a_hung_server() {
    // Issue 20, item 3, from C: wait plus one server timeout, not three in a row.
    let mut server = RedisServer::start();
    let url = CString::new(server.url()).unwrap();
    let urls = [url.as_ptr()];
    let mut opts = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_options_new(&mut opts) },
        fl_status::FL_OK
    );
    unsafe { fl_manager_options_set_server_timeout_ms(opts, 2000) };
    let mut m = ptr::null_mut();
    assert_eq!(
        unsafe { fl_manager_new(urls.as_ptr(), 1, opts, &mut m) },
        fl_status::FL_OK
    );
    let mut lock = ptr::null_mut();
    assert_eq!(
        unsafe { fl_lock_acquire(m, c"warm".as_ptr(), 5000, 0, &mut lock) },
        fl_status::FL_OK
    );
    unsafe {
        fl_lock_release(lock);
        fl_lock_free(lock);
    }
    server.stop();
    let started = Instant::now();
    let mut lock = ptr::null_mut();
    let st = unsafe { fl_lock_acquire(m, c"hung".as_ptr(), 60_000, 300, &mut lock) };
    let took = started.elapsed();
    server.cont();
    assert_eq!(st, fl_status::FL_UNAVAILABLE, "{}", last_error());
    assert!(
        took < Duration::from_millis(300 + 2000 + 1500),
        "returned after {took:?}"
    );
    unsafe {
        fl_manager_free(m);
        fl_manager_options_free(opts);
    }
}

unsafe extern "C" fn once_queued(data: *mut c_void) -> bool {
    let server = unsafe { &*(data as *const RedisServer) };
    server.queued("", "settled") > 0
}

/// Issue 51 item 4: a wait interrupted through the C interface gives its place up in the
/// background; `fl_settle_all` waits for that, so a program about to exit leaves no place.
#[test]
fn settle_all_waits_for_an_interrupted_waits_withdrawal() {
    let server = RedisServer::start();
    let m = manager(&server);
    let name = CString::new("settled").unwrap();
    let mut held = ptr::null_mut();
    let status = unsafe { fl_lock_acquire(m, name.as_ptr(), 60_000, 0, &mut held) };
    assert_eq!(status, fl_status::FL_OK, "{}", last_error());
    let mut waiter = ptr::null_mut();
    let data = &server as *const RedisServer as *mut c_void;
    let status = unsafe {
        fl_lock_acquire_interruptible(
            m,
            name.as_ptr(),
            ptr::null(),
            60_000,
            -1,
            Some(once_queued),
            data,
            &mut waiter,
        )
    };
    assert_eq!(status, fl_status::FL_CANCELLED, "{}", last_error());
    assert_eq!(fl_settle_all(5000), fl_status::FL_OK, "{}", last_error());
    assert_eq!(server.queued("", "settled"), 0, "a place was left behind");
    unsafe {
        fl_lock_free(held);
        fl_manager_free(m);
    }
}

#[test]
fn every_measurement_is_described_with_its_labels_and_buckets() {
    let n = fl_metric_count();
    assert_eq!(n, fencelock::ffi_support::measure::MEASURES.len());
    let text = |p: *const std::ffi::c_char| unsafe { CStr::from_ptr(p) }.to_str().unwrap();
    for (i, m) in fencelock::ffi_support::measure::MEASURES.iter().enumerate() {
        let mut d = std::mem::MaybeUninit::<fl_metric_description>::uninit();
        assert_eq!(
            unsafe { fl_metric_describe(i, d.as_mut_ptr()) },
            fl_status::FL_OK
        );
        let d = unsafe { d.assume_init() };
        assert_eq!(text(d.name), m.name);
        assert_eq!(text(d.unit), m.unit);
        assert_eq!(text(d.help), m.help);
        let labels: Vec<&str> = (0..d.label_count)
            .map(|j| text(unsafe { *d.label_names.add(j) }))
            .collect();
        assert_eq!(labels, m.labels);
        let buckets = unsafe { std::slice::from_raw_parts(d.buckets, d.bucket_count) };
        assert_eq!(buckets, m.buckets);
    }
    let mut d = std::mem::MaybeUninit::<fl_metric_description>::uninit();
    assert_eq!(
        unsafe { fl_metric_describe(n, d.as_mut_ptr()) },
        fl_status::FL_INVALID_ARGUMENT
    );
    assert!(last_error().contains("out of range"), "{}", last_error());
    assert_eq!(
        unsafe { fl_metric_describe(0, std::ptr::null_mut()) },
        fl_status::FL_INVALID_ARGUMENT
    );
}
