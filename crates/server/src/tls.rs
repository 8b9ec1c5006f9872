//! TLS as Redis 7 configures it, with rustls (ring as the crypto
//! provider): the server's TLS settings built from the `tls-*`
//! directives, checked and rebuilt when CONFIG SET changes one (so a new
//! certificate is served without a restart), and the handshake of each
//! connection on `tls-port`. After the handshake a connection's session
//! travels with its socket ([`crate::connection::Stream`]) and is driven
//! over the same non-blocking reads and writes as a plain connection.
//!
//! With `tls-replication yes` a replica's link to its primary is TLS too
//! ([`client_config`], [`connect`]): the primary's certificate is checked
//! against the same CAs, and the replica presents `tls-client-cert-file`
//! (or, without one, `tls-cert-file`), as Redis does.
//!
//! What Redis's names mean here: `tls-protocols` takes `TLSv1.2` and
//! `TLSv1.3` (rustls has nothing older); `tls-ciphersuites` (TLS 1.3) and
//! `tls-ciphers` (TLS 1.2) take colon-separated OpenSSL suite names among
//! those rustls implements; `tls-auth-clients` `yes` requires a client
//! certificate from a CA of `tls-ca-cert-file` or `tls-ca-cert-dir`,
//! `optional` checks one if sent; `tls-prefer-server-ciphers` picks the
//! suite in the server's order; `tls-session-caching` keeps
//! `tls-session-cache-size` sessions for resumption. A key protected by
//! `tls-key-file-pass` (`tls-client-key-file-pass`) is decrypted with it:
//! PKCS#8 with PBES2, as openssl writes encrypted keys.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::ServerName;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{
    ClientConfig, ClientConnection, ConnectionCommon, RootCertStore, ServerConfig,
    ServerConnection, SupportedCipherSuite,
};
use tokio::net::TcpStream;

use crate::config::Config;

/// How long a client has to finish its handshake: a client that connects
/// and sends nothing (or a byte at a time) is let go after this.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The directives a TLS configuration is built from.
pub const DIRECTIVES: &[&str] = &[
    "tls-port",
    "tls-cert-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-ca-cert-file",
    "tls-ca-cert-dir",
    "tls-auth-clients",
    "tls-protocols",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-prefer-server-ciphers",
    "tls-session-caching",
    "tls-session-cache-size",
];

/// OpenSSL's names of the TLS 1.2 suites rustls implements.
const TLS12_NAMES: &[(&str, &str)] = &[
    (
        "ECDHE-ECDSA-AES256-GCM-SHA384",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-ECDSA-AES128-GCM-SHA256",
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-ECDSA-CHACHA20-POLY1305",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
    (
        "ECDHE-RSA-AES256-GCM-SHA384",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    ),
    (
        "ECDHE-RSA-AES128-GCM-SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    ),
    (
        "ECDHE-RSA-CHACHA20-POLY1305",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    ),
];

/// The server's current TLS settings; `None` without a `tls-port`.
#[derive(Default)]
pub struct Tls {
    current: RwLock<Option<Arc<ServerConfig>>>,
    /// The directives' values the settings were built from.
    built_from: RwLock<Vec<String>>,
    /// Connections in their handshake: they hold a descriptor each, so they
    /// count towards `maxclients` as connected clients do.
    handshaking: AtomicUsize,
}

/// A handshake under way, counted until it ends.
pub struct Handshaking<'a>(&'a AtomicUsize);

impl Drop for Handshaking<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Tls {
    /// The settings for `config`, built at start-up.
    pub fn new(config: &Config) -> Result<Tls, String> {
        let tls = Tls::default();
        tls.apply(config)?;
        Ok(tls)
    }

    /// The settings new connections get.
    pub fn current(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().clone()
    }

    /// Counts a handshake until the guard goes.
    pub fn begin_handshake(&self) -> Handshaking<'_> {
        self.handshaking.fetch_add(1, Ordering::Relaxed);
        Handshaking(&self.handshaking)
    }

    /// Handshakes under way.
    pub fn handshaking(&self) -> usize {
        self.handshaking.load(Ordering::Relaxed)
    }

    /// Rebuilds the settings if a TLS directive of `config` changed since
    /// they were built; on an error the settings stay as they were.
    pub fn apply(&self, config: &Config) -> Result<(), String> {
        let values: Vec<String> = DIRECTIVES.iter().map(|d| config.value(d)).collect();
        if *self.built_from.read() == values {
            return Ok(());
        }
        let built = match config.value("tls-port").as_str() {
            "0" | "" => None,
            _ => Some(server_config(config)?),
        };
        *self.current.write() = built;
        *self.built_from.write() = values;
        Ok(())
    }
}

