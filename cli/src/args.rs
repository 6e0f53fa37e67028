//! The command line: subcommands, options and their help text (also the man page's, see
//! `fencelock --help-man`), and durations written as people write them.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

const AFTER_HELP: &str = "\
Servers come from --server (repeatable) or FENCELOCK_SERVERS (comma-separated). One URL is a
single server (redis://, rediss://, redis+unix://, redis+sentinel://, redis+cluster://); several
are a Redlock. Put passwords in FENCELOCK_PASSWORD or a --password-file, not on the command line:
every local user can read it with ps.

Exit codes: the command's own (128 + N when signal N killed it); 75 not acquired
(--conflict-exit-code), 76 lost while the command ran (--lost-exit-code), 64 bad usage, 65 the
name holds another kind, 69 servers unreachable or failing, 78 configuration, 126/127 the
command could not be run / was not found, 1 for status (free) and for release/extend (not held).
Details and recipes: docs/cli.md.";

/// A distributed lock for cron jobs, deploys and shell scripts, on Redis.
#[derive(Debug, Parser)]
#[command(name = "fencelock", version, after_help = AFTER_HELP, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a command while holding a lock: acquire, run it as a child with the lock kept alive,
    /// release when it exits, and exit with its exit code.
    #[command(after_help = "\
Examples:
  fencelock run nightly-backup --no-wait -- /usr/local/bin/backup.sh
  fencelock run deploy --wait 2m -- ./deploy.sh production
  fencelock run reports --semaphore 3 -- ./build-report.sh
  fencelock run schema --exclusive --ttl 30s -- ./migrate.sh

The command gets FENCELOCK_NAME, FENCELOCK_TOKEN and FENCELOCK_FENCING_TOKEN in its environment.
If the lock is lost while it runs, its process group gets SIGTERM, then SIGKILL after
--kill-after, and fencelock exits 76. Signals sent to fencelock (INT, TERM, HUP, QUIT, USR1,
USR2) are passed to the command's process group.")]
    Run(RunArgs),
    /// Acquire a lock and leave it held (until its TTL, or `release --token`); print its token.
    #[command(after_help = "\
Example:
  token=$(fencelock acquire deploy --ttl 10m --print token) || exit
  ./deploy.sh
  fencelock release deploy --token \"$token\"")]
    Acquire(AcquireArgs),
    /// Release a lock held with a token (one printed by `acquire`, or FENCELOCK_TOKEN).
    Release(TokenArgs),
    /// Extend a lock held with a token to --ttl from now.
    Extend(ExtendArgs),
    /// Show whether a lock is held: exit 0 when held, 1 when free (like `test`).
    #[command(after_help = "\
Example:
  fencelock status nightly-backup --json")]
    Status(StatusArgs),
    /// Run a command only while leading an election: campaign (in line, first come first
    /// served), run it as a child while the term is kept alive, resign when it exits.
    #[command(after_help = "\
Examples:
  fencelock elect scheduler --value \"$(hostname)\" -- ./scheduler
  fencelock elect migrations --no-wait -- ./migrate.sh

The command gets FENCELOCK_NAME, FENCELOCK_TOKEN and FENCELOCK_FENCING_TOKEN (the term number)
in its environment. If leadership is lost while it runs, its process group gets SIGTERM, then
SIGKILL after --kill-after, and fencelock exits 76; `fencelock leader NAME` shows the leader.")]
    Elect(ElectArgs),
    /// Show an election's leader: exit 0 while someone leads, 1 when nobody does; --watch
    /// prints each change until stopped.
    #[command(after_help = "\
Examples:
  fencelock leader scheduler
  fencelock leader scheduler --watch --json")]
    Leader(LeaderArgs),
    /// Print the manual page (roff) of fencelock or of one subcommand: `fencelock man > fencelock.1`
    #[command(after_help = "\
Example:
  fencelock man run > fencelock-run.1 && man ./fencelock-run.1")]
    Man(ManArgs),
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (default: fencelock's own)
    pub subcommand: Option<String>,
}

