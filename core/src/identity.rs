//! Which Redis process each of a manager's servers really is. Redlock's safety rests on its
//! servers being independent: two URLs that reach one process (`127.0.0.1:P` and
//! `localhost:P`, two databases of one server, two names of one host) would give that process
//! two votes. URLs cannot tell; the server's `run_id` (`INFO server`) can, once connected: the
//! second entry that reaches an already claimed process is refused, for good, naming both.
//! A user whose ACL denies `INFO` skips the check (the docs say so).

use std::collections::HashMap;
use std::sync::Mutex;

use redis::aio::MultiplexedConnection;

use crate::failure::ServerFailure;
use crate::sync::lock;

/// The processes a manager's servers reached: `run_id` → the label of the entry that reached
/// it first.
#[derive(Default)]
pub(crate) struct Identities {
    claimed: Mutex<HashMap<String, String>>,
}

impl Identities {
    /// Checks that the process behind `conn` is not another entry's: `label` claims it.
    ///
    /// # Errors
    /// A configuration failure naming the other entry when it already claimed the process.
    pub async fn claim(
        &self,
        conn: &mut MultiplexedConnection,
        label: &str,
    ) -> Result<(), ServerFailure> {
        let Some(run_id) = run_id(conn).await else {
            return Ok(());
        };
        let mut claimed = lock(&self.claimed);
        match claimed.get(&run_id) {
            Some(other) if other != label => Err(ServerFailure::Config(format!(
                "the same Redis server as {other} (run_id {run_id}): Redlock needs independent servers, so this entry is not used"
            ))),
            Some(_) => Ok(()),
            None => {
                claimed.insert(run_id, label.to_owned());
                Ok(())
            }
        }
    }
}

/// The server process's `run_id`, or `None` when `INFO` is denied or says none.
async fn run_id(conn: &mut MultiplexedConnection) -> Option<String> {
    let info: String = redis::cmd("INFO")
        .arg("server")
        .query_async(conn)
        .await
        .ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("run_id:"))
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
}
