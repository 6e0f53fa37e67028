//! Cross-language contention: worker processes in Rust, Python, Node, C, Java and Go contend for the
//! same lock names on the same servers, and report their holds as `HOLD` lines that the
//! [history checker](crate::history) judges together.
//!
//! The workers are `chaos-worker contend` (Rust, this crate) and the four programs in
//! `tests/chaos/workers/`: `worker.py` (the installed `fencelock` wheel), `worker.mjs`
//! (`bindings-node`), `worker.c` (compiled here against the *installed* `libfencelock`
//! header and library, through pkg-config) and `Worker.java` (on `fencelock.jar`). They share one command line
//! (`--servers --names --rounds --hold-ms --holder --ttl-ms --wait-ms --server-timeout-ms
//! --duration-ms`) and one output protocol (`HOLD ...`, `FAIL kind=K took_ms=N`,
//! `RFAIL kind=K`, `SHORT name=.. validity_us=..` for a lock released unused because its
//! validity did not cover the hold, `DONE acquired=N failed=M`). Each also has the
//! interactive `hold` mode of `chaos-worker hold` (one lock, driven over stdin, writing to a
//! fenced and an unfenced store), for the paused-holder scenario of [`crate::paused`];
//! [`Launcher::spawn`] starts either mode.
//!
//! [`Toolchains::find`] locates what each language needs, and says what is missing:
//!
//! - Python: `$FENCELOCK_PYTHON`, else `target/venv-mixed/bin/python` or
//!   `target/venv-ci-python/bin/python` (the first that can `import fencelock`);
//! - Node: `node` (or `$FENCELOCK_NODE`) able to `require` `bindings-node` (or
//!   `$FENCELOCK_NODE_PACKAGE`), i.e. with its addon built;
//! - C: an install prefix made by `make -C bindings-c install PREFIX=...`:
//!   `$FENCELOCK_C_PREFIX`, else `target/mixed/c-prefix`; `worker.c` is compiled against it
//!   with `$CC` (default `cc`) into `target/mixed/worker-c`;
//! - Java: `java` on the PATH, and `$FENCELOCK_JAVA_CLASSPATH` (else `target/mixed/java`'s
//!   compiled worker and `fencelock.jar`, with Debian's `jna.jar`);
//! - Go: `$FENCELOCK_GO_WORKER`, else `target/mixed/worker-go` (`tests/chaos/workers/go`,
//!   built on `bindings-go`).
//!
//! `ci/stages/60-mixed.sh` (and `ci/demo.sh`) build all of them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::history::{check, Hold, Verdict};
use crate::worker::{field, num, Worker};

/// A language with a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Language {
    /// `chaos-worker contend`.
    Rust,
    /// `tests/chaos/workers/worker.py`.
    Python,
    /// `tests/chaos/workers/worker.mjs`.
    Node,
    /// `tests/chaos/workers/worker.c`.
    C,
    /// `tests/chaos/workers/Worker.java`.
    Java,
    /// `tests/chaos/workers/go/worker.go`.
    Go,
}

impl Language {
    /// Every language, in a fixed order.
    pub const ALL: [Language; 6] = [
        Language::Rust,
        Language::Python,
        Language::Node,
        Language::C,
        Language::Java,
        Language::Go,
    ];

    /// The lowercase name, also the prefix of its workers' holder ids (`python-2`).
    pub fn label(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::Node => "node",
            Language::C => "c",
            Language::Java => "java",
            Language::Go => "go",
        }
    }

    /// The language of a holder id made by [`start`] (`node-1` -> Node).
    pub fn of_holder(holder: &str) -> Option<Language> {
        let prefix = holder.split(['-', '/']).next()?;
        Language::ALL.into_iter().find(|l| l.label() == prefix)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// The repository root: `$FENCELOCK_ROOT`, else two levels above this crate.
pub fn root() -> PathBuf {
    if let Some(r) = std::env::var_os("FENCELOCK_ROOT") {
        return PathBuf::from(r);
    }
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    here.canonicalize().unwrap_or(here)
}

/// How to start one language's worker.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The language.
    pub language: Language,
    /// The program to run.
    pub program: PathBuf,
    /// Arguments before the worker's own (the script, for Python and Node).
    pub leading_args: Vec<String>,
    /// Extra environment.
    pub env: Vec<(String, String)>,
}

