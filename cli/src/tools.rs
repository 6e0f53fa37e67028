//! The subcommands beside `run`: `acquire` (take a lock and leave it held), `release` and
//! `extend` by token, `status`.

use std::time::Duration;

use fencelock::{ErrorKind, LeaseKind, LockManager};
use serde_json::json;

use crate::args::{AcquireArgs, ExtendArgs, Print, StatusArgs, TokenArgs};
use crate::exit::{self, Failure};
use crate::signals::Signals;
use crate::state::millis;
use crate::{connect, kind, run, state};

/// `acquire`: the lock stays held after fencelock exits, until its TTL or `release --token`.
pub async fn acquire(args: AcquireArgs) -> Result<u8, Failure> {
    let mut signals = Signals::listen()?;
    let opts = fencelock::AcquireOptions::new(args.lock.ttl).wait(args.lock.wait.limit());
    let (_manager, lock) = run::acquire(&args.lock, &opts, &mut signals).await?;
    let token = String::from_utf8_lossy(lock.token()).into_owned();
    match args.print {
        Print::Token => println!("{token}"),
        Print::FencingToken => println!("{}", lock.fencing_token()),
        Print::Json => println!(
            "{}",
            json!({
                "name": args.lock.name,
                "token": token,
                "fencing_token": lock.fencing_token(),
                "ttl_ms": millis(args.lock.ttl),
            })
        ),
    }
    lock.detach();
    Ok(0)
}

/// `release NAME --token T`: 0 when released, 1 when the token did not hold it.
pub async fn release(args: TokenArgs) -> Result<u8, Failure> {
    let (manager, kind) = held(&args)?;
    let released = match kind {
        LeaseKind::Lock => manager.release_by_token(&args.name, &args.token).await,
        _ => {
            family(&manager, &args.name, kind)?
                .release_by_token(&args.token)
                .await
        }
    };
    by_token(released.map(|()| Duration::ZERO), &args.name, "released")
}

/// `extend NAME --token T --ttl D`: 0 when extended, 1 when the token did not hold it.
pub async fn extend(args: ExtendArgs) -> Result<u8, Failure> {
    let held_args = &args.held;
    let (manager, kind) = held(held_args)?;
    let name = &held_args.name;
    let extended = match kind {
        LeaseKind::Lock => {
            manager
                .extend_by_token(name, &held_args.token, args.ttl)
                .await
        }
        _ => {
            family(&manager, name, kind)?
                .extend_by_token(&held_args.token, args.ttl)
                .await
        }
    };
    by_token(extended, name, "extended")
}

fn held(args: &TokenArgs) -> Result<(LockManager, LeaseKind), Failure> {
    let kind = kind::of(&args.kind)?;
    Ok((connect::manager(&args.servers, false)?, kind))
}

fn family(
    manager: &LockManager,
    name: &str,
    kind: LeaseKind,
) -> Result<fencelock::Family, Failure> {
    manager
        .family(name, kind)
        .map_err(|e| Failure::from_core(&e, exit::CONFLICT))
}

/// A call by token's outcome: "not held" is exit 1 with the reason, not an error.
fn by_token(done: fencelock::Result<Duration>, name: &str, what: &str) -> Result<u8, Failure> {
    match done {
        Ok(_) => Ok(0),
        Err(e) if e.kind() == ErrorKind::NotHeld => {
            eprintln!("fencelock: {name} not {what}: {e}");
            Ok(exit::NO)
        }
        Err(e) => Err(Failure::from_core(&e, exit::CONFLICT)),
    }
}

/// `status NAME`: exit 0 when held, 1 when free; a line, or JSON with `--json`.
pub async fn status(args: StatusArgs) -> Result<u8, Failure> {
    let given = kind::of(&args.kind)?;
    let manager = connect::manager(&args.servers, false)?;
    let kind = kind_on_servers(&manager, &args.name, given).await?;
    let mut seen = state::read(&manager, &args.name, kind)
        .await
        .map_err(|e| Failure::from_core(&e, exit::CONFLICT))?;
    seen.report["name"] = json!(args.name);
    seen.report["held"] = json!(seen.held);
    if args.json {
        println!("{}", seen.report);
    } else {
        println!("{}: {}", args.name, seen.line);
    }
    Ok(if seen.held { 0 } else { exit::NO })
}

/// The kind `status` reads `name` as: with no `--semaphore`, `--shared` or `--exclusive`, what
/// the servers say the name holds (a semaphore with the limit they keep, a read-write lock, or
/// a lock, also when free); a `--semaphore N` whose N is not the servers' limit is an error
/// naming both (a kind that is not the name's is refused by the read itself).
async fn kind_on_servers(
    manager: &LockManager,
    name: &str,
    given: LeaseKind,
) -> Result<LeaseKind, Failure> {
    let found = manager
        .family_of(name)
        .await
        .map_err(|e| Failure::from_core(&e, exit::CONFLICT))?;
    let found = match found {
        Some(fencelock::Family::Semaphore(s)) => Some(LeaseKind::Permits {
            count: 1,
            limit: s.limit(),
        }),
        Some(fencelock::Family::RwLock(_)) => Some(LeaseKind::Read),
        None => None,
    };
    match (given, found) {
        (LeaseKind::Lock, Some(found)) => Ok(found),
        (LeaseKind::Permits { limit, .. }, Some(LeaseKind::Permits { limit: kept, .. }))
            if limit != kept =>
        {
            Err(Failure::new(
                exit::USAGE,
                format!(
                    "--semaphore {limit}: the semaphore {name} has limit {kept} on the servers"
                ),
            ))
        }
        (given, _) => Ok(given),
    }
}