/// Builds rustls's server settings from the `tls-*` directives; the error
/// names the file or value at fault.
pub fn server_config(config: &Config) -> Result<Arc<ServerConfig>, String> {
    let value = |name: &str| config.value(name);
    let (cert_file, key_file) = (value("tls-cert-file"), value("tls-key-file"));
    if cert_file.is_empty() || key_file.is_empty() {
        return Err("tls-port needs tls-cert-file and tls-key-file".into());
    }
    let certs = certificates(&cert_file)?;
    let key = private_key(&key_file, &value("tls-key-file-pass"))?;
    let mut provider = rustls::crypto::ring::default_provider();
    provider.cipher_suites =
        cipher_suites(&provider, &value("tls-ciphersuites"), &value("tls-ciphers"))?;
    let versions = protocol_versions(&value("tls-protocols"))?;
    let builder = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols, tls-ciphers, tls-ciphersuites: {e}"))?;
    let auth = value("tls-auth-clients");
    let builder = if auth == "no" {
        builder.with_no_client_auth()
    } else {
        let roots = Arc::new(ca_roots(
            &value("tls-ca-cert-file"),
            &value("tls-ca-cert-dir"),
        )?);
        let verifier = WebPkiClientVerifier::builder(roots);
        let verifier = match auth.as_str() {
            "optional" => verifier.allow_unauthenticated(),
            _ => verifier,
        };
        let verifier = verifier
            .build()
            .map_err(|e| format!("tls-ca-cert-file, tls-ca-cert-dir: {e}"))?;
        builder.with_client_cert_verifier(verifier)
    };
    let mut server = builder
        .with_single_cert(certs, key)
        .map_err(|e| format!("tls-cert-file {cert_file} with tls-key-file {key_file}: {e}"))?;
    server.ignore_client_order = value("tls-prefer-server-ciphers") == "yes";
    server.session_storage = match value("tls-session-caching").as_str() {
        "no" => Arc::new(NoServerSessionStorage {}),
        _ => {
            let size = value("tls-session-cache-size").parse().unwrap_or(20480);
            ServerSessionMemoryCache::new(size)
        }
    };
    Ok(Arc::new(server))
}

/// The private key in PEM file `path`; one encrypted with a password
/// (PKCS#8, `BEGIN ENCRYPTED PRIVATE KEY`, as openssl writes it) is
/// decrypted with `password`.
fn private_key(path: &str, password: &str) -> Result<PrivateKeyDer<'static>, String> {
    let failed = |why: String| format!("Failed to load private key {path}: {why}");
    let text = std::fs::read_to_string(path).map_err(|e| failed(e.to_string()))?;
    if !text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        return PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| failed(e.to_string()));
    }
    if password.is_empty() {
        return Err(failed("the key is encrypted: set tls-key-file-pass".into()));
    }
    let (_, document) = pkcs8::der::Document::from_pem(&text).map_err(|e| failed(e.to_string()))?;
    let encrypted = pkcs8::EncryptedPrivateKeyInfo::try_from(document.as_bytes())
        .map_err(|e| failed(e.to_string()))?;
    let decrypted = encrypted.decrypt(password).map_err(|e| {
        failed(format!(
            "wrong password or an encryption keel cannot read ({e})"
        ))
    })?;
    Ok(PrivateKeyDer::Pkcs8(decrypted.as_bytes().to_vec().into()))
}

