//! A command connection of one server entry: to one Redis server, or to a cluster (each
//! command routed by its first key's slot), or a calling thread's own connection
//! (`direct.rs`). `server.rs` opens and keeps it; `identity.rs` asks it which processes it
//! reaches.

use std::sync::Arc;

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{RedisFuture, Value};

use crate::direct::DirectConn;

/// A command connection: to one server, or to a cluster (each command routed to the node that
/// owns its first key's slot), with whether the cluster has sharded pub/sub (SPUBLISH, Redis
/// 7.0 and Valkey): where it has not (Redis 6.2), the scripts wake waiters with PUBLISH,
/// which a cluster carries to every node.
#[derive(Clone)]
pub(crate) enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection, Sharded),
    /// A calling thread's own connection, used synchronously (see `direct.rs`): its futures
    /// are ready at their first poll.
    Direct(Arc<DirectConn>),
}

/// Whether a connection's scripts publish wake-ups with SPUBLISH (sharded pub/sub, in the
/// lock's slot) rather than PUBLISH.
pub(crate) type Sharded = bool;

/// How a connection takes a script call (`ScriptCall::cmd_for`): as it is, or as a cluster
/// does (declaring the slot guard, see `keys.rs`), with sharded pub/sub or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    Single,
    Cluster(Sharded),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c, _) => c.req_packed_command(cmd),
            Conn::Direct(c) => {
                let reply = c.command(&cmd.get_packed_command());
                Box::pin(std::future::ready(reply))
            }
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(cmd, offset, count),
            Conn::Cluster(c, _) => c.req_packed_commands(cmd, offset, count),
            Conn::Direct(c) => {
                let reply = c.pipeline(&cmd.get_packed_pipeline(), offset, count);
                Box::pin(std::future::ready(reply))
            }
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c, _) => c.get_db(),
            Conn::Direct(c) => c.db(),
        }
    }
}

impl Conn {
    /// Whether its scripts publish wake-ups with SPUBLISH: a cluster's that has it.
    pub fn sharded(&self) -> Sharded {
        matches!(self, Conn::Cluster(_, true))
    }

    /// How it takes a script call.
    pub fn route(&self) -> Route {
        match self {
            Conn::Single(_) | Conn::Direct(_) => Route::Single,
            Conn::Cluster(_, sharded) => Route::Cluster(*sharded),
        }
    }

    /// The same connection, its scripts publishing with PUBLISH.
    pub fn unsharded(self) -> Conn {
        match self {
            Conn::Cluster(c, _) => Conn::Cluster(c, false),
            single => single,
        }
    }
}
