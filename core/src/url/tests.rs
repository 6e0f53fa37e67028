//! Tests of URL parsing and redaction.

use super::*;

#[test]
fn redact_url_masks_userinfo_only() {
    assert_eq!(redact_url("redis://u:p@h:1/0"), "redis://***@h:1/0");
    assert_eq!(redact_url("redis://h:1/0"), "redis://h:1/0");
    // An '@' ends credentials wherever it stands: when in doubt, mask.
    assert_eq!(redact_url("redis://h:1/a@b"), "redis://***@b");
    assert_eq!(redact_url("u:p@h"), "***");
    assert_eq!(
        redact_url("redis://u:pa/ss?x#y@h:1/0"),
        "redis://***@h:1/0",
        "a password holding '/', '?' and '#'"
    );
    assert_eq!(
        redact_url("redis+unix:///run/r.sock?db=2&pass=a&b=c#d&user=me"),
        "redis+unix:///run/r.sock?db=2&pass=***&user=***"
    );
}

#[test]
fn sentinel_urls_carry_the_sentinels_credentials_and_tls() {
    let url = "redis+sentinel://:m/pw@h1:5000,h2/mymaster/3?sentinel_user=watch&sentinel_password=s&p=w%41";
    assert_eq!(
        redact_url(url),
        "redis+sentinel://***@h1:5000,h2/mymaster/3?sentinel_user=***&sentinel_password=***"
    );
    let spec = parse_server(url, &loaded(), None).unwrap();
    assert_eq!(password_of(&spec).as_deref(), Some("m/pw"), "the master's");
    let sentinels = &spec.sentinel.as_ref().unwrap().sentinels;
    assert_eq!(sentinels.len(), 2);
    for s in sentinels {
        let info = s.get_connection_info();
        assert_eq!(info.redis_settings().username(), Some("watch"));
        assert_eq!(info.redis_settings().password(), Some("s&p=wA"));
        assert!(matches!(info.addr(), ConnectionAddr::Tcp(..)));
    }
    assert!(!spec.tls);

    let spec = parse_server("rediss+sentinel://h1/m", &loaded(), None).unwrap();
    assert!(spec.tls);
    let s = &spec.sentinel.as_ref().unwrap().sentinels[0];
    assert!(matches!(
        s.get_connection_info().addr(),
        ConnectionAddr::TcpTls { port: 26379, .. }
    ));
    assert!(matches!(
        spec.client.get_connection_info().addr(),
        ConnectionAddr::TcpTls { .. }
    ));

    let e = parse_server("redis+sentinel://h1/m?sentinel_colour=red", &loaded(), None)
        .err()
        .unwrap();
    assert!(e.contains("unknown parameter"), "{e}");
}

#[test]
fn a_default_password_serves_each_form_without_one() {
    let with = |url: &str| parse_server(url, &loaded(), Some("d/pw")).unwrap();
    assert_eq!(password_of(&with("redis://h:1")).as_deref(), Some("d/pw"));
    let user = with("redis://app@h:1/0");
    let settings = user.client.get_connection_info().redis_settings().clone();
    assert_eq!(
        (settings.username(), settings.password()),
        (Some("app"), Some("d/pw"))
    );
    assert_eq!(
        password_of(&with("redis+unix:///tmp/r.sock?db=1")).as_deref(),
        Some("d/pw")
    );
    // A Sentinel entry: the master's, not the sentinels'.
    let sentinel = with("redis+sentinel://h1,h2/m");
    assert_eq!(password_of(&sentinel).as_deref(), Some("d/pw"));
    for s in &sentinel.sentinel.as_ref().unwrap().sentinels {
        assert_eq!(s.get_connection_info().redis_settings().password(), None);
    }
    let cluster = with("redis+cluster://h1:7000,h2:7001");
    for node in &cluster.cluster.as_ref().unwrap().nodes {
        assert_eq!(node.redis_settings().password(), Some("d/pw"));
    }
    // The URL's own wins.
    assert_eq!(
        password_of(&with("redis://:own@h:1")).as_deref(),
        Some("own")
    );
    assert_eq!(
        password_of(&with("redis+unix:///r.sock?pass=own")).as_deref(),
        Some("own")
    );
}

