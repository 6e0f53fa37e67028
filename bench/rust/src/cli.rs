//! The command line shared by every runner (see the bench brief): one scenario, its flags.

use std::collections::HashMap;
use std::time::Duration;

/// A usage error: exit code 2 with this message on stderr.
#[derive(Debug)]
pub struct Usage(pub String);

impl<T: Into<String>> From<T> for Usage {
    fn from(s: T) -> Usage {
        Usage(s.into())
    }
}

pub const USAGE: &str = "\
usage: fencelock-bench cycle   --impl IMPL --servers URL[,URL...] --duration-ms D [--ttl-ms 10000] [--name NAME] [--samples]
       fencelock-bench contend --impl IMPL --servers URLS --name NAME --hold-ms H --duration-ms D --start-at-ms EPOCH_MS --worker ID [--ttl-ms 10000]
       fencelock-bench scale   --impl IMPL --servers URLS --tasks K --duration-ms D [--ttl-ms 10000]
       fencelock-bench hold    --impl IMPL --servers URLS --count 10000 [--ttl-ms 60000]
IMPL: ours | ours-observed | ours-holder | rslock | floor | floor-fenced";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    Cycle,
    Contend,
    Scale,
    Hold,
}

impl Scenario {
    pub fn as_str(self) -> &'static str {
        match self {
            Scenario::Cycle => "cycle",
            Scenario::Contend => "contend",
            Scenario::Scale => "scale",
            Scenario::Hold => "hold",
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            Scenario::Cycle => &["impl", "servers", "duration-ms", "ttl-ms", "name"],
            Scenario::Contend => &[
                "impl",
                "servers",
                "name",
                "hold-ms",
                "duration-ms",
                "start-at-ms",
                "worker",
                "ttl-ms",
            ],
            Scenario::Scale => &["impl", "servers", "tasks", "duration-ms", "ttl-ms"],
            Scenario::Hold => &["impl", "servers", "count", "ttl-ms"],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImplKind {
    Ours,
    /// Ours with a metrics recorder (Prometheus's) and a tracing subscriber attached: what
    /// observability costs (issue 38).
    OursObserved,
    /// Ours with a holder label: each grant and extension also leaves the holder's note (issue
    /// 38's "who holds it").
    OursHolder,
    Rslock,
    Floor,
    /// The guarantee-equivalent floor (issue 56 item 6): the cheapest scripts that keep what
    /// ours keeps for an uncontended cycle, a fencing counter and a check of the queue.
    FloorFenced,
}

impl ImplKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ImplKind::Ours => "ours",
            ImplKind::OursObserved => "ours-observed",
            ImplKind::OursHolder => "ours-holder",
            ImplKind::Rslock => "rslock",
            ImplKind::Floor => "floor",
            ImplKind::FloorFenced => "floor-fenced",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Args {
    pub scenario: Scenario,
    pub imp: ImplKind,
    pub servers: Vec<String>,
    pub ttl: Duration,
    pub name: String,
    pub duration: Duration,
    pub samples: bool,
    pub hold: Duration,
    pub start_at_ms: u64,
    pub worker: String,
    pub tasks: usize,
    pub count: usize,
}

pub fn parse(argv: &[String]) -> Result<Args, Usage> {
    let (first, rest) = argv.split_first().ok_or("missing scenario")?;
    let scenario = match first.as_str() {
        "cycle" => Scenario::Cycle,
        "contend" => Scenario::Contend,
        "scale" => Scenario::Scale,
        "hold" => Scenario::Hold,
        other => return Err(format!("unknown scenario {other:?}").into()),
    };
    let mut values: HashMap<&str, &str> = HashMap::new();
    let mut samples = false;
    let mut it = rest.iter();
    while let Some(arg) = it.next() {
        let Some(flag) = arg.strip_prefix("--") else {
            return Err(format!("unexpected argument {arg:?}").into());
        };
        if flag == "samples" && scenario == Scenario::Cycle {
            samples = true;
            continue;
        }
        let (flag, value) = match flag.split_once('=') {
            Some((f, v)) => (f, v),
            None => {
                let v = it.next().ok_or(format!("--{flag} needs a value"))?;
                (flag, v.as_str())
            }
        };
        let known = scenario.flags().iter().find(|f| **f == flag);
        let Some(known) = known else {
            return Err(format!("unknown flag --{flag} for {}", scenario.as_str()).into());
        };
        if values.insert(known, value).is_some() {
            return Err(format!("--{flag} given twice").into());
        }
    }
    let need = |f: &str| -> Result<&str, Usage> {
        values
            .get(f)
            .copied()
            .ok_or_else(|| format!("--{f} is required").into())
    };
    let num = |f: &str, default: Option<u64>| -> Result<u64, Usage> {
        match values.get(f) {
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| format!("--{f}: not a non-negative integer: {v:?}").into()),
            None => default.ok_or_else(|| format!("--{f} is required").into()),
        }
    };
    let imp = match need("impl")? {
        "ours" => ImplKind::Ours,
        "ours-observed" => ImplKind::OursObserved,
        "ours-holder" => ImplKind::OursHolder,
        "rslock" => ImplKind::Rslock,
        "floor" => ImplKind::Floor,
        "floor-fenced" => ImplKind::FloorFenced,
        other => {
            return Err(format!(
                "unknown impl {other:?} (ours, ours-observed, ours-holder, rslock, floor, floor-fenced)"
            )
            .into())
        }
    };
    // A comma separates URLs; one that does not start a URL (`host:port` with no scheme)
    // continues the previous one (a cluster URL names several nodes).
    let mut servers: Vec<String> = Vec::new();
    for part in need("servers")?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        match servers.last_mut() {
            Some(last) if !part.contains("://") => {
                last.push(',');
                last.push_str(part);
            }
            _ => servers.push(part.to_string()),
        }
    }
    if servers.is_empty() {
        return Err("--servers: no server".into());
    }
    let ttl_default = if scenario == Scenario::Hold {
        60_000
    } else {
        10_000
    };
    let ttl_ms = num("ttl-ms", Some(ttl_default))?;
    if ttl_ms == 0 {
        return Err("--ttl-ms must be positive".into());
    }
    let duration_ms = match scenario {
        Scenario::Hold => 0,
        _ => num("duration-ms", None)?,
    };
    let name = values.get("name").copied().unwrap_or("bench").to_string();
    let (hold_ms, start_at_ms, worker) = if scenario == Scenario::Contend {
        (
            num("hold-ms", None)?,
            num("start-at-ms", None)?,
            need("worker")?.to_string(),
        )
    } else {
        (0, 0, String::new())
    };
    let tasks = if scenario == Scenario::Scale {
        num("tasks", None)?
    } else {
        0
    };
    let count = if scenario == Scenario::Hold {
        num("count", Some(10_000))?
    } else {
        0
    };
    if scenario == Scenario::Scale && tasks == 0 {
        return Err("--tasks must be positive".into());
    }
    Ok(Args {
        scenario,
        imp,
        servers,
        ttl: Duration::from_millis(ttl_ms),
        name,
        duration: Duration::from_millis(duration_ms),
        samples,
        hold: Duration::from_millis(hold_ms),
        start_at_ms,
        worker,
        tasks: tasks as usize,
        count: count as usize,
    })
}
