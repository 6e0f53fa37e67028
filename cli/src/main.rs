//! The `fencelock` binary: [`fencelock_cli::main`] with the process's arguments.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(fencelock_cli::main(std::env::args_os()))
}
