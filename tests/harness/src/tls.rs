//! TLS for tests: certificates made with the `openssl` command (a CA, a server certificate
//! for 127.0.0.1, a client certificate) and a redis-server with a TLS port.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{fixed_port, free_port, RedisServer};

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the openssl command (apt-get install openssl)");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA,
/// made in `dir` with the `openssl` command.
pub fn make_certs(dir: &Path) {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=fencelock test CA",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
    openssl(dir, &ca);
    for (name, ext) in [
        (
            "server",
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
        ),
        ("client", "extendedKeyUsage=clientAuth\n"),
    ] {
        std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
        let mut req = vec!["req", "-new", "-subj"];
        let subj = format!("/CN=fencelock test {name}");
        req.push(&subj);
        req.extend(ec);
        let (key, csr, crt, extfile) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
            format!("{name}.ext"),
        );
        req.extend(["-keyout", &key, "-out", &csr]);
        openssl(dir, &req);
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-days",
                "2",
                "-out",
                &crt,
                "-extfile",
                &extfile,
            ],
        );
    }
}

/// The `redis-server` arguments of a TLS port with the certificates [`make_certs`] made in
/// `certs`; `require_client_cert`: `--tls-auth-clients yes`.
pub fn server_args(certs: &Path, tls_port: u16, require_client_cert: bool) -> Vec<String> {
    let p = |f: &str| certs.join(f).display().to_string();
    vec![
        "--tls-port".to_string(),
        tls_port.to_string(),
        "--tls-cert-file".into(),
        p("server.crt"),
        "--tls-key-file".into(),
        p("server.key"),
        "--tls-ca-cert-file".into(),
        p("ca.crt"),
        "--tls-auth-clients".into(),
        if require_client_cert { "yes" } else { "no" }.into(),
    ]
}

/// A redis-server with a plain port and a TLS port, and the certificates it was made with.
pub struct TlsServer {
    /// The server (its plain port answers the test's own checks).
    pub server: RedisServer,
    /// The TLS port.
    pub tls_port: u16,
    certs: PathBuf,
}

impl TlsServer {
    /// Starts it with fresh certificates; `require_client_cert`: `--tls-auth-clients yes`.
    pub fn start(require_client_cert: bool) -> TlsServer {
        let certs = std::env::temp_dir().join(format!(
            "fencelock-tls-{}-{}",
            std::process::id(),
            free_port()
        ));
        std::fs::create_dir_all(&certs).unwrap();
        make_certs(&certs);
        let tls_port = fixed_port();
        let server =
            RedisServer::start_with_args(&server_args(&certs, tls_port, require_client_cert));
        TlsServer {
            server,
            tls_port,
            certs,
        }
    }

    /// `rediss://127.0.0.1:TLS_PORT`.
    pub fn url(&self) -> String {
        format!("rediss://127.0.0.1:{}", self.tls_port)
    }

    /// A file of the certificates' directory (`ca.crt`, `client.crt`, `client.key`, ...).
    pub fn file(&self, f: &str) -> PathBuf {
        self.certs.join(f)
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.certs);
    }
}
