//! Credentials masked in every message: [`redact_url`], and the check the fuzz target and the
//! property tests run.

use super::credentials::query_params;
use super::{parse_server, SECRET_PARAMS, SENTINEL_PARAMS, UNIX_PARAMS};
use crate::tls::LoadedTls;

/// A URL for messages: every byte that may be a credential replaced by `***`, however the
/// URL is written. Two rules, whose union is masked (so that a credential holding the other
/// rule's delimiter is still hidden whole): everything between `://` and the last `@`, and
/// the `user`, `pass`, `sentinel_user` and `sentinel_password` values of the query (from the
/// first `?` that starts a known parameter). Without `://`, a URL holding `@` is shown as
/// `***` whole.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return if url.contains('@') {
            "***".into()
        } else {
            url.to_owned()
        };
    };
    let start = scheme_end + 3;
    let mut secret = vec![false; url.len()];
    if let Some(at) = url[start..].rfind('@') {
        secret[start..start + at].fill(true);
    }
    if let Some(q) = query_start(url, start) {
        for (key, value) in query_params(&url[q + 1..]) {
            if let (true, Some(v)) = (SECRET_PARAMS.contains(&key), value) {
                let from = v.as_ptr() as usize - url.as_ptr() as usize;
                secret[from..from + v.len()].fill(true);
            }
        }
    }
    // Every masked run starts and ends at an ASCII delimiter ("://", '@', '=', '&'), so the
    // slices below fall on character boundaries.
    let mut out = String::with_capacity(url.len());
    let mut i = 0;
    while i < url.len() {
        let run = secret[i..].iter().take_while(|&&m| m == secret[i]).count();
        if secret[i] {
            out.push_str("***");
        } else {
            out.push_str(&url[i..i + run]);
        }
        i += run;
    }
    out
}

/// Whether a URL carries a password, read as the parser reads it: `user:password@` before the
/// host (the credentials run to the last `@`, the user to the first `:`), or a `pass=` or
/// `sentinel_password=` value in the query. For warnings about passwords written where others
/// can read them (a command line, a configuration file); a user alone is not a password.
pub fn url_has_password(url: &str) -> bool {
    let Some(scheme_end) = url.find("://") else {
        return false;
    };
    let start = scheme_end + 3;
    if url[start..]
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| userinfo.contains(':'))
    {
        return true;
    }
    query_start(url, start).is_some_and(|q| {
        query_params(&url[q + 1..]).into_iter().any(|(key, value)| {
            matches!(key, "pass" | "sentinel_password") && value.is_some_and(|v| !v.is_empty())
        })
    })
}

/// Where the query of a URL starts: the first `?` after `from` followed by a known parameter
/// (`db=`, `user=`, `pass=`, `protocol=`, `sentinel_user=`, `sentinel_password=`).
fn query_start(url: &str, from: usize) -> Option<usize> {
    url[from..]
        .match_indices('?')
        .map(|(i, _)| from + i)
        .find(|&q| {
            let after = &url[q + 1..];
            UNIX_PARAMS.iter().chain(&SENTINEL_PARAMS).any(|p| {
                after
                    .strip_prefix(p)
                    .is_some_and(|r| r.is_empty() || r.starts_with('=') || r.starts_with('&'))
            })
        })
}

/// The check the URL fuzz target runs (`core/fuzz`) on any input, and the property test below
/// on generated ones: parsing never panics, and neither the redacted URL nor a parse error
/// shows the credentials part of `input` (what lies between `://` and its last `@`, when it
/// does not also stand in the rest of the URL).
///
/// # Panics
/// When a credential is shown: that is the finding.
#[doc(hidden)]
pub fn check_url_redaction(input: &str) {
    let tls = LoadedTls {
        certificates: None,
        insecure: true,
    };
    let parsed = parse_server(input, &tls, None).err();
    let redacted = redact_url(input);
    let Some((_, rest)) = input.split_once("://") else {
        return;
    };
    let Some((userinfo, after)) = rest.rsplit_once('@') else {
        return;
    };
    // Too short to tell from the rest of a message (a ":" or "a"), or standing elsewhere.
    if userinfo.len() < 4 || after.contains(userinfo) || "redis+sentinel".contains(userinfo) {
        return;
    }
    assert!(
        !redacted.contains(userinfo),
        "{userinfo:?} shown in {redacted:?}"
    );
    if let Some(e) = parsed {
        let shown = format!("server URL #0 ({redacted}): {e}");
        assert!(!shown.contains(userinfo), "{userinfo:?} shown in {shown:?}");
    }
}
