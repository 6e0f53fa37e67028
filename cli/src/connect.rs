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
            if fencelock::url_has_password(url) {
                crate::report::warn(
                    "a password in a --server URL on the command line can be read by every \
                     local user (ps); use FENCELOCK_PASSWORD or --password-file",
                );
                break;
            }
        }
    }
    let mut builder = LockManager::builder(&urls).refused_attempts(args.refused_attempts);
    if let Some(password) = password(args)? {
        // For every server whose URL has none (a URL's own wins).
        builder = builder.password(password);
    }
    if let Some(prefix) = &args.key_prefix {
        builder = builder.key_prefix(prefix);
    }
    match args.holder.as_deref() {
        None => {}
        Some("") => builder = builder.holder_label(fencelock::default_holder_label()),
        Some(label) => builder = builder.holder_label(label),
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

/// The first line of `--password-file` (or `FENCELOCK_PASSWORD_FILE`), else
/// `FENCELOCK_PASSWORD`.
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
