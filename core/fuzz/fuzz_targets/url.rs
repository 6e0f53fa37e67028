//! Any string as a server URL: parsing never panics, and neither the redacted URL nor a parse
//! error shows its credentials (`fencelock::check_url_redaction`, which the core's property
//! test `no_url_shows_its_credentials` also runs on every `cargo test`).
//!
//! ```text
//! cargo install cargo-fuzz
//! cd core/fuzz && cargo +nightly fuzz run url          # or RUSTC_BOOTSTRAP=1 cargo fuzz run url
//! ```
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(url) = std::str::from_utf8(data) {
        fencelock::check_url_redaction(url);
    }
});