fn certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|e| format!("Failed to load certificate {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!(
            "Failed to load certificate {path}: no certificate in it"
        ));
    }
    Ok(certs)
}

/// The CAs client certificates must come from: every certificate of
/// `file`, and of every file in `dir`.
fn ca_roots(file: &str, dir: &str) -> Result<RootCertStore, String> {
    if file.is_empty() && dir.is_empty() {
        return Err(
            "tls-auth-clients needs tls-ca-cert-file or tls-ca-cert-dir (or set it to no)".into(),
        );
    }
    let mut roots = RootCertStore::empty();
    let mut paths = Vec::new();
    if !file.is_empty() {
        paths.push(file.to_string());
    }
    if !dir.is_empty() {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("tls-ca-cert-dir {dir}: {e}"))?;
        paths.extend(
            entries
                .flatten()
                .map(|e| e.path().to_string_lossy().into_owned()),
        );
    }
    for path in paths {
        for cert in certificates(&path)? {
            roots
                .add(cert)
                .map_err(|e| format!("Failed to load CA certificate {path}: {e}"))?;
        }
    }
    Ok(roots)
}

/// `tls-protocols`: "TLSv1.2", "TLSv1.3" or both (the default).
fn protocol_versions(
    protocols: &str,
) -> Result<Vec<&'static rustls::SupportedProtocolVersion>, String> {
    if protocols.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    protocols
        .split_whitespace()
        .map(|p| match p.to_ascii_lowercase().as_str() {
            "tlsv1.3" => Ok(&rustls::version::TLS13),
            "tlsv1.2" => Ok(&rustls::version::TLS12),
            _ => Err(format!(
                "tls-protocols: keel's TLS has TLSv1.2 and TLSv1.3, not '{p}'"
            )),
        })
        .collect()
}

/// The suites `tls-ciphersuites` (TLS 1.3) and `tls-ciphers` (TLS 1.2)
/// allow, in their order; all of rustls's for a list left empty.
fn cipher_suites(
    provider: &CryptoProvider,
    tls13: &str,
    tls12: &str,
) -> Result<Vec<SupportedCipherSuite>, String> {
    let name = |suite: &SupportedCipherSuite| format!("{:?}", suite.suite());
    let pick = |list: &str, is13: bool| -> Result<Vec<SupportedCipherSuite>, String> {
        let of_version = provider
            .cipher_suites
            .iter()
            .filter(|s| matches!(s, SupportedCipherSuite::Tls13(_)) == is13);
        if list.trim().is_empty() {
            return Ok(of_version.copied().collect());
        }
        list.split(':')
            .map(|wanted| {
                // TLS 1.3's OpenSSL names are the IANA ones; rustls spells them TLS13_.
                let iana = match is13 {
                    true => wanted.replacen("TLS_", "TLS13_", 1),
                    false => (TLS12_NAMES.iter())
                        .find(|(openssl, _)| openssl.eq_ignore_ascii_case(wanted))
                        .map_or(wanted.to_string(), |(_, iana)| iana.to_string()),
                };
                (of_version.clone())
                    .find(|s| name(s).eq_ignore_ascii_case(&iana))
                    .copied()
                    .ok_or_else(|| {
                        let directive = if is13 {
                            "tls-ciphersuites"
                        } else {
                            "tls-ciphers"
                        };
                        format!("{directive}: keel's TLS has no suite '{wanted}'")
                    })
            })
            .collect()
    };
    let mut suites = pick(tls13, true)?;
    suites.extend(pick(tls12, false)?);
    Ok(suites)
}

/// Runs the server side of the handshake on `socket` with `config`; the
/// session, or why it failed (a client that is not speaking TLS, a
/// certificate refused, too slow).
pub async fn handshake(
    socket: &TcpStream,
    config: Arc<ServerConfig>,
) -> std::io::Result<ServerConnection> {
    let mut session = ServerConnection::new(config).map_err(std::io::Error::other)?;
    complete_handshake(socket, &mut session).await?;
    Ok(session)
}

