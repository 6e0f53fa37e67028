//! What users write in URLs, ready for the parser: credentials percent-encoded (they may hold
//! `/`, `+`, `=`, `?`, `#`, `@`, `%`), query parameters split at the `&` that starts a known
//! one, escapes decoded.

use super::{SENTINEL_PARAMS, TCP_SCHEMES, UNIX_PARAMS, UNIX_SCHEMES};

/// The URL with its credentials percent-encoded (see the module doc), ready for the parser.
pub(super) fn encode_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    if TCP_SCHEMES.contains(&scheme) {
        if let Some((userinfo, after)) = rest.rsplit_once('@') {
            return format!("{scheme}://{}@{after}", encode_userinfo(userinfo));
        }
    }
    if UNIX_SCHEMES.contains(&scheme) {
        if let Some((path, query)) = rest.split_once('?') {
            let query = query_params(query)
                .into_iter()
                .map(|(key, value)| match value {
                    Some(v) => format!("{key}={}", percent_encode(v)),
                    None => key.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("&");
            return format!("{scheme}://{path}?{query}");
        }
    }
    url.to_owned()
}

/// `user:password` with both parts percent-encoded; the user ends at the first `:`.
pub(super) fn encode_userinfo(userinfo: &str) -> String {
    match userinfo.split_once(':') {
        Some((user, password)) => format!("{}:{}", percent_encode(user), percent_encode(password)),
        None => percent_encode(userinfo),
    }
}

/// The parameters of a URL's query, split at each `&` that starts a known parameter (of a
/// Unix socket or a Sentinel URL; so a password may hold `&`, `=`, `#`...): `(key, value)`
/// pairs.
pub(super) fn query_params(query: &str) -> Vec<(&str, Option<&str>)> {
    let starts_param = |s: &str| {
        UNIX_PARAMS.iter().chain(&SENTINEL_PARAMS).any(|p| {
            s.strip_prefix(p)
                .is_some_and(|r| r.is_empty() || r.starts_with('='))
        })
    };
    let mut params: Vec<(usize, usize)> = Vec::new();
    let mut start = 0;
    for (i, _) in query.match_indices('&') {
        if starts_param(&query[i + 1..]) {
            params.push((start, i));
            start = i + 1;
        }
    }
    params.push((start, query.len()));
    params
        .into_iter()
        .map(|(a, b)| {
            let param = &query[a..b];
            match param.split_once('=') {
                Some((k, v)) => (k, Some(v)),
                None => (param, None),
            }
        })
        .collect()
}

/// Decodes `%XX` escapes (a `%` not followed by two hex digits stays as it is).
pub(super) fn percent_decode(s: &str) -> std::result::Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).and_then(|&b| hex(b)),
            bytes.get(i + 2).and_then(|&b| hex(b)),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| "a sentinel credential is not UTF-8 once decoded".into())
}

/// Percent-encodes every byte but the unreserved ones (RFC 3986) and a `%` that already
/// starts an escape.
pub(super) fn percent_encode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    for (i, &b) in bytes.iter().enumerate() {
        let escape = b == b'%'
            && bytes.len() > i + 2
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit();
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || escape {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
