//! `fencelock man [SUBCOMMAND]`: the manual pages, rendered (roff) from the same definitions
//! as `--help`, so that the two never disagree. The release archive carries them in
//! `share/man/man1/`.

use std::io::Write as _;

use clap::CommandFactory as _;

use crate::args::Cli;
use crate::exit::{self, Failure};

/// Writes the page of `subcommand` (or fencelock's own) to stdout.
pub fn print(subcommand: Option<&str>) -> Result<u8, Failure> {
    let top = Cli::command();
    let page = match subcommand {
        None => top,
        Some(name) => {
            let sub = top
                .get_subcommands()
                .find(|c| c.get_name() == name && name != "help")
                .ok_or_else(|| {
                    Failure::new(exit::USAGE, format!("fencelock has no subcommand {name:?}"))
                })?;
            // The page's title is `fencelock-run`, as man pages of subcommands are named.
            sub.clone().name(format!("fencelock-{name}"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out)?;
    std::io::stdout().write_all(&out)?;
    Ok(0)
}
