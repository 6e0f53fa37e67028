//! The `fencelock` command of the wheel (`fencelock._cli`, the console script): the CLI crate's
//! one implementation, run in this process with the GIL released.

use std::ffi::OsString;

use pyo3::prelude::*;

/// Runs the `fencelock` command line `argv` (the program's name first) to its end and returns
/// its exit code. For ``fencelock._cli.main`` only: it takes over the process's signals.
#[pyfunction]
pub fn _cli_main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    py.detach(|| fencelock_cli::main(argv))
}