impl Launcher {
    /// The Rust worker: the `chaos-worker` binary at `exe`.
    pub fn rust(exe: &Path) -> Launcher {
        Launcher {
            language: Language::Rust,
            program: exe.to_path_buf(),
            leading_args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Starts this language's worker with `args` (after the launcher's own leading ones).
    pub fn spawn(&self, args: &[String]) -> Worker {
        let mut all = self.leading_args.clone();
        all.extend_from_slice(args);
        Worker::spawn_with_env(&self.program, &all, &self.env)
    }
}

/// What was found for each language.
#[derive(Debug, Clone, Default)]
pub struct Toolchains {
    /// A launcher per language that is ready.
    pub launchers: Vec<Launcher>,
    /// Why each missing language is missing.
    pub missing: Vec<String>,
}

impl Toolchains {
    /// Every language's toolchain, or `None` (the caller skips its test) when one is missing
    /// and `FENCELOCK_MIXED_REQUIRED` is not set; with it set (as CI does), a missing language
    /// is a failure. `rust_worker` is the `chaos-worker` binary.
    pub fn required_or_skip(rust_worker: &Path) -> Option<Toolchains> {
        let t = Toolchains::find(rust_worker);
        if t.missing.is_empty() {
            return Some(t);
        }
        let why = t.missing.join("\n  ");
        if std::env::var_os("FENCELOCK_MIXED_REQUIRED").is_some() {
            panic!("FENCELOCK_MIXED_REQUIRED is set, but a language's worker cannot run:\n  {why}");
        }
        eprintln!(
            "SKIPPED: a language's worker cannot run (set FENCELOCK_MIXED_REQUIRED=1 to make this \
             a failure; ci/stages/60-mixed.sh builds everything):\n  {why}"
        );
        None
    }

    /// Looks for every language's worker (see the [module docs](self)); `rust_worker` is the
    /// `chaos-worker` binary.
    pub fn find(rust_worker: &Path) -> Toolchains {
        let mut t = Toolchains::default();
        let root = root();
        let workers = root.join("tests/chaos/workers");
        let mut add = |r: Result<Launcher, String>| match r {
            Ok(l) => t.launchers.push(l),
            Err(why) => t.missing.push(why),
        };
        add(if rust_worker.is_file() {
            Ok(Launcher::rust(rust_worker))
        } else {
            Err(format!(
                "rust: no chaos-worker at {}",
                rust_worker.display()
            ))
        });
        add(find_python(&root, &workers));
        add(find_node(&root, &workers));
        add(find_c(&root, &workers));
        add(find_java(&root, &workers));
        add(find_go(&root, &workers));
        t
    }