/// Where the servers are and how to reach them.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// A server URL; repeat for a Redlock of several servers [env: FENCELOCK_SERVERS, comma-separated]
    #[arg(long = "server", value_name = "URL")]
    pub servers: Vec<String>,
    /// A file holding the servers' password (its first line); or set FENCELOCK_PASSWORD to the password
    #[arg(long, value_name = "PATH", env = "FENCELOCK_PASSWORD_FILE")]
    pub password_file: Option<PathBuf>,
    /// A file of CA certificates (PEM) to trust for rediss:// servers
    #[arg(long, value_name = "PATH", env = "FENCELOCK_TLS_CA_FILE")]
    pub tls_ca_file: Option<PathBuf>,
    /// A client certificate (PEM) for rediss:// servers that ask for one (with --tls-key-file)
    #[arg(
        long,
        value_name = "PATH",
        env = "FENCELOCK_TLS_CERT_FILE",
        requires = "tls_key_file"
    )]
    pub tls_cert_file: Option<PathBuf>,
    /// The client certificate's private key (PEM)
    #[arg(
        long,
        value_name = "PATH",
        env = "FENCELOCK_TLS_KEY_FILE",
        requires = "tls_cert_file"
    )]
    pub tls_key_file: Option<PathBuf>,
    /// A prefix for every key fencelock writes (as the libraries' key_prefix)
    #[arg(long, value_name = "PREFIX", env = "FENCELOCK_KEY_PREFIX")]
    pub key_prefix: Option<String>,
    /// Give up (exit 69) after N attempts in a row on which every server refused the
    /// connection (nothing listens: not started, a wrong port); 0 waits through refusals
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10,
        env = "FENCELOCK_REFUSED_ATTEMPTS"
    )]
    pub refused_attempts: u32,
    /// Leave a note with the lock saying who holds it (LABEL, or host:pid without one) and
    /// since when, for `fencelock status` and the libraries' holder() to show
    #[arg(long, value_name = "LABEL", num_args = 0..=1, default_missing_value = "", env = "FENCELOCK_HOLDER")]
    pub holder: Option<String>,
}

/// Which kind of lock a name is: a lock (the default), a semaphore's permit, or a read-write
/// lock's read share or write hold.
#[derive(Debug, Args, Clone, Copy)]
#[group(multiple = false)]
pub struct KindArgs {
    /// A permit of a semaphore of N: at most N holders at once
    #[arg(long, value_name = "N")]
    pub semaphore: Option<u32>,
    /// A read share of a read-write lock (many readers at once)
    #[arg(long)]
    pub shared: bool,
    /// The write hold of a read-write lock (no one else)
    #[arg(long)]
    pub exclusive: bool,
}

/// How long to keep trying.
#[derive(Debug, Args, Clone, Copy)]
#[group(multiple = false)]
pub struct WaitArgs {
    /// Wait at most this long for the lock (default: without limit; Ctrl-C stops)
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true)]
    pub wait: Option<Duration>,
    /// Do not wait: one try
    #[arg(long)]
    pub no_wait: bool,
}

impl WaitArgs {
    /// The core's wait limit: `None` waits forever, zero tries once.
    pub fn limit(self) -> Option<Duration> {
        if self.no_wait {
            Some(Duration::ZERO)
        } else {
            self.wait
        }
    }
}

/// What `run` and `acquire` share.
#[derive(Debug, Args)]
pub struct LockArgs {
    /// The lock's name
    pub name: String,
    /// The lock's time to live, renewed while it is held (30s, 500ms, 2m, 1h, or seconds)
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true, default_value = "30s")]
    pub ttl: Duration,
    #[command(flatten)]
    pub wait: WaitArgs,
    /// Exit code when the lock is not acquired
    #[arg(long, value_name = "N", default_value_t = crate::exit::CONFLICT)]
    pub conflict_exit_code: u8,
    #[command(flatten)]
    pub kind: KindArgs,
    #[command(flatten)]
    pub servers: ServerArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What the person or the script at the other end sees.
