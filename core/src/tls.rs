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
            Some((cert, key)) => Some(redis::ClientTlsConfig {
                client_cert: cert.load("client certificate")?,
                client_key: key.load("client key")?,
            }),
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