    /// The launcher of `language`, if it was found.
    pub fn launcher(&self, language: Language) -> Option<&Launcher> {
        self.launchers.iter().find(|l| l.language == language)
    }
}

fn succeeds(cmd: &mut Command) -> bool {
    cmd.current_dir(std::env::temp_dir())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn find_python(root: &Path, workers: &Path) -> Result<Launcher, String> {
    let candidates: Vec<PathBuf> = match std::env::var_os("FENCELOCK_PYTHON") {
        Some(p) => vec![PathBuf::from(p)],
        None => vec![
            root.join("target/venv-mixed/bin/python"),
            root.join("target/venv-ci-python/bin/python"),
        ],
    };
    for python in &candidates {
        // From a neutral directory, so that the source tree cannot stand in for the wheel.
        if succeeds(Command::new(python).args(["-c", "import fencelock"])) {
            return Ok(Launcher {
                language: Language::Python,
                program: python.clone(),
                leading_args: vec![workers.join("worker.py").display().to_string()],
                env: Vec::new(),
            });
        }
    }
    Err(format!(
        "python: no interpreter that can `import fencelock` (tried {}; build one with \
         ci/stages/60-mixed.sh, or set FENCELOCK_PYTHON)",
        candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

fn find_node(root: &Path, workers: &Path) -> Result<Launcher, String> {
    let node =
        std::env::var_os("FENCELOCK_NODE").map_or_else(|| PathBuf::from("node"), PathBuf::from);
    let package = std::env::var_os("FENCELOCK_NODE_PACKAGE")
        .map_or_else(|| root.join("bindings-node"), PathBuf::from);
    let package = package.display().to_string();
    if succeeds(Command::new(&node).args(["-e", "require(process.argv[1])", &package])) {
        Ok(Launcher {
            language: Language::Node,
            program: node,
            leading_args: vec![workers.join("worker.mjs").display().to_string()],
            env: vec![("FENCELOCK_NODE_PACKAGE".into(), package)],
        })
    } else {
        Err(format!(
            "node: `{}` cannot require {package} (is node installed and the addon built? \
             ci/stages/60-mixed.sh builds it; or set FENCELOCK_NODE / FENCELOCK_NODE_PACKAGE)",
            node.display()
        ))
    }
}

fn find_java(root: &Path, workers: &Path) -> Result<Launcher, String> {
    let classpath = std::env::var("FENCELOCK_JAVA_CLASSPATH").unwrap_or_else(|_| {
        let java = root.join("target/mixed/java");
        format!(
            "{}:{}:/usr/share/java/jna.jar",
            java.join("worker").display(),
            java.join("fencelock.jar").display()
        )
    });
    let missing: Vec<&str> = classpath
        .split(':')
        .filter(|p| !Path::new(p).exists())
        .collect();
    if !missing.is_empty() || !succeeds(Command::new("java").arg("-version")) {
        return Err(format!(
            "java: no `java` on the PATH, or the class path lacks {missing:?} (built by \
             tests/chaos/workers/build.sh; or set FENCELOCK_JAVA_CLASSPATH)"
        ));
    }
    // A short-lived JVM: the serial collector and the first compiler tier start soonest.
    let leading = [
        "-XX:+UseSerialGC".to_string(),
        "-XX:TieredStopAtLevel=1".into(),
        format!("-Dfencelock.workers={}", workers.display()),
        "-cp".into(),
        classpath,
        "Worker".into(),
    ];
    Ok(Launcher {
        language: Language::Java,
        program: PathBuf::from("java"),
        leading_args: leading.to_vec(),
        env: Vec::new(),
    })
}

fn find_go(root: &Path, workers: &Path) -> Result<Launcher, String> {
    let exe = std::env::var_os("FENCELOCK_GO_WORKER")
        .map_or_else(|| root.join("target/mixed/worker-go"), PathBuf::from);
    if !exe.is_file() {
        return Err(format!(
            "go: no worker at {} (built by tests/chaos/workers/build.sh; or set \
             FENCELOCK_GO_WORKER)",
            exe.display()
        ));
    }
    Ok(Launcher {
        language: Language::Go,
        program: exe,
        leading_args: Vec::new(),
        env: vec![("FENCELOCK_WORKERS".into(), workers.display().to_string())],
    })
}

fn find_c(root: &Path, workers: &Path) -> Result<Launcher, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let exe = BUILT
        .get_or_init(|| compile_c_worker(root, workers))
        .clone()?;
    Ok(Launcher {
        language: Language::C,
        program: exe,
        leading_args: Vec::new(),
        env: Vec::new(),
    })
}

/// Compiles `worker.c` against the installed header and library of the prefix.
fn compile_c_worker(root: &Path, workers: &Path) -> Result<PathBuf, String> {
    let prefix = std::env::var_os("FENCELOCK_C_PREFIX")
        .map_or_else(|| root.join("target/mixed/c-prefix"), PathBuf::from);
    let pc_dir = prefix.join("lib/pkgconfig");
    if !pc_dir.join("fencelock.pc").is_file() {
        return Err(format!(
            "c: no libfencelock installed in {} (run `make -C bindings-c install PREFIX={}` \
             or ci/stages/60-mixed.sh, or set FENCELOCK_C_PREFIX)",
            prefix.display(),
            prefix.display()
        ));
    }
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "fencelock"])
        .env("PKG_CONFIG_PATH", &pc_dir)
        .output()
        .map_err(|e| format!("c: cannot run pkg-config: {e}"))?;
    if !flags.status.success() {
        return Err(format!(
            "c: pkg-config --cflags --libs fencelock failed: {}",
            String::from_utf8_lossy(&flags.stderr)
        ));
    }
    let flags = String::from_utf8_lossy(&flags.stdout).to_string();
    let out_dir = root.join("target/mixed");
    std::fs::create_dir_all(&out_dir).map_err(|e| format!("c: {}: {e}", out_dir.display()))?;
    let exe = out_dir.join("worker-c");
    // Built under a private name, then renamed: concurrent builders never see half a file.
    let tmp = out_dir.join(format!("worker-c.{}.tmp", std::process::id()));
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let lib_dir = prefix.join("lib");
    let status = Command::new(&cc)
        .args([
            "-std=c11",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-pedantic",
            "-O1",
        ])
        .arg(workers.join("worker.c"))
        .arg(format!(
            "-DFENCED_WRITE_FILE=\"{}\"",
            workers.join("fenced_write.lua").display()
        ))
        .args(flags.split_whitespace())
        .arg(format!("-Wl,-rpath,{}", lib_dir.display()))
        .arg("-o")
        .arg(&tmp)
        .status()
        .map_err(|e| format!("c: cannot run {cc}: {e}"))?;
    if !status.success() {
        let _ = std::fs::remove_file(&tmp);
        return Err(format!("c: compiling worker.c with {cc} failed ({status})"));
    }
    std::fs::rename(&tmp, &exe).map_err(|e| format!("c: {}: {e}", exe.display()))?;
    Ok(exe)
}

/// What every worker does.
#[derive(Debug, Clone)]
pub struct Spec {
    /// Server URLs.
    pub servers: Vec<String>,
    /// Lock names (each worker goes round them, starting at a name of its own).
    pub names: Vec<String>,
    /// Acquisition attempts per worker (at most).
    pub rounds: u64,
    /// How long each hold lasts (the Rust worker: a random time up to it).
    pub hold_ms: u64,
    /// TTL of each lock.
    pub ttl_ms: u64,
    /// Wait limit of each acquisition.
    pub wait_ms: u64,
    /// Per-server timeout.
    pub server_timeout_ms: u64,
    /// Stop after this long even if rounds are left (`None`: rounds only).
    pub duration_ms: Option<u64>,
}

impl Spec {
    fn args(&self, language: Language, holder: &str) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let mut flag = |k: &str, v: String| args.extend([k.to_string(), v]);
        if language == Language::Rust {
            // chaos-worker contend: one holder thread, random holds up to --max-hold-ms.
            flag("--holders", "1".into());
            flag("--max-hold-ms", self.hold_ms.to_string());
            let duration = self.duration_ms.unwrap_or(3_600_000);
            flag("--duration-ms", duration.to_string());
        } else {
            flag("--hold-ms", self.hold_ms.to_string());
            if let Some(d) = self.duration_ms {
                flag("--duration-ms", d.to_string());
            }
        }
        flag("--servers", self.servers.join(","));
        flag("--names", self.names.join(","));
        flag("--rounds", self.rounds.to_string());
        flag("--holder", holder.into());
        flag("--ttl-ms", self.ttl_ms.to_string());
        flag("--wait-ms", self.wait_ms.to_string());
        flag("--server-timeout-ms", self.server_timeout_ms.to_string());
        if language == Language::Rust {
            args.insert(0, "contend".into());
        }
        args
    }
}

/// A running worker with its holder id.
#[derive(Debug)]
pub struct Running {
    /// The holder id (`python-2`), also in its `HOLD` lines.
    pub holder: String,
    /// The process.
    pub worker: Worker,
}

/// Starts `per_language` workers of every language with `spec` (the setup of every
/// mixed-language run), their runs all starting at once (see [`open_gate`]).
pub fn start_every_language(t: &Toolchains, spec: &Spec, per_language: usize) -> Vec<Running> {
    start_every_language_with(t, spec, per_language, &[])
}

/// [`start_every_language`] with `extra` arguments for every worker (`--lease ...`: a
/// semaphore's permits or a read-write lock's shares instead of locks).
pub fn start_every_language_with(
    t: &Toolchains,
    spec: &Spec,
    per_language: usize,
    extra: &[&str],
) -> Vec<Running> {
    let mut workers: Vec<Running> = Language::ALL
        .into_iter()
        .flat_map(|l| {
            spawn_gated(
                t.launcher(l).expect("found"),
                spec,
                (1, per_language),
                extra,
            )
        })
        .collect();
    open_gate(&mut workers);
    workers
}

/// The lock names the mixed-language runs contend for.
pub fn contended_names() -> Vec<String> {
    ["alpha", "beta"].map(String::from).to_vec()
}

/// Starts `count` workers of `launcher`'s language, with holder ids `LANG-1..=count`
/// (numbered from `first`).
pub fn start(launcher: &Launcher, spec: &Spec, first: usize, count: usize) -> Vec<Running> {
    start_with(launcher, spec, (first, count), &[])
}

/// [`start`] with `extra` arguments for every worker.
pub fn start_with(
    launcher: &Launcher,
    spec: &Spec,
    first_and_count: (usize, usize),
    extra: &[&str],
) -> Vec<Running> {
    let mut workers = spawn_gated(launcher, spec, first_and_count, extra);
    open_gate(&mut workers);
    workers
}

/// Starts the workers, each waiting at its gate (`FENCELOCK_WORKER_GATE=1`: it says `READY`
/// once its manager is built, then waits for a line on stdin before its run begins).
fn spawn_gated(
    launcher: &Launcher,
    spec: &Spec,
    (first, count): (usize, usize),
    extra: &[&str],
) -> Vec<Running> {
    let mut gated = launcher.clone();
    gated.env.push(("FENCELOCK_WORKER_GATE".into(), "1".into()));
    (first..first + count)
        .map(|i| {
            let holder = format!("{}-{i}", launcher.language.label());
            let mut args = spec.args(launcher.language, &holder);
            args.extend(extra.iter().map(|a| a.to_string()));
            let worker = gated.spawn(&args);
            Running { holder, worker }
        })
        .collect()
}

/// How long a worker may take to load its language and build its manager: the JVM and the
/// interpreters on a loaded machine take seconds; longer is a hang.
const READY_LIMIT: Duration = Duration::from_secs(60);

/// Waits until every worker said `READY`, then lets them all go: their `--duration-ms` and
/// the test's own timeline (a fault after a warm-up) start at the same moment, however long
/// a language took to start (a JVM slowed by a loaded machine once held its first lock only
/// after the fault had begun).
pub fn open_gate(workers: &mut [Running]) {
    for r in workers.iter_mut() {
        r.worker.expect("READY", READY_LIMIT);
    }
    for r in workers.iter_mut() {
        r.worker.send("GO");
    }
}

/// Everything the workers reported.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Every hold, from every worker.
    pub holds: Vec<Hold>,
    /// `FAIL` lines (failed acquisitions), prefixed with the holder id.
    pub failures: Vec<String>,
    /// `RFAIL` lines (failed releases), prefixed with the holder id.
    pub release_failures: Vec<String>,
    /// `SHORT` lines (locks released unused: too little validity left for the hold),
    /// prefixed with the holder id.
    pub short: Vec<String>,
    /// Workers that did not finish cleanly (no `DONE` in time, a `DONE` count that does not
    /// match their `HOLD` lines, a non-zero exit), with what they said last.
    pub problems: Vec<String>,
    /// Holder ids of the workers that were collected.
    pub holders: Vec<String>,
}

