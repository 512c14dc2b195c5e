//! TLS to a PostgreSQL server, as libpq does it: `sslmode` (`disable`,
//! `allow`, `prefer` — the default —, `require`, `verify-ca`,
//! `verify-full`), `sslrootcert` (a file, `~/.postgresql/root.crt` when not
//! named, or `system`), `sslcert` / `sslkey` (a client certificate,
//! `~/.postgresql/postgresql.crt` and `.key`), from the URL's parameters or
//! else `PGSSLMODE`, `PGSSLROOTCERT`, `PGSSLCERT`, `PGSSLKEY`. Read here
//! rather than by tokio-postgres, which knows three modes and no files: the
//! URL it is given has these parameters taken out. rustls does the TLS.
//!
//! libpq's rules kept: a root certificate file that exists is checked in
//! every mode that does TLS (so `require` with one is `verify-ca`);
//! `verify-ca` checks the chain and not the name, `verify-full` both;
//! without a root certificate `allow`, `prefer` and `require` encrypt
//! without knowing who answers; `sslrootcert=system` is the system's trust
//! store and `verify-full` only; a socket is never TLS. Stricter than
//! libpq: a root certificate file named that does not exist is an error
//! in every mode (libpq's `allow`, `prefer` and `require` go on without
//! checking the server), and `prefer` whose handshake fails (a certificate
//! refused) does not try again without TLS.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

const MODES: [(SslMode, &str); 6] = [
    (SslMode::Disable, "disable"),
    (SslMode::Allow, "allow"),
    (SslMode::Prefer, "prefer"),
    (SslMode::Require, "require"),
    (SslMode::VerifyCa, "verify-ca"),
    (SslMode::VerifyFull, "verify-full"),
];

impl SslMode {
    fn parse(word: &str) -> Result<SslMode, TlsError> {
        MODES.iter().find(|(_, w)| *w == word).map(|(m, _)| *m).ok_or_else(|| TlsError::UnknownMode(word.into()))
    }
}

impl fmt::Display for SslMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(MODES.iter().find(|(m, _)| m == self).map_or("?", |(_, w)| w))
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TlsError {
    #[error("unknown sslmode `{0}`: libpq's are disable, allow, prefer, require, verify-ca and verify-full")]
    UnknownMode(String),
    #[error("sslrootcert=system needs sslmode=verify-full, not {0} (libpq's rule: any CA the system trusts signs names for anyone)")]
    SystemNeedsVerifyFull(SslMode),
    #[error("sslmode={mode} needs a root certificate: none at {}", shown(looked))]
    NeedsRoot { mode: SslMode, looked: Option<PathBuf> },
    #[error("sslrootcert {}: no such file", .0.display())]
    NoRootFile(PathBuf),
    #[error("client certificate {} has no private key at {}", cert.display(), key.display())]
    NoKey { cert: PathBuf, key: PathBuf },
    #[error("private key {} is open to group or others (mode {mode:o}; libpq's rule: 0600 at most, 0640 for root's): chmod 0600 it", path.display())]
    OpenKey { path: PathBuf, mode: u32 },
    #[error("{what} {}: {why}", path.display())]
    Unreadable { what: &'static str, path: PathBuf, why: String },
    #[error("TLS setup: {0}")]
    Setup(String),
}

/// Where a root certificate was looked for, in an error.
fn shown(looked: &Option<PathBuf>) -> String {
    match looked {
        Some(p) => p.display().to_string(),
        None => "~/.postgresql/root.crt (HOME is not set); name one with sslrootcert".into(),
    }
}

/// The parameters this module reads, as the URL (or the environment) gives them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Params {
    pub sslmode: Option<String>,
    pub sslrootcert: Option<String>,
    pub sslcert: Option<String>,
    pub sslkey: Option<String>,
}

impl Params {
    fn slot(&mut self, key: &str) -> Option<&mut Option<String>> {
        match key {
            "sslmode" => Some(&mut self.sslmode),
            "sslrootcert" => Some(&mut self.sslrootcert),
            "sslcert" => Some(&mut self.sslcert),
            "sslkey" => Some(&mut self.sslkey),
            _ => None,
        }
    }

