//! Network faults between clients and servers: a network namespace the test makes, joined to
//! the host by a veth pair of its own, with nftables rules inside it. Workers run in the
//! namespace (`ip netns exec`, [`Netns::launcher`]); servers run on the host and also listen
//! on the pair's host address ([`Netns::server_args`]), which is the only address the workers
//! reach them by. Rules then cut the namespace off from some servers' ports both ways or one
//! way ([`Netns::cut`]), or drop a share of packets at random ([`Netns::drop_random`]);
//! [`Netns::heal`] removes them. Nothing outside the namespace and its pair is touched; the
//! namespace (and with it the pair) is deleted on drop.
//!
//! Needs root, `ip` (iproute2) and `nft` (nftables); [`Netns::create`] says which is missing.
//! This kernel has no `tc netem`: delay and reordering come from [`crate::proxy`].

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use crate::mixed::Launcher;

/// Which way packets are dropped between the namespace and the servers cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// Neither requests nor replies pass: a partition.
    Both,
    /// Requests reach the servers, which run them; their replies are lost.
    RepliesLost,
}

/// A network namespace with a veth pair to the host, deleted on drop.
#[derive(Debug)]
pub struct Netns {
    name: String,
    host_addr: String,
}

const TABLE: &str = "fencelock_chaos";

fn run(program: &str, args: &[&str]) -> Result<(), String> {
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{program} {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Why namespaces cannot be made here, if they cannot.
pub fn unavailable() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("network namespaces need root".into());
    }
    for (tool, package) in [("ip", "iproute2"), ("nft", "nftables")] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("`{tool}` is missing (Debian package {package})"));
        }
    }
    None
}

impl Netns {
    /// A new namespace joined to the host by a veth pair on a /30 of 10.0.0.0/8 of its own.
    ///
    /// # Panics
    /// When it cannot be made (not root, no `ip` or `nft`: see [`unavailable`]).
    pub fn create() -> Netns {
        if let Some(why) = unavailable() {
            panic!("fencelock-chaos: {why}");
        }
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let pid = std::process::id();
        loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let name = format!("flc{pid}n{n}");
            // 22 bits of subnet from the process and the counter: another test process's
            // namespaces are on other /30s.
            let subnet = (pid.wrapping_mul(64).wrapping_add(n)) & 0x3f_ffff;
            let base = (10u32 << 24) | (subnet << 2);
            let addr = |i: u32| std::net::Ipv4Addr::from(base + i).to_string();
            let (host_if, ns_if) = (format!("flh{pid}x{n}"), format!("fln{pid}x{n}"));
            if run("ip", &["netns", "add", &name]).is_err() {
                continue; // taken: the next number
            }
            let ns = Netns {
                name,
                host_addr: addr(1),
            };
            let host_cidr = format!("{}/30", addr(1));
            let ns_cidr = format!("{}/30", addr(2));
            let setup = run(
                "ip",
                &[
                    "link", "add", &host_if, "type", "veth", "peer", "name", &ns_if,
                ],
            )
            .and_then(|()| run("ip", &["link", "set", &ns_if, "netns", &ns.name]))
            .and_then(|()| run("ip", &["addr", "add", &host_cidr, "dev", &host_if]))
            .and_then(|()| run("ip", &["link", "set", &host_if, "up"]))
            .and_then(|()| ns.exec(&["ip", "addr", "add", &ns_cidr, "dev", &ns_if]))
            .and_then(|()| ns.exec(&["ip", "link", "set", &ns_if, "up"]))
            .and_then(|()| ns.exec(&["ip", "link", "set", "lo", "up"]))
            .and_then(|()| {
                ns.nft(&format!(
                    "add table inet {TABLE}\n\
                     add chain inet {TABLE} out {{ type filter hook output priority 0; }}\n\
                     add chain inet {TABLE} in {{ type filter hook input priority 0; }}"
                ))
            });
            match setup {
                Ok(()) => return ns,
                Err(e) => panic!("fencelock-chaos: setting up namespace {}: {e}", ns.name),
            }
        }
    }

    fn exec(&self, command: &[&str]) -> Result<(), String> {
        let mut args = vec!["netns", "exec", &self.name];
        args.extend_from_slice(command);
        run("ip", &args)
    }

    fn nft(&self, script: &str) -> Result<(), String> {
        let path = std::env::temp_dir().join(format!("{}.nft", self.name));
        std::fs::write(&path, script).map_err(|e| format!("{}: {e}", path.display()))?;
        let result = self.exec(&["nft", "-f", &path.display().to_string()]);
        let _ = std::fs::remove_file(&path);
        result
    }

    /// The host's address on the pair: the workers' way to the servers.
    pub fn host_addr(&self) -> &str {
        &self.host_addr
    }

    /// Extra `redis-server` arguments: listen on loopback (the test's own commands) and on
    /// the pair's host address.
    pub fn server_args(&self) -> Vec<String> {
        // Separate arguments: before 7.0, one argument "A B" was one (unknown) address.
        vec!["--bind".into(), "127.0.0.1".into(), self.host_addr.clone()]
    }

    /// `redis://HOST_ADDR:PORT` for each port: the servers as the workers reach them.
    pub fn urls(&self, ports: &[u16]) -> Vec<String> {
        ports
            .iter()
            .map(|p| format!("redis://{}:{p}", self.host_addr))
            .collect()
    }

    /// `launcher`'s workers, started inside the namespace.
    pub fn launcher(&self, launcher: &Launcher) -> Launcher {
        let mut leading_args: Vec<String> = vec!["netns".into(), "exec".into(), self.name.clone()];
        leading_args.push(launcher.program.display().to_string());
        leading_args.extend(launcher.leading_args.iter().cloned());
        Launcher {
            language: launcher.language,
            program: "ip".into(),
            leading_args,
            env: launcher.env.clone(),
        }
    }

    /// Drops the packets between the namespace and the servers on `ports`: both ways, or
    /// only their replies.
    pub fn cut(&self, ports: &[u16], way: Way) {
        let set = ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(", ");
        let host = &self.host_addr;
        let mut rules =
            format!("add rule inet {TABLE} in ip saddr {host} tcp sport {{ {set} }} drop\n");
        if way == Way::Both {
            rules +=
                &format!("add rule inet {TABLE} out ip daddr {host} tcp dport {{ {set} }} drop\n");
        }
        self.nft(&rules)
            .unwrap_or_else(|e| panic!("fencelock-chaos: cutting {set}: {e}"));
    }

    /// Drops `percent` % of the packets between the namespace and the host, each way, at
    /// random (nftables `numgen random`).
    pub fn drop_random(&self, percent: u8) {
        let host = &self.host_addr;
        let rules = format!(
            "add rule inet {TABLE} in ip saddr {host} numgen random mod 100 < {percent} drop\n\
             add rule inet {TABLE} out ip daddr {host} numgen random mod 100 < {percent} drop\n"
        );
        self.nft(&rules)
            .unwrap_or_else(|e| panic!("fencelock-chaos: random drop: {e}"));
    }

    /// Removes every rule: packets pass again.
    pub fn heal(&self) {
        self.nft(&format!("flush table inet {TABLE}\n"))
            .unwrap_or_else(|e| panic!("fencelock-chaos: heal: {e}"));
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        // The pair goes with the namespace; processes still inside would keep it: the tests
        // stop their workers first.
        if let Err(e) = run("ip", &["netns", "del", &self.name]) {
            eprintln!("fencelock-chaos: deleting namespace {}: {e}", self.name);
        }
    }
}
