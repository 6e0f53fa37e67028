//! Gives the shared library the SONAME it is installed under (see the Makefile): the crate's
//! own file is libfencelock_c.so, because libfencelock.rlib is the core crate's.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "freebsd" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfencelock.so.0");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
