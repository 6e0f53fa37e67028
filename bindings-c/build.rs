//! Gives the shared library the name it is installed under (see the Makefile): the SONAME
//! libfencelock.so.MAJOR on Linux, the install name @rpath/libfencelock.MAJOR.dylib on macOS.
//! The crate's own file is libfencelock_c.*, because libfencelock.rlib is the core crate's.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let major = env!("CARGO_PKG_VERSION_MAJOR");
    if os == "linux" || os == "freebsd" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libfencelock.so.{major}");
    } else if os == "macos" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/libfencelock.{major}.dylib");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