#[derive(Debug, Args, Clone, Copy)]
pub struct OutputArgs {
    /// Say nothing on stderr but errors (no waiting line)
    #[arg(short, long)]
    pub quiet: bool,
    /// Print fencelock's events (acquired, extended, lost, released) on stderr
    #[arg(short, long, conflicts_with = "quiet")]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    /// Keep the lock at most this long, counted from acquisition; then it is lost
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true)]
    pub max_hold: Option<Duration>,
    /// After a lost lock's SIGTERM, SIGKILL the command's process group this much later
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true, default_value = "5s")]
    pub kill_after: Duration,
    /// Exit code when the lock was lost while the command ran
    #[arg(long, value_name = "N", default_value_t = crate::exit::LOST)]
    pub lost_exit_code: u8,
    /// fencelock's own lines on stderr as JSON objects, one per line, the last saying how it
    /// ended (for machines; no waiting line)
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments (after --)
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct ElectArgs {
    /// The value this candidate proclaims while it leads (an address, a host name), which
    /// `fencelock leader` and the libraries' leader() show
    #[arg(long, value_name = "TEXT", default_value = "")]
    pub value: String,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Args)]
pub struct LeaderArgs {
    /// The election's name
    pub name: String,
    /// Print JSON (one object per line with --watch) instead of a line
    #[arg(long)]
    pub json: bool,
    /// Print the leader, then each change (a new term, a proclaimed value, nobody leading),
    /// until stopped by a signal
    #[arg(long)]
    pub watch: bool,
    #[command(flatten)]
    pub servers: ServerArgs,
}

#[derive(Debug, Args)]
pub struct AcquireArgs {
    #[command(flatten)]
    pub lock: LockArgs,
    /// What to print on stdout: the token, the fencing token, or both as JSON
    #[arg(long, value_enum, default_value = "token")]
    pub print: Print,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Print {
    Token,
    FencingToken,
    Json,
}

#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The lock's name
    pub name: String,
    /// The token it is held with [env: FENCELOCK_TOKEN]
    #[arg(
        long,
        value_name = "TOKEN",
        env = "FENCELOCK_TOKEN",
        hide_env_values = true
    )]
    pub token: String,
    #[command(flatten)]
    pub kind: KindArgs,
    #[command(flatten)]
    pub servers: ServerArgs,
}

#[derive(Debug, Args)]
pub struct ExtendArgs {
    #[command(flatten)]
    pub held: TokenArgs,
    /// The new time to live, from now
    #[arg(long, value_name = "DURATION", value_parser = duration, allow_hyphen_values = true)]
    pub ttl: Duration,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// The lock's name
    pub name: String,
    /// Print one JSON object instead of a line
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub kind: KindArgs,
    #[command(flatten)]
    pub servers: ServerArgs,
}

/// A duration as people write it: `30s`, `500ms`, `2m`, `1h`, `1.5s`, or a plain number of
/// seconds (`30`).
pub fn duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    // Taken as a value, not as a flag (`allow_hyphen_values`): clap would answer "-5s" with
    // its tip to write `-- -5s`, which here starts the command.
    if text.starts_with('-') {
        return Err(format!("{text:?}: a duration cannot be negative"));
    }
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale = match unit.trim() {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 0.001,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => {
            return Err(format!(
            "unknown unit {other:?} in {text:?}: write 500ms, 30s, 2m, 1h or a number of seconds"
        ))
        }
    };
    let value: f64 = number.parse().map_err(|_| {
        format!("{text:?} is not a duration: write 500ms, 30s, 2m, 1h or a number of seconds")
    })?;
    Duration::try_from_secs_f64(value * scale).map_err(|_| format!("{text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_as_people_write_them() {
        let ms = Duration::from_millis;
        for (text, want) in [
            ("30", ms(30_000)),
            ("30s", ms(30_000)),
            ("500ms", ms(500)),
            ("2m", ms(120_000)),
            ("1h", ms(3_600_000)),
            ("1.5s", ms(1500)),
            (" 10 s ", ms(10_000)),
        ] {
            assert_eq!(duration(text), Ok(want), "{text}");
        }
        for bad in ["", "s", "10x", "-1s", "1e3", "1..2s"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
        assert_eq!(
            duration("-5s"),
            Err("\"-5s\": a duration cannot be negative".to_owned())
        );
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
