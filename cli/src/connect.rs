//! The servers and their secrets: URLs from `--server` or `FENCELOCK_SERVERS`, the password
//! from `FENCELOCK_PASSWORD` or `--password-file` (a command line is readable by every local
//! user), TLS files; the manager built from them. Nothing here ever prints a password: URLs in
//! messages are the core's redacted labels.

use std::path::Path;

use fencelock::LockManager;

use crate::args::ServerArgs;
use crate::exit::{self, Failure};

/// The manager for these options, or a configuration failure (exit 78) naming what is wrong.
pub fn manager(args: &ServerArgs, quiet: bool) -> Result<LockManager, Failure> {
    let urls = urls(args)?;
    if !quiet {
        for url in &urls {
            if has_password(url) {
                eprintln!(
                    "fencelock: warning: a password in a --server URL on the command line can \
                     be read by every local user (ps); use FENCELOCK_PASSWORD or --password-file"
                );
                break;
            }
        }
    }
    let password = password(args)?;
    let urls: Vec<String> = match &password {
        Some(p) => urls.iter().map(|u| with_password(u, p)).collect(),
        None => urls,
    };
    let mut builder = LockManager::builder(&urls);
    if let Some(prefix) = &args.key_prefix {
        builder = builder.key_prefix(prefix);
    }
    if let Some(ca) = &args.tls_ca_file {
        builder = builder.tls_ca_file(ca);
    }
    if let (Some(cert), Some(key)) = (&args.tls_cert_file, &args.tls_key_file) {
        builder = builder.tls_client_cert_files(cert, key);
    }
    builder
        .build()
        .map_err(|e| Failure::new(exit::CONFIG, e.to_string()))
}

/// `--server` URLs, else `FENCELOCK_SERVERS`.
fn urls(args: &ServerArgs) -> Result<Vec<String>, Failure> {
    if !args.servers.is_empty() {
        return Ok(args.servers.clone());
    }
    let from_env = std::env::var("FENCELOCK_SERVERS").unwrap_or_default();
    let urls: Vec<String> = from_env
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(String::from)
        .collect();
    if urls.is_empty() {
        return Err(Failure::new(
            exit::CONFIG,
            "no servers: give --server URL (repeatable) or set FENCELOCK_SERVERS",
        ));
    }
    Ok(urls)
}

/// `FENCELOCK_PASSWORD`, else the first line of `--password-file`.
fn password(args: &ServerArgs) -> Result<Option<String>, Failure> {
    if let Some(path) = &args.password_file {
        return read_password(path).map(Some);
    }
    Ok(std::env::var("FENCELOCK_PASSWORD")
        .ok()
        .filter(|p| !p.is_empty()))
}

fn read_password(path: &Path) -> Result<String, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::new(
            exit::CONFIG,
            format!("cannot read the password file {}: {e}", path.display()),
        )
    })?;
    let line = text.lines().next().unwrap_or_default();
    if line.is_empty() {
        return Err(Failure::new(
            exit::CONFIG,
            format!("the password file {} is empty", path.display()),
        ));
    }
    Ok(line.to_string())
}

/// Whether the URL carries a password: as the core reads URLs, the credentials are everything
/// between `://` and the last `@`, the user ending at the first `:`; a `redis+unix://` URL
/// takes it as `pass=` in its query.
fn has_password(url: &str) -> bool {
    let Some((scheme, rest)) = url.split_once("://") else {
        return false;
    };
    if scheme.ends_with("+unix") {
        return rest.contains("pass=");
    }
    rest.rfind('@').is_some_and(|at| rest[..at].contains(':'))
}

/// The URL with `password` for its servers, unless it has one: in the user part of
/// `scheme://[user]@host...`, or as `pass=` in a `redis+unix://` query. Percent-encoded, so
/// that the password is taken as written whatever it holds.
fn with_password(url: &str, password: &str) -> String {
    if has_password(url) {
        return url.to_string();
    }
    let encoded = percent_encode(password);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string(); // the core names what is wrong with it
    };
    if scheme.ends_with("+unix") {
        let sep = if rest.contains('?') { '&' } else { '?' };
        return format!("{url}{sep}pass={encoded}");
    }
    match rest.rfind('@') {
        Some(at) => format!("{scheme}://{}:{encoded}{}", &rest[..at], &rest[at..]),
        None => format!("{scheme}://:{encoded}@{rest}"),
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_goes_where_each_url_form_takes_it() {
        let p = "s3cr/t@%:x";
        let enc = "s3cr%2Ft%40%25%3Ax";
        assert_eq!(
            with_password("redis://h:1", p),
            format!("redis://:{enc}@h:1")
        );
        assert_eq!(
            with_password("rediss://app@h:1/0", p),
            format!("rediss://app:{enc}@h:1/0")
        );
        assert_eq!(
            with_password("redis+unix:///tmp/r.sock", p),
            format!("redis+unix:///tmp/r.sock?pass={enc}")
        );
        assert_eq!(
            with_password("redis+unix:///tmp/r.sock?db=1", p),
            format!("redis+unix:///tmp/r.sock?db=1&pass={enc}")
        );
        // A URL's own password wins.
        assert_eq!(with_password("redis://:own@h:1", p), "redis://:own@h:1");
        assert!(has_password("redis://:own@h:1"));
        assert!(!has_password("redis://h:1"));
    }
}