impl Outcome {
    /// Failed acquisitions that did not fail cleanly (`not_acquired` or `unavailable`).
    pub fn unclean_failures(&self) -> Vec<&String> {
        self.failures
            .iter()
            .filter(|l| !matches!(field(l, "kind"), Some("not_acquired" | "unavailable")))
            .collect()
    }

    /// The history checker's verdict over every hold.
    pub fn verdict(&self) -> Verdict {
        check(&self.holds)
    }

    /// Number of holds per language.
    pub fn holds_by_language(&self) -> BTreeMap<Language, usize> {
        let mut m = BTreeMap::new();
        for h in &self.holds {
            if let Some(l) = Language::of_holder(&h.holder) {
                *m.entry(l).or_insert(0) += 1;
            }
        }
        m
    }

    /// Holder ids that appear in at least one hold.
    pub fn holders_that_held(&self) -> BTreeSet<String> {
        self.holds.iter().map(|h| h.holder.clone()).collect()
    }

    /// Handoffs: consecutive holds (in start order) on one name by different holders, and how
    /// many of them went from one language to another.
    pub fn handoffs(&self) -> (usize, usize) {
        let pairs = crate::soak::handoffs(&self.holds);
        let cross = pairs
            .iter()
            .filter(|(a, b)| Language::of_holder(&a.holder) != Language::of_holder(&b.holder))
            .count();
        (pairs.len(), cross)
    }
}