    /// Each parameter the URL left out from libpq's variable for it
    /// (`PGSSLMODE`, …; an empty one is none).
    pub fn or_env(mut self, env: impl Fn(&str) -> Option<String>) -> Params {
        for (key, var) in [
            ("sslmode", "PGSSLMODE"),
            ("sslrootcert", "PGSSLROOTCERT"),
            ("sslcert", "PGSSLCERT"),
            ("sslkey", "PGSSLKEY"),
        ] {
            let slot = self.slot(key).expect("a key of ours");
            if slot.is_none() {
                *slot = env(var).filter(|v| !v.is_empty());
            }
        }
        self
    }
}

/// `url` without the parameters [`Params`] holds (tokio-postgres refuses a
/// parameter it does not know, and knows only three sslmodes), and those,
/// decoded; the last of one given twice wins, as in libpq.
pub fn split_url(url: &str) -> (String, Params) {
    let mut params = Params::default();
    let Some((head, query)) = url.split_once('?') else { return (url.to_string(), params) };
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let taken = pair.split_once('=').and_then(|(key, value)| {
            let slot = params.slot(&super::location::percent_decoded(key))?;
            *slot = Some(super::location::percent_decoded(value));
            Some(())
        });
        if taken.is_none() {
            kept.push(pair);
        }
    }
    let url = if kept.is_empty() { head.to_string() } else { format!("{head}?{}", kept.join("&")) };
    (url, params)
}

/// What of the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verify {
    /// Encrypted, but whoever answers is believed (libpq without a root certificate).
    Nothing,
    /// Signed by a root certificate (`verify-ca`, or a weaker mode with a root file).
    Chain,
    /// Signed by one and made out to the host connected to (`verify-full`).
    ChainAndName,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roots {
    File(PathBuf),
    /// The system's trust store (`sslrootcert=system`).
    System,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCert {
    pub cert: PathBuf,
    pub key: PathBuf,
}

/// How to connect: libpq's rules applied to the parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// `Disable` for a socket, whatever was asked.
    pub mode: SslMode,
    pub verify: Verify,
    pub roots: Option<Roots>,
    pub client: Option<ClientCert>,
}

/// libpq's rules: `params` (the URL's, then the environment's), `home` for
/// the `~/.postgresql` files, `over_tcp` false when every host is a socket
/// (no TLS, whatever sslmode says; an unknown one is still refused).
pub fn plan(params: &Params, home: Option<&Path>, over_tcp: bool) -> Result<Plan, TlsError> {
    let system = params.sslrootcert.as_deref() == Some("system");
    let mode = match &params.sslmode {
        Some(word) => SslMode::parse(word)?,
        None if system => SslMode::VerifyFull,
        None => SslMode::Prefer,
    };
    if system && mode != SslMode::VerifyFull {
        return Err(TlsError::SystemNeedsVerifyFull(mode));
    }
    let plain = Plan { mode: SslMode::Disable, verify: Verify::Nothing, roots: None, client: None };
    if mode == SslMode::Disable || !over_tcp {
        return Ok(plain);
    }
    let in_home = |name: &str| home.map(|h| h.join(".postgresql").join(name));
    let roots = match params.sslrootcert.as_deref() {
        Some("system") => Some(Roots::System),
        Some(named) if Path::new(named).exists() => Some(Roots::File(named.into())),
        Some(named) => return Err(TlsError::NoRootFile(named.into())),
        None => in_home("root.crt").filter(|p| p.exists()).map(Roots::File),
    };
    let verify = match (mode, &roots) {
        (SslMode::VerifyCa | SslMode::VerifyFull, None) => {
            return Err(TlsError::NeedsRoot { mode, looked: in_home("root.crt") })
        }
        (SslMode::VerifyFull, Some(_)) => Verify::ChainAndName,
        (_, Some(_)) => Verify::Chain,
        (_, None) => Verify::Nothing,
    };
    let cert = params.sslcert.as_ref().map(PathBuf::from).or_else(|| in_home("postgresql.crt"));
    let client = match cert.filter(|c| c.exists()) {
        None => None,
        Some(cert) => {
            let key = params.sslkey.as_ref().map(PathBuf::from).or_else(|| in_home("postgresql.key"));
            let key = key.unwrap_or_else(|| "~/.postgresql/postgresql.key".into());
            if !key.exists() {
                return Err(TlsError::NoKey { cert, key });
            }
            private_enough(&key)?;
            Some(ClientCert { cert, key })
        }
    };
    Ok(Plan { mode, verify, roots, client })
}

