//! HTTPS for the scripted servers: a test CA and a server certificate for 127.0.0.1 made with the openssl
//! CLI, and any axum app served behind rustls on a thread of its own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A CA and a server certificate (for `127.0.0.1` and `localhost`) it signed, as PEM files in `dir`.
pub struct TestCa {
    /// The CA's certificate: what a client must be told to trust.
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TestCa {
    pub fn new(dir: &Path) -> TestCa {
        std::fs::create_dir_all(dir).unwrap();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("the openssl CLI");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let mut ca = vec!["req", "-x509"];
        ca.extend(ec);
        ca.extend(["-keyout", "ca.key", "-out", "ca.pem", "-days", "3"]);
        ca.extend(["-subj", "/CN=vouch test CA"]);
        openssl(&ca);
        let mut csr = vec!["req"];
        csr.extend(ec);
        csr.extend([
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
            "-subj",
            "/CN=127.0.0.1",
        ]);
        openssl(&csr);
        std::fs::write(
            dir.join("ext.cnf"),
            "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n\
             keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "3",
            "-extfile",
            "ext.cnf",
        ]);
        TestCa {
            ca: dir.join("ca.pem"),
            cert: dir.join("server.pem"),
            key: dir.join("server.key"),
        }
    }

    fn server_config(&self) -> Arc<rustls::ServerConfig> {
        let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&self.cert)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let key = PrivateKeyDer::from_pem_file(&self.key).unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(certs, key)
            .unwrap();
        Arc::new(config)
    }
}

/// A TCP listener whose connections are TLS: a handshake that fails (a client that does not trust the
/// certificate) is dropped and the next connection accepted.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((stream, addr)) = self.tcp.accept().await else {
                continue;
            };
            let handshake = self.acceptor.accept(stream);
            if let Ok(Ok(tls)) =
                tokio::time::timeout(std::time::Duration::from_secs(10), handshake).await
            {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// Serves `app` on a free local port from a thread of its own, over TLS with `ca`'s server certificate
/// when given; the base URL (`http://127.0.0.1:PORT` or `https://…`).
pub fn serve_in_thread(app: axum::Router, ca: Option<&TestCa>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let config = ca.map(TestCa::server_config);
    let url = format!(
        "{}://{addr}",
        if config.is_some() { "https" } else { "http" }
    );
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let tcp = tokio::net::TcpListener::from_std(listener).unwrap();
            match config {
                Some(config) => {
                    let acceptor = tokio_rustls::TlsAcceptor::from(config);
                    axum::serve(TlsListener { tcp, acceptor }, app)
                        .await
                        .unwrap();
                }
                None => axum::serve(tcp, app).await.unwrap(),
            }
        });
    });
    url
}
