//! What the family's primitives share: a name whose leases (each a [`Lock`]) are acquired
//! by kind, released and extended by token without a lease object, and whose holders and
//! occupancy are read. [`Semaphore`](crate::Semaphore) and [`RwLock`](crate::RwLock) each hold
//! one and add only what is theirs (a limit and counts; read and write modes): a new
//! primitive on the lock's machinery starts here.

use std::sync::Arc;
use std::time::Duration;

use crate::acquire::{AcquireCall, AcquireOptions};
use crate::engine::{Engine, Target};
use crate::error::{ErrorKind, Result};
use crate::keys::check_name;
use crate::kind::LeaseKind;
use crate::lock::Lock;
use crate::scripts::PermitsView;
use crate::token;

/// One name's leases.
#[derive(Clone)]
pub(crate) struct Leases {
    engine: Arc<Engine>,
    name: Vec<u8>,
    /// The kind a lease is addressed as by its token (release and extend find it by the
    /// token: its count or mode does not matter to them), whose quorum also reads holders.
    by_token: LeaseKind,
    /// The primitive's name on the servers (`inspect.rs`): "semaphore", "rwlock".
    what: &'static str,
}

impl Leases {
    /// The leases of `name` (checked), addressed by token as `by_token`.
    pub fn new(
        engine: Arc<Engine>,
        name: &[u8],
        by_token: LeaseKind,
        what: &'static str,
    ) -> Result<Leases> {
        check_name(name)?;
        Ok(Leases {
            engine,
            name: name.to_vec(),
            by_token,
            what,
        })
    }

    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// A lease of `kind`, with every option of a lock's acquisition.
    pub async fn acquire(&self, kind: LeaseKind, opts: &AcquireOptions) -> Result<Lock> {
        AcquireCall::new_lease(&self.engine, &self.name, opts, kind)?
            .lock(opts)
            .await
    }

    /// One attempt at a lease of `kind`: `Ok(None)` when it is not free.
    pub async fn try_acquire(&self, kind: LeaseKind, ttl: Duration) -> Result<Option<Lock>> {
        let opts = AcquireOptions::new(ttl).wait(Some(Duration::ZERO));
        match self.acquire(kind, &opts).await {
            Ok(lease) => Ok(Some(lease)),
            Err(e) if e.kind() == ErrorKind::NotAcquired => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The occupancy on the servers (held, holders, waiters, limit), changing nothing.
    pub async fn occupancy(&self) -> Result<PermitsView> {
        self.engine.inspect_permits(&self.name, self.what).await
    }

    /// The holders that left a note, longest lease first.
    pub async fn holders(&self) -> Result<Vec<crate::LockHolder>> {
        let quorum = self.by_token.quorum(self.engine.n());
        self.engine.lease_holders(&self.name, quorum).await
    }

    /// Releases the lease held with `token`.
    pub async fn release_by_token(&self, token: &[u8]) -> Result<()> {
        let target = self.by_token(token)?;
        self.engine.release_by_token(&target).await
    }

    /// Extends the lease held with `token` to `ttl` from now; the validity this gives.
    pub async fn extend_by_token(&self, token: &[u8], ttl: Duration) -> Result<Duration> {
        let target = self.by_token(token)?;
        self.engine.extend_by_token(&target, ttl).await
    }

    fn by_token(&self, token: &[u8]) -> Result<Target> {
        token::check_token(token)?;
        Ok(self
            .engine
            .target_of(&self.name, token.to_vec(), self.by_token))
    }
}