/// libpq's rule for a private key: no group or other bits, but a group
/// read bit on one of root's.
fn private_enough(key: &Path) -> Result<(), TlsError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(key).map_err(|e| TlsError::Unreadable {
        what: "private key",
        path: key.into(),
        why: e.to_string(),
    })?;
    let allowed = if meta.uid() == 0 { 0o640 } else { 0o600 };
    if meta.mode() & 0o077 & !allowed != 0 {
        return Err(TlsError::OpenKey { path: key.into(), mode: meta.mode() & 0o777 });
    }
    Ok(())
}

impl Plan {
    /// tokio-postgres's mode for each attempt: `allow` tries without TLS,
    /// then with it when the server refused; `prefer` takes TLS when the
    /// server offers it; the rest insist.
    pub fn attempts(&self) -> &'static [tokio_postgres::config::SslMode] {
        use tokio_postgres::config::SslMode as T;
        match self.mode {
            SslMode::Disable => &[T::Disable],
            SslMode::Allow => &[T::Disable, T::Require],
            SslMode::Prefer => &[T::Prefer],
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => &[T::Require],
        }
    }

    /// The rustls configuration: its roots, its check, the client certificate.
    pub fn client_config(&self) -> Result<rustls::ClientConfig, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = match &self.roots {
            None => None,
            Some(roots) => Some(Arc::new(root_store(roots)?)),
        };
        let verifier: Arc<dyn ServerCertVerifier> = match (self.verify, roots) {
            (Verify::ChainAndName, Some(roots)) => WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
                .build()
                .map_err(|e| TlsError::Setup(e.to_string()))?,
            (Verify::Chain, Some(roots)) => Arc::new(Checks { roots: Some(roots), provider: provider.clone() }),
            _ => Arc::new(Checks { roots: None, provider: provider.clone() }),
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| TlsError::Setup(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier);
        match &self.client {
            None => Ok(builder.with_no_client_auth()),
            Some(ClientCert { cert, key }) => {
                let unreadable = |what, path: &Path, why: String| TlsError::Unreadable { what, path: path.into(), why };
                let certs = CertificateDer::pem_file_iter(cert)
                    .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                    .map_err(|e| unreadable("client certificate", cert, e.to_string()))?;
                if certs.is_empty() {
                    return Err(unreadable("client certificate", cert, "no certificate in it".into()));
                }
                let key_der =
                    PrivateKeyDer::from_pem_file(key).map_err(|e| unreadable("private key", key, e.to_string()))?;
                builder.with_client_auth_cert(certs, key_der).map_err(|e| unreadable("private key", key, e.to_string()))
            }
        }
    }

    /// What went wrong connecting, in words: the server's own message, a
    /// certificate the check refused (and why it was checked), a server
    /// with no TLS when TLS was required, else the whole chain of causes.
    pub fn explain(&self, e: &tokio_postgres::Error) -> String {
        if let Some(db) = e.as_db_error() {
            return format!("{}{}", db.message(), db.detail().map(|d| format!(" ({d})")).unwrap_or_default());
        }
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            let tls = s.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref()?.downcast_ref::<rustls::Error>());
            match tls {
                Some(rustls::Error::InvalidCertificate(_)) => {
                    return format!("certificate verify failed: {s}{}", self.why_checked())
                }
                Some(_) => return format!("TLS handshake failed: {s}"),
                None => source = s.source(),
            }
        }
        let chain = chain(e);
        if chain.ends_with("server does not support TLS") {
            return format!("server does not support TLS but sslmode={}", self.mode);
        }
        chain
    }

    /// Why a mode weaker than verify-ca checked a certificate at all.
    fn why_checked(&self) -> String {
        match (&self.roots, self.mode) {
            (Some(Roots::File(f)), SslMode::Allow | SslMode::Prefer | SslMode::Require) => {
                format!(" (sslmode={} checks it because {} exists, as libpq does)", self.mode, f.display())
            }
            _ => String::new(),
        }
    }
}