#[test]
fn url_has_password_reads_urls_as_the_parser_does() {
    for url in [
        "redis://:p@h",
        "redis://u:p@h:1/0",
        "redis://u:pa/ss?x#y@h:1/0",
        "redis+unix:///r.sock?db=1&pass=x",
        "redis+sentinel://h1/m?sentinel_password=s",
        "redis+cluster://u:p@h1,h2",
    ] {
        assert!(url_has_password(url), "{url}");
    }
    for url in [
        "redis://h:1",
        "redis://app@h:1",
        "redis+unix:///r.sock?user=app",
        "redis+sentinel://h1/m?sentinel_user=watch",
        "h:1",
    ] {
        assert!(!url_has_password(url), "{url}");
    }
}

fn loaded() -> LoadedTls {
    LoadedTls {
        certificates: None,
        insecure: false,
    }
}

fn password_of(spec: &ServerSpec) -> Option<String> {
    let info = spec.client.get_connection_info();
    info.redis_settings().password().map(str::to_owned)
}

/// Every URL form with `password`, and the redacted form it must have.
fn forms(password: &str) -> Vec<(String, String)> {
    vec![
        (
            format!("redis://user:{password}@127.0.0.1:6390/2"),
            "redis://***@127.0.0.1:6390/2".into(),
        ),
        (
            format!("redis://:{password}@127.0.0.1:6390"),
            "redis://***@127.0.0.1:6390".into(),
        ),
        (
            format!("rediss://user:{password}@127.0.0.1:6390/0"),
            "rediss://***@127.0.0.1:6390/0".into(),
        ),
        (
            format!("redis+unix:///tmp/r.sock?db=1&pass={password}"),
            "redis+unix:///tmp/r.sock?db=1&pass=***".into(),
        ),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// The fuzz target's check on URL-shaped inputs of any characters.
    #[test]
    fn no_url_shows_its_credentials(
        scheme in "(redis|rediss|redis\\+unix|redis\\+sentinel|rediss\\+sentinel|valkey|http)",
        userinfo in "\\PC{0,30}",
        rest in "\\PC{0,30}",
    ) {
        check_url_redaction(&format!("{scheme}://{userinfo}@{rest}"));
        check_url_redaction(&format!("{scheme}://{rest}"));
        check_url_redaction(&userinfo);
    }

    /// Passwords of any printable character parse to themselves, and no message or
    /// redacted URL shows them (issue 20: base64 passwords hold '/', '+' and '=').
    #[test]
    fn any_printable_password_parses_and_is_never_shown(
        password in "[ -~]{6,40}|[ -~\u{e9}\u{4e2d}\u{1f512}]{6,20}"
    ) {
        // Raw, any password is masked, whatever it holds; exactly as below unless it holds
        // an '@', which makes the mask cover more (the path of a socket URL).
        for (url, redacted) in forms(&password) {
            let shown = redact_url(&url);
            proptest::prop_assert!(!shown.contains(&password), "{}", shown);
            if !password.contains('@') {
                proptest::prop_assert_eq!(&shown, &redacted);
            }
        }
        // A '%' followed by two hex digits is an escape, as in any URL: a literal '%' is
        // written "%25"; everything else is written as it is.
        let written = password.replace('%', "%25");
        for (url, redacted) in forms(&written) {
            let spec = parse_server(&url, &loaded(), None);
            let spec = spec.map_err(|e| {
                proptest::test_runner::TestCaseError::fail(format!("{redacted}: {e}"))
            })?;
            proptest::prop_assert_eq!(password_of(&spec), Some(password.clone()));
            proptest::prop_assert!(!spec.label.contains(&password));
        }
        let sentinel = format!("redis+sentinel://:{written}@127.0.0.1:26390/mymaster/1");
        proptest::prop_assert_eq!(
            redact_url(&sentinel),
            "redis+sentinel://***@127.0.0.1:26390/mymaster/1"
        );
        let spec = parse_server(&sentinel, &loaded(), None).map_err(|e| {
            proptest::test_runner::TestCaseError::fail(format!("sentinel: {e}"))
        })?;
        proptest::prop_assert_eq!(password_of(&spec), Some(password.clone()));
        // A URL that fails to parse after the credentials shows none of them.
        let bad = format!("redis://user:{written}@127.0.0.1:99999/0");
        let err = parse_server(&bad, &loaded(), None).err().unwrap_or_default();
        proptest::prop_assert!(!err.contains(&password), "{}", err);
    }
}
