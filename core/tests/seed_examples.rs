//! The seed write-ups' examples that are Rust programs here, run against real servers.

#[path = "../examples/redlock_validity.rs"]
mod redlock_validity;

use std::time::Duration;

use fencelock_testkit::servers;

#[test]
fn the_csharp_redlock_validity_rule_matches_fencelock_on_three_servers() {
    let mut started = servers(3);
    let urls: Vec<String> = started.iter().map(|s| s.url()).collect();
    let ttl = Duration::from_secs(10);
    let r = redlock_validity::run(&urls, "validity", ttl).unwrap();
    println!("{r}");
    assert_eq!((r.servers, r.quorum), (3, 2));
    assert_eq!(r.drift, Duration::from_millis(102), "C#: ttl * 0.01 + 2 ms");
    let ceiling = ttl - r.drift;
    // fencelock measured a span inside the one measured here: its validity is at most the
    // C# figure's ceiling and at least the C# figure.
    assert!(r.fencelock_validity <= ceiling, "{r}");
    let v = r.fencelock_validity.as_secs_f64() * 1e3;
    assert!(r.csharp_validity_ms <= v + 1e-6, "{r}");
    assert!(r.csharp_validity_ms > 0.0, "{r}");

    // One master down: two of three still make the quorum (the C# `n >= Quorum`).
    started[2].kill();
    let r = redlock_validity::run(&urls, "validity-minority-down", ttl).unwrap();
    assert!(r.fencelock_validity > Duration::ZERO && r.fencelock_validity <= ceiling);
    // Two down: no quorum, so no lock (the C# code unlocks every instance and fails).
    started[1].kill();
    let e =
        redlock_validity::run(&urls, "validity-no-quorum", Duration::from_millis(500)).unwrap_err();
    assert_eq!(e.kind(), fencelock::ErrorKind::Unavailable, "{e}");
}