/// An error and its causes, `: ` between them.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(&format!(": {s}"));
        source = s.source();
    }
    text
}

fn root_store(roots: &Roots) -> Result<RootCertStore, TlsError> {
    let mut store = RootCertStore::empty();
    match roots {
        Roots::File(path) => {
            let unreadable = |why: String| TlsError::Unreadable { what: "root certificate", path: path.clone(), why };
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| unreadable(e.to_string()))?;
            for cert in certs {
                store.add(cert).map_err(|e| unreadable(e.to_string()))?;
            }
            if store.is_empty() {
                return Err(unreadable("no certificate in it".into()));
            }
        }
        Roots::System => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                let why = found.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; ");
                return Err(TlsError::Setup(format!("sslrootcert=system: the system trusts no certificate ({why})")));
            }
        }
    }
    Ok(store)
}

/// `verify-ca` (a chain to one of `roots`, any name) and, with no roots,
/// libpq's weaker modes (no check of the certificate). Both check that the
/// handshake is signed by the certificate's key, so the connection is
/// encrypted to whoever holds it.
#[derive(Debug)]
struct Checks {
    roots: Option<Arc<RootCertStore>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Checks {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if let Some(roots) = &self.roots {
            let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
            rustls::client::verify_server_cert_signed_by_trust_anchor(
                &cert,
                roots,
                intermediates,
                now,
                self.provider.signature_verification_algorithms.all,
            )?;
        }
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(url: &str) -> Params {
        split_url(url).1
    }

    /// A home with `~/.postgresql/<name>` files, each with its mode.
    fn home(files: &[(&str, u32)]) -> tempfile::TempDir {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join(".postgresql");
        std::fs::create_dir(&dir).unwrap();
        for (name, mode) in files {
            std::fs::write(dir.join(name), "").unwrap();
            std::fs::set_permissions(dir.join(name), std::os::unix::fs::PermissionsExt::from_mode(*mode)).unwrap();
        }
        home
    }

    #[test]
    fn the_tls_parameters_are_taken_out_of_the_url_decoded_and_the_rest_kept_as_written() {
        let (rest, p) = split_url(
            "postgres://u:p%40w@h/d?application_name=b%20r&sslmode=require&ssl%72ootcert=%2Fetc%2Fca.pem&sslcert=c&sslkey=k&sslmode=verify-ca",
        );
        assert_eq!(rest, "postgres://u:p%40w@h/d?application_name=b%20r");
        assert_eq!(
            p,
            Params {
                sslmode: Some("verify-ca".into()),
                sslrootcert: Some("/etc/ca.pem".into()),
                sslcert: Some("c".into()),
                sslkey: Some("k".into()),
            },
            "decoded, a key spelt with %XX too, the last of two wins"
        );
        assert_eq!(
            split_url("postgres://h/d?sslmode=disable").0,
            "postgres://h/d",
            "no `?` left with nothing after it"
        );
        assert_eq!(split_url("postgres://h/d").0, "postgres://h/d");
        let rest = split_url("postgres://u@h/d?sslmode=verify-full&connect_timeout=3").0;
        rest.parse::<tokio_postgres::Config>().expect("what tokio-postgres is given, it reads");
    }

    #[test]
    fn libpqs_variables_fill_what_the_url_leaves_out() {
        let env = |var: &str| match var {
            "PGSSLMODE" => Some("verify-full".to_string()),
            "PGSSLROOTCERT" => Some("/env/root.crt".to_string()),
            "PGSSLCERT" => Some(String::new()),
            _ => None,
        };
        let p = params("postgres://h/d?sslmode=require").or_env(env);
        assert_eq!(p.sslmode.as_deref(), Some("require"), "the URL wins");
        assert_eq!(p.sslrootcert.as_deref(), Some("/env/root.crt"));
        assert_eq!(p.sslcert, None, "an empty variable is none");
        assert_eq!(params("postgres://h/d").or_env(env).sslmode.as_deref(), Some("verify-full"));
    }

    #[test]
    fn prefer_is_the_default_and_checks_nothing_without_a_root_certificate() {
        let empty = tempfile::tempdir().unwrap();
        let plan = plan(&Params::default(), Some(empty.path()), true).unwrap();
        assert_eq!(plan, Plan { mode: SslMode::Prefer, verify: Verify::Nothing, roots: None, client: None });
        assert_eq!(plan.attempts(), [tokio_postgres::config::SslMode::Prefer]);
        assert_eq!(super::plan(&Params::default(), None, true).unwrap().verify, Verify::Nothing, "no HOME");
    }

    #[test]
    fn a_root_certificate_in_home_makes_every_mode_with_tls_check_the_chain_and_verify_full_the_name() {
        let home = home(&[("root.crt", 0o644)]);
        let root = Some(Roots::File(home.path().join(".postgresql/root.crt")));
        for (mode, verify) in [
            ("allow", Verify::Chain),
            ("prefer", Verify::Chain),
            ("require", Verify::Chain),
            ("verify-ca", Verify::Chain),
            ("verify-full", Verify::ChainAndName),
        ] {
            let p = plan(&params(&format!("postgres://h/d?sslmode={mode}")), Some(home.path()), true).unwrap();
            assert_eq!((p.verify, &p.roots), (verify, &root), "sslmode={mode}");
        }
        let p = plan(&params("postgres://h/d?sslmode=disable"), Some(home.path()), true).unwrap();
        assert_eq!((p.mode, p.verify, p.roots), (SslMode::Disable, Verify::Nothing, None));
    }

    #[test]
    fn verify_ca_and_verify_full_need_a_root_certificate_and_say_where_none_was() {
        let empty = tempfile::tempdir().unwrap();
        for mode in ["verify-ca", "verify-full"] {
            let e = plan(&params(&format!("postgres://h/d?sslmode={mode}")), Some(empty.path()), true).unwrap_err();
            let looked = empty.path().join(".postgresql/root.crt");
            assert_eq!(e.to_string(), format!("sslmode={mode} needs a root certificate: none at {}", looked.display()));
        }
        let e = plan(&params("postgres://h/d?sslmode=verify-full"), None, true).unwrap_err();
        assert!(e.to_string().contains("HOME is not set"), "{e}");
        // Named but missing: refused in any mode with TLS (libpq would go on unchecked).
        let e = plan(&params("postgres://h/d?sslmode=require&sslrootcert=/no/such.crt"), None, true).unwrap_err();
        assert_eq!(e, TlsError::NoRootFile("/no/such.crt".into()));
        assert_eq!(e.to_string(), "sslrootcert /no/such.crt: no such file");
        let p = plan(&params("postgres://h/d?sslmode=disable&sslrootcert=/no/such.crt"), None, true).unwrap();
        assert_eq!(p.mode, SslMode::Disable, "no TLS, no file looked at");
    }

    #[test]
    fn an_unknown_sslmode_is_refused_naming_libpqs() {
        let e = plan(&params("postgres://h/d?sslmode=verify_full"), None, true).unwrap_err();
        assert_eq!(e, TlsError::UnknownMode("verify_full".into()));
        assert_eq!(
            e.to_string(),
            "unknown sslmode `verify_full`: libpq's are disable, allow, prefer, require, verify-ca and verify-full"
        );
        assert!(plan(&params("postgres://h/d?sslmode=REQUIRE"), None, false).is_err(), "over a socket too, as libpq");
    }

    #[test]
    fn a_socket_is_never_tls() {
        let p = plan(&params("postgres://h/d?sslmode=verify-full"), None, false).unwrap();
        assert_eq!(p, Plan { mode: SslMode::Disable, verify: Verify::Nothing, roots: None, client: None });
        assert_eq!(p.attempts(), [tokio_postgres::config::SslMode::Disable]);
    }

    #[test]
    fn the_systems_store_is_verify_full_only() {
        let p = plan(&params("postgres://h/d?sslrootcert=system"), None, true).unwrap();
        assert_eq!((p.mode, p.verify, p.roots), (SslMode::VerifyFull, Verify::ChainAndName, Some(Roots::System)));
        for mode in ["disable", "allow", "prefer", "require", "verify-ca"] {
            let e =
                plan(&params(&format!("postgres://h/d?sslrootcert=system&sslmode={mode}")), None, true).unwrap_err();
            assert_eq!(e.to_string(), format!("sslrootcert=system needs sslmode=verify-full, not {mode} (libpq's rule: any CA the system trusts signs names for anyone)"));
        }
    }

    #[test]
    fn each_mode_makes_its_attempts_allow_plain_first_then_tls() {
        use tokio_postgres::config::SslMode as T;
        let home = home(&[("root.crt", 0o644)]);
        let attempts = |mode: &str| {
            plan(&params(&format!("postgres://h/d?sslmode={mode}")), Some(home.path()), true).unwrap().attempts()
        };
        assert_eq!(attempts("disable"), [T::Disable]);
        assert_eq!(attempts("allow"), [T::Disable, T::Require]);
        assert_eq!(attempts("prefer"), [T::Prefer]);
        for mode in ["require", "verify-ca", "verify-full"] {
            assert_eq!(attempts(mode), [T::Require], "{mode}");
        }
    }

    #[test]
    fn a_client_certificate_is_used_when_there_and_its_key_must_be_there_and_private() {
        let url = "postgres://h/d?sslmode=require";
        let h = home(&[("postgresql.crt", 0o644), ("postgresql.key", 0o600)]);
        let dir = h.path().join(".postgresql");
        let client = plan(&params(url), Some(h.path()), true).unwrap().client;
        assert_eq!(client, Some(ClientCert { cert: dir.join("postgresql.crt"), key: dir.join("postgresql.key") }));

        std::fs::set_permissions(dir.join("postgresql.key"), std::os::unix::fs::PermissionsExt::from_mode(0o644))
            .unwrap();
        let e = plan(&params(url), Some(h.path()), true).unwrap_err();
        assert_eq!(e, TlsError::OpenKey { path: dir.join("postgresql.key"), mode: 0o644 });
        assert!(e.to_string().contains("(mode 644;") && e.to_string().ends_with("chmod 0600 it"), "{e}");

        std::fs::remove_file(dir.join("postgresql.key")).unwrap();
        let e = plan(&params(url), Some(h.path()), true).unwrap_err();
        assert_eq!(e, TlsError::NoKey { cert: dir.join("postgresql.crt"), key: dir.join("postgresql.key") });

        let named = format!("{url}&sslcert=/no/such.crt");
        assert_eq!(plan(&params(&named), Some(h.path()), true).unwrap().client, None, "no certificate: none sent");
        let empty = tempfile::tempdir().unwrap();
        assert_eq!(plan(&params(url), Some(empty.path()), true).unwrap().client, None);
    }

    #[test]
    fn a_root_file_with_no_certificate_in_it_is_refused_naming_it() {
        let h = home(&[("root.crt", 0o644)]);
        let p = plan(&params("postgres://h/d?sslmode=verify-ca"), Some(h.path()), true).unwrap();
        let e = p.client_config().unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("root certificate {}: no certificate in it", h.path().join(".postgresql/root.crt").display())
        );
    }
}
