//! A Sentinel entry's master: asked of its sentinels, in order, until one names it.

use crate::failure::ServerFailure;
use crate::url::SentinelSpec;

/// A client of the master the first answering sentinel of `spec` names, in `template`'s
/// protocol (TLS and its settings for a `rediss+sentinel://` entry).
///
/// # Errors
/// When no sentinel names one: a configuration failure when every sentinel refused us for
/// good (credentials, TLS), not listening when none listens, a connection failure otherwise.
pub(crate) async fn master(
    spec: &SentinelSpec,
    template: &redis::Client,
) -> Result<redis::Client, ServerFailure> {
    let mut why = Vec::new();
    let mut all_permanent = true;
    let mut all_refused = true;
    for sentinel in &spec.sentinels {
        let asked = async {
            let mut conn = sentinel.get_multiplexed_async_connection().await?;
            redis::cmd("SENTINEL")
                .arg("get-master-addr-by-name")
                .arg(&spec.master)
                .query_async::<Option<(String, u16)>>(&mut conn)
                .await
        };
        match asked.await {
            Ok(Some((host, port))) => {
                // The master's address in the template's protocol (TLS and its settings
                // for a rediss+sentinel:// entry).
                let template = template.get_connection_info();
                let addr = match template.addr().clone() {
                    redis::ConnectionAddr::TcpTls {
                        insecure,
                        tls_params,
                        ..
                    } => redis::ConnectionAddr::TcpTls {
                        host,
                        port,
                        insecure,
                        tls_params,
                    },
                    _ => redis::ConnectionAddr::Tcp(host, port),
                };
                let info = template.clone().set_addr(addr);
                return redis::Client::open(info).map_err(|e| ServerFailure::from_redis(&e));
            }
            Ok(None) => {
                all_permanent = false;
                all_refused = false;
                why.push(format!(
                    "{} does not know master {:?}",
                    sentinel.get_connection_info().addr(),
                    spec.master
                ))
            }
            Err(e) => {
                let failure = ServerFailure::from_redis(&e);
                all_permanent &= failure.is_permanent();
                all_refused &= failure.not_listening();
                let addr = sentinel.get_connection_info().addr();
                why.push(format!("sentinel {addr}: {failure}"));
            }
        }
    }
    let why = format!("no sentinel named a master: {}", why.join("; "));
    // Every sentinel refused us for good (credentials, TLS): no retry will help.
    Err(if all_permanent {
        ServerFailure::Config(why)
    } else if all_refused {
        ServerFailure::NotListening(why)
    } else {
        ServerFailure::Connection(why)
    })
}
