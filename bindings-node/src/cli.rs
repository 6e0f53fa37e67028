//! The `fencelock` command of the npm package (`bin/fencelock.js`): the CLI crate's one
//! implementation, run on the JavaScript thread, which it blocks until the command ends.

use napi_derive::napi;

/// Runs the `fencelock` command line `argv` (the program's name first) to its end and returns
/// its exit code. For `bin/fencelock.js` only: it takes over the process's signals.
#[napi(catch_unwind, js_name = "__cliMain", skip_typescript)]
pub fn cli_main(argv: Vec<String>) -> u32 {
    u32::from(fencelock_cli::main(argv.into_iter().map(Into::into)))
}