/// Reads every worker's output until its `DONE` line (or `deadline`), then waits for it to
/// exit. A worker that overruns the deadline is killed and listed in
/// [`problems`](Outcome::problems).
pub fn collect(workers: Vec<Running>, deadline: Instant) -> Outcome {
    let mut out = Outcome::default();
    for mut r in workers {
        out.holders.push(r.holder.clone());
        let mut holds = 0u64;
        let mut last = Vec::new();
        let mut done = false;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Some(line) = r.worker.next_line(left) else {
                break;
            };
            if let Some(h) = Hold::parse_line(&line) {
                out.holds.push(h);
                holds += 1;
                continue;
            }
            if line.starts_with("FAIL") {
                out.failures.push(format!("{}: {line}", r.holder));
            } else if line.starts_with("RFAIL") {
                out.release_failures.push(format!("{}: {line}", r.holder));
            } else if line.starts_with("SHORT") {
                out.short.push(format!("{}: {line}", r.holder));
            } else if line.starts_with("DONE") {
                if num(&line, "acquired") != holds {
                    out.problems.push(format!(
                        "{}: says {line:?} but printed {holds} HOLD lines",
                        r.holder
                    ));
                }
                done = true;
                break;
            }
            last.push(line);
            if last.len() > 5 {
                last.remove(0);
            }
        }
        if !done {
            out.problems.push(format!(
                "{} (pid {}): no DONE line before the deadline; it said last: {last:?}",
                r.holder,
                r.worker.pid()
            ));
            r.worker.kill();
            continue;
        }
        match r.worker.finish(Duration::from_secs(5)) {
            Some(s) if s.success() => {}
            other => out
                .problems
                .push(format!("{}: exited with {other:?}", r.holder)),
        }
    }
    out
}
