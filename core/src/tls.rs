//! TLS settings of `rediss://` servers: where the CA and client certificate come from, and
//! their loading and checks at build time.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// Where a PEM document comes from.
#[derive(Clone)]
pub(crate) enum Pem {
    File(PathBuf),
    Bytes(Vec<u8>),
}

impl Pem {
    fn load(&self, what: &str) -> Result<Vec<u8>> {
        match self {
            Pem::Bytes(b) => Ok(b.clone()),
            Pem::File(path) => std::fs::read(path).map_err(|e| {
                Error::invalid(format!(
                    "cannot read the TLS {what} file {}: {e}",
                    path.display()
                ))
            }),
        }
    }
}

/// TLS settings for `rediss://` servers.
#[derive(Clone, Default)]
pub(crate) struct TlsSettings {
    pub ca: Option<Pem>,
    pub client: Option<(Pem, Pem)>,
    pub insecure: bool,
}

impl TlsSettings {
    pub fn is_set(&self) -> bool {
        self.ca.is_some() || self.client.is_some() || self.insecure
    }

    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if self.ca.is_some() {
            parts.push("custom CA");
        }
        if self.client.is_some() {
            parts.push("client certificate");
        }
        if self.insecure {
            parts.push("INSECURE (no verification)");
        }
        if parts.is_empty() {
            "system roots".into()
        } else {
            parts.join(", ")
        }
    }
}

/// TLS material loaded from files or bytes, ready for the connections.
pub(crate) struct LoadedTls {
    pub certificates: Option<redis::TlsCertificates>,
    pub insecure: bool,
}

impl TlsSettings {
    /// Reads the PEM documents and checks them.
    pub fn load(&self) -> Result<LoadedTls> {
        let root_cert = self.ca.as_ref().map(|p| p.load("CA")).transpose()?;
        if let Some(pem) = &root_cert {
            if !pem.windows(27).any(|w| w == b"-----BEGIN CERTIFICATE-----") {
                return Err(Error::invalid(
                    "the TLS CA bundle contains no PEM certificate (-----BEGIN CERTIFICATE-----)",
                ));
            }
        }
        let client_tls = match &self.client {
            Some((cert, key)) => {
                let (client_cert, client_key) =
                    (cert.load("client certificate")?, key.load("client key")?);
                check_key_pair(&client_cert, &client_key)?;
                Some(redis::ClientTlsConfig {
                    client_cert,
                    client_key,
                })
            }
            None => None,
        };
        let certificates =
            (root_cert.is_some() || client_tls.is_some()).then_some(redis::TlsCertificates {
                client_tls,
                root_cert,
            });
        Ok(LoadedTls {
            certificates,
            insecure: self.insecure,
        })
    }
}

/// Checks that a client certificate chain and key are PEM and belong together, so that a
/// mismatch fails the build instead of every connection.
fn check_key_pair(cert: &[u8], key: &[u8]) -> Result<()> {
    use rustls::crypto::ring::sign::any_supported_type;
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    use rustls::sign::CertifiedKey;

    let unusable = |why: String| Error::invalid(format!("TLS settings cannot be used: {why}"));
    let chain = CertificateDer::pem_slice_iter(cert)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|_| unusable("the client certificate file is not PEM".into()))?;
    if chain.is_empty() {
        return Err(unusable(
            "the client certificate file holds no certificate".into(),
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(key)
        .map_err(|_| unusable("the client key file holds no PEM private key".into()))?;
    let signer = any_supported_type(&key)
        .map_err(|e| unusable(format!("the client key cannot be used ({e})")))?;
    match CertifiedKey::new(chain, signer).keys_match() {
        Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => Err(
            unusable("the client key does not belong to the client certificate".into()),
        ),
        // Unknown (a key type whose public key rustls cannot derive): the server will judge.
        _ => Ok(()),
    }
}