/// rustls's client settings for a replica's link to its primary.
pub fn client_config(config: &Config) -> Result<Arc<ClientConfig>, String> {
    let value = |name: &str| config.value(name);
    let roots = ca_roots(&value("tls-ca-cert-file"), &value("tls-ca-cert-dir"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&protocol_versions(&value("tls-protocols"))?)
        .map_err(|e| format!("tls-protocols: {e}"))?
        .with_root_certificates(roots);
    let (cert, key, password) = match value("tls-client-cert-file").is_empty() {
        true => (
            value("tls-cert-file"),
            value("tls-key-file"),
            value("tls-key-file-pass"),
        ),
        false => (
            value("tls-client-cert-file"),
            value("tls-client-key-file"),
            value("tls-client-key-file-pass"),
        ),
    };
    let client = if cert.is_empty() {
        builder.with_no_client_auth()
    } else {
        let key = private_key(&key, &password)?;
        builder
            .with_client_auth_cert(certificates(&cert)?, key)
            .map_err(|e| format!("the replica's certificate {cert}: {e}"))?
    };
    Ok(Arc::new(client))
}

/// Runs the client side of the handshake with `host` on `socket`.
pub async fn connect(
    socket: &TcpStream,
    config: Arc<ClientConfig>,
    host: &str,
) -> std::io::Result<ClientConnection> {
    let name = ServerName::try_from(host.to_string()).map_err(std::io::Error::other)?;
    let mut session = ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    complete_handshake(socket, &mut session).await?;
    Ok(session)
}

/// Exchanges handshake records over `socket` until `session` is through
/// its handshake, or [`HANDSHAKE_TIMEOUT`] passes.
async fn complete_handshake<D>(
    socket: &TcpStream,
    session: &mut ConnectionCommon<D>,
) -> std::io::Result<()> {
    let exchange = async {
        while session.is_handshaking() {
            crate::connection::send_tls(socket, session).await?;
            if !session.is_handshaking() {
                break;
            }
            socket.readable().await?;
            match crate::connection::receive_tls(socket, session) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        crate::connection::send_tls(socket, session).await
    };
    match tokio::time::timeout(HANDSHAKE_TIMEOUT, exchange).await {
        Ok(done) => done,
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the handshake took too long",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_and_suites_use_redis_and_openssl_names() {
        assert_eq!(protocol_versions("").unwrap().len(), 2);
        assert_eq!(protocol_versions("TLSv1.2").unwrap().len(), 1);
        assert!(protocol_versions("TLSv1.1")
            .unwrap_err()
            .contains("TLSv1.1"));
        let provider = rustls::crypto::ring::default_provider();
        let all = cipher_suites(&provider, "", "").unwrap();
        assert_eq!(all.len(), provider.cipher_suites.len());
        let two = cipher_suites(
            &provider,
            "TLS_AES_256_GCM_SHA384",
            "ECDHE-RSA-AES128-GCM-SHA256",
        )
        .unwrap();
        assert_eq!(two.len(), 2);
        assert!(cipher_suites(&provider, "TLS_NOPE", "")
            .unwrap_err()
            .contains("tls-ciphersuites"));
        assert!(cipher_suites(&provider, "", "DES-CBC3-SHA")
            .unwrap_err()
            .contains("tls-ciphers"));
    }

    #[test]
    fn missing_files_are_named() {
        let mut config = Config::default();
        config.accepted.insert("tls-port", "6380".into());
        assert!(server_config(&config)
            .unwrap_err()
            .contains("tls-cert-file"));
        config
            .accepted
            .insert("tls-cert-file", "/nonexistent/cert.pem".into());
        config
            .accepted
            .insert("tls-key-file", "/nonexistent/key.pem".into());
        assert!(server_config(&config)
            .unwrap_err()
            .contains("/nonexistent/cert.pem"));
    }
}
