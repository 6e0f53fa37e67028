//! Which Redis process each of a manager's servers really is. Redlock's safety rests on its
//! servers being independent: two URLs that reach one process (`127.0.0.1:P` and
//! `localhost:P`, two databases of one server, two names of one host) would give that process
//! two votes. URLs cannot tell; the server's `run_id` (`INFO server`) can, once connected: the
//! second entry that reaches an already claimed process is refused, for good, naming both.
//! A cluster entry claims every node of the cluster (a cluster named twice, or a node of it
//! also named as a plain server, is one vote). A user whose ACL denies `INFO` skips the check
//! (the docs say so).

use std::collections::HashMap;
use std::sync::Mutex;

use redis::cluster_routing::{MultipleNodeRoutingInfo, RoutingInfo};
use redis::Value;

use crate::conn::Conn;
use crate::failure::ServerFailure;
use crate::sync::lock;

/// The processes a manager's servers reached: `run_id` → the label of the entry that reached
/// it first.
#[derive(Default)]
pub(crate) struct Identities {
    claimed: Mutex<HashMap<String, String>>,
}

impl Identities {
    /// Checks that the processes behind `conn` (one server, or every node of a cluster) are
    /// not another entry's: `label` claims them.
    ///
    /// # Errors
    /// A configuration failure naming the other entry when it already claimed a process.
    pub async fn claim(&self, conn: &mut Conn, label: &str) -> Result<(), ServerFailure> {
        let run_ids = run_ids(conn).await;
        let mut claimed = lock(&self.claimed);
        for run_id in &run_ids {
            if let Some(other) = claimed.get(run_id).filter(|other| *other != label) {
                return Err(ServerFailure::Config(format!(
                    "the same Redis server as {other} (run_id {run_id}): Redlock needs independent servers, so this entry is not used"
                )));
            }
        }
        for run_id in run_ids {
            claimed.entry(run_id).or_insert_with(|| label.to_owned());
        }
        Ok(())
    }
}

/// The `run_id` of the server process, or of every node of a cluster; none when `INFO` is
/// denied or says none.
async fn run_ids(conn: &mut Conn) -> Vec<String> {
    let mut info = redis::cmd("INFO");
    info.arg("server");
    let reply = match conn {
        Conn::Single(_) | Conn::Direct(_) => info.query_async::<Value>(conn).await,
        Conn::Cluster(c, _) => {
            let every = RoutingInfo::MultiNode((MultipleNodeRoutingInfo::AllNodes, None));
            c.route_command(info, every).await
        }
    };
    let mut texts = Vec::new();
    if let Ok(reply) = reply {
        collect_texts(&reply, &mut texts);
    }
    texts
        .iter()
        .flat_map(|info| info.lines())
        .filter_map(|l| l.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
        .collect()
}

/// Every string in a reply (one server's INFO text, or a cluster's map of node → text).
fn collect_texts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::BulkString(b) => out.push(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => out.push(s.clone()),
        Value::VerbatimString { text, .. } => out.push(text.clone()),
        Value::Array(items) | Value::Set(items) => {
            items.iter().for_each(|i| collect_texts(i, out));
        }
        Value::Map(pairs) => pairs.iter().for_each(|(_, i)| collect_texts(i, out)),
        _ => {}
    }
}
