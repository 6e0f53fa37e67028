//! The committed `include/fencelock.h` is what cbindgen generates from the sources now.
//! Regenerate it with `FENCELOCK_BLESS=1 cargo test -p fencelock-c --test header`
//! (or `make -C bindings-c header`).

use std::path::Path;

#[test]
fn committed_header_matches_cbindgen_output() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut config = cbindgen::Config::from_file(dir.join("cbindgen.toml")).expect("cbindgen.toml");
    // The version macros come from the workspace version, the one place it is set: a release
    // with a new version fails this test until the header is regenerated.
    config.after_includes = Some(format!(
        "\n/** The version of fencelock this header belongs to (fl_version() is the library's). */\n\
         #define FENCELOCK_VERSION \"{}\"\n\
         #define FENCELOCK_VERSION_MAJOR {}\n\
         #define FENCELOCK_VERSION_MINOR {}\n\
         #define FENCELOCK_VERSION_PATCH {}\n",
        env!("CARGO_PKG_VERSION"),
        env!("CARGO_PKG_VERSION_MAJOR"),
        env!("CARGO_PKG_VERSION_MINOR"),
        env!("CARGO_PKG_VERSION_PATCH"),
    ));
    let bindings = cbindgen::Builder::new()
        .with_crate(dir)
        .with_config(config)
        .generate()
        .expect("cbindgen failed");
    let mut fresh = Vec::new();
    bindings.write(&mut fresh);
    let path = dir.join("include/fencelock.h");
    if std::env::var_os("FENCELOCK_BLESS").is_some() {
        std::fs::write(&path, &fresh).expect("write include/fencelock.h");
        return;
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "include/fencelock.h is stale: run `make -C bindings-c header` and commit the result"
    );
}
