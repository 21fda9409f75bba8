//! JWT access tokens (RFC 9068) from the authorization server named by
//! `--auth-issuer`, checked against its JSON Web Key Set (`--auth-jwks-file`,
//! RFC 7517): the signature with the key the token's `kid` names, then `iss`
//! (the issuer), `aud` (this server, `--auth-audience`, RFC 8707's resource
//! indicator as the MCP authorization specification asks), `exp` and `nbf`.
//!
//! Only asymmetric algorithms are accepted (RSA, RSA-PSS, ECDSA, EdDSA): a
//! key set with a symmetric (`oct`) key is refused when it is loaded, and a
//! token whose header asks for HS256 or `none` is refused, so no token can
//! choose how it is checked. The key set is read again when its file changes
//! (a mounted ConfigMap's key rotation) and a token names a key it lacks.
//!
//! Signatures are verified with RustCrypto through `jsonwebtoken`; the
//! server only verifies with public keys, so the `rsa` crate's timing
//! advisory (RUSTSEC-2023-0071, private-key operations) does not reach it.

use jsonwebtoken::jwk::{AlgorithmParameters, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, Instant, SystemTime};

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECS: u64 = 60;

/// The algorithms a token may be signed with.
const ALGORITHMS: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// At most one re-read of the key set per this long for unknown `kid`s.
const RELOAD_EVERY: Duration = Duration::from_secs(10);

/// Why a key set file cannot be used. Names the file, never its content.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("cannot read the JWKS file {}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the JWKS file {} is not a JSON Web Key Set: {reason}", file.display())]
    Parse { file: PathBuf, reason: String },
    #[error("the JWKS file {} has no key this server can verify with: {reason}", file.display())]
    NoKey { file: PathBuf, reason: String },
}

impl crashdoc_core::Hint for JwksError {
    fn hint(&self) -> Option<std::borrow::Cow<'_, str>> {
        Some(
            "--auth-jwks-file takes the issuer's key set as JSON, {\"keys\": [...]} with RSA, EC or OKP public keys (the document at the issuer's jwks_uri); symmetric (oct) keys are refused"
                .into(),
        )
    }
}

/// Why a token was refused: the `error_description` of the 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// Not three base64url parts with a JSON header.
    Malformed,
    /// `alg` is not an asymmetric algorithm, or not the key's.
    Algorithm,
    /// No key in the set has the token's `kid`.
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `exp` has passed (past the leeway), or is missing.
    Expired,
    /// `nbf` is still ahead.
    NotYetValid,
    /// `iss` is not `--auth-issuer`.
    Issuer,
    /// `aud` does not name this server.
    Audience,
    /// A required claim is missing or has the wrong type.
    Claims,
}

impl Rejected {
    pub fn description(self) -> &'static str {
        match self {
            Rejected::Malformed => "the token is not a JWT",
            Rejected::Algorithm => "the token's signing algorithm is not accepted",
            Rejected::UnknownKey => {
                "the token is signed with a key the issuer's key set does not have"
            }
            Rejected::Signature => "the token's signature does not verify",
            Rejected::Expired => "the token has expired",
            Rejected::NotYetValid => "the token is not valid yet",
            Rejected::Issuer => "the token is from another issuer",
            Rejected::Audience => "the token is for another audience",
            Rejected::Claims => "the token lacks exp, iss or aud",
        }
    }
}

struct Loaded {
    keys: Vec<Key>,
    modified: Option<SystemTime>,
    checked: Instant,
}

struct Key {
    kid: Option<String>,
    /// The key's own `alg`, when it names one.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

/// Checks JWT access tokens against one issuer's key set.
pub struct JwtCheck {
    file: PathBuf,
    issuer: String,
    audience: String,
    loaded: RwLock<Loaded>,
}

impl std::fmt::Debug for JwtCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtCheck")
            .field("file", &self.file)
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .finish_non_exhaustive()
    }
}

impl JwtCheck {
    /// Read the key set now: a bad file stops the server before it listens.
    pub fn load(file: &Path, issuer: &str, audience: &str) -> Result<JwtCheck, JwksError> {
        let loaded = read(file)?;
        Ok(JwtCheck {
            file: file.to_path_buf(),
            issuer: issuer.to_string(),
            audience: audience.to_string(),
            loaded: RwLock::new(loaded),
        })
    }

    /// Whether a bearer credential has a JWT's shape (two dots), so that a
    /// static token is never fed to the JWT parser and back.
    pub fn looks_like_jwt(token: &[u8]) -> bool {
        token.iter().filter(|b| **b == b'.').count() == 2
    }

    /// Verify `token`; `Ok` only when its signature, issuer, audience and
    /// times all hold.
    pub fn verify(&self, token: &[u8]) -> Result<(), Rejected> {
        let token = std::str::from_utf8(token).map_err(|_| Rejected::Malformed)?;
        let header = jsonwebtoken::decode_header(token).map_err(|_| Rejected::Malformed)?;
        if !ALGORITHMS.contains(&header.alg) {
            return Err(Rejected::Algorithm);
        }
        let found = self.with_key(header.kid.as_deref(), |k| {
            if k.alg.is_some_and(|a| a != header.alg) {
                return Err(Rejected::Algorithm);
            }
            let mut v = Validation::new(header.alg);
            v.leeway = LEEWAY_SECS;
            v.validate_exp = true;
            v.validate_nbf = true;
            v.validate_aud = true;
            v.set_required_spec_claims(&["exp", "iss", "aud"]);
            v.set_issuer(&[&self.issuer]);
            v.set_audience(&[&self.audience]);
            jsonwebtoken::decode::<serde_json::Value>(token, &k.key, &v)
                .map(|_| ())
                .map_err(|e| rejected(e.kind()))
        });
        match found {
            Some(r) => r,
            None => Err(Rejected::UnknownKey),
        }
    }

    /// Run `f` with the key `kid` names (or the only key, when the token
    /// names none); re-read the file once when the key is not there and the
    /// file has changed.
    fn with_key<R>(&self, kid: Option<&str>, f: impl Fn(&Key) -> R) -> Option<R> {
        let pick = |l: &Loaded| -> Option<R> {
            match kid {
                Some(kid) => l
                    .keys
                    .iter()
                    .find(|k| k.kid.as_deref() == Some(kid))
                    .map(&f),
                None if l.keys.len() == 1 => l.keys.first().map(&f),
                None => None,
            }
        };
        if let Ok(l) = self.loaded.read()
            && let Some(r) = pick(&l)
        {
            return Some(r);
        }
        let mut l = self.loaded.write().ok()?;
        if l.checked.elapsed() < RELOAD_EVERY {
            return pick(&l);
        }
        l.checked = Instant::now();
        let modified = modified(&self.file);
        if modified.is_some() && modified != l.modified {
            // A file that became unreadable or bad keeps the keys it had.
            if let Ok(fresh) = read(&self.file) {
                *l = fresh;
            }
        }
        pick(&l)
    }
}

fn rejected(kind: &jsonwebtoken::errors::ErrorKind) -> Rejected {
    use jsonwebtoken::errors::ErrorKind as K;
    match kind {
        K::InvalidSignature => Rejected::Signature,
        K::ExpiredSignature => Rejected::Expired,
        K::ImmatureSignature => Rejected::NotYetValid,
        K::InvalidIssuer => Rejected::Issuer,
        K::InvalidAudience => Rejected::Audience,
        K::MissingRequiredClaim(c) if c == "exp" => Rejected::Expired,
        K::MissingRequiredClaim(_) | K::InvalidClaimFormat(_) => Rejected::Claims,
        K::InvalidAlgorithm | K::MissingAlgorithm | K::UnsupportedAlgorithm => Rejected::Algorithm,
        _ => Rejected::Malformed,
    }
}

/// When the file (through a ConfigMap mount's symlinks) last changed.
fn modified(file: &Path) -> Option<SystemTime> {
    std::fs::metadata(file).and_then(|m| m.modified()).ok()
}

fn read(file: &Path) -> Result<Loaded, JwksError> {
    let modified = modified(file);
    let text = std::fs::read_to_string(file).map_err(|source| JwksError::Read {
        file: file.to_path_buf(),
        source,
    })?;
    // The parser's message may quote the input: say only where it failed.
    let set: JwkSet = serde_json::from_str(&text).map_err(|e| JwksError::Parse {
        file: file.to_path_buf(),
        reason: format!("line {}, column {}", e.line(), e.column()),
    })?;
    let mut keys = Vec::new();
    let mut symmetric = 0;
    for jwk in &set.keys {
        if matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)) {
            symmetric += 1;
            continue;
        }
        let alg = jwk.common.key_algorithm.map(|a| {
            // the JOSE name (RFC 7518), as the key set spells it
            serde_json::to_value(a)
                .ok()
                .and_then(|v| v.as_str().and_then(|n| n.parse::<Algorithm>().ok()))
        });
        let alg = match alg {
            // a key for an algorithm this server does not verify (RSA1_5, ...)
            Some(None) => continue,
            Some(Some(a)) => Some(a),
            None => None,
        };
        if alg.is_some_and(|a| !ALGORITHMS.contains(&a)) {
            continue;
        }
        if let Ok(key) = DecodingKey::from_jwk(jwk) {
            keys.push(Key {
                kid: jwk.common.key_id.clone(),
                alg,
                key,
            });
        }
    }
    if symmetric > 0 {
        return Err(JwksError::NoKey {
            file: file.to_path_buf(),
            reason: format!(
                "{symmetric} symmetric (oct) key(s): a shared secret is no issuer's public key"
            ),
        });
    }
    if keys.is_empty() {
        return Err(JwksError::NoKey {
            file: file.to_path_buf(),
            reason: format!("{} key(s), none RSA, EC or OKP", set.keys.len()),
        });
    }
    Ok(Loaded {
        keys,
        modified,
        checked: Instant::now(),
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};

    /// A fresh key pair from the openssl CLI (as the TLS tests make their
    /// certificate): PKCS#8 PEM.
    pub(crate) fn openssl_key(dir: &Path, name: &str, args: &[&str]) -> EncodingKey {
        let path = dir.join(name);
        let out = std::process::Command::new("openssl")
            .arg("genpkey")
            .args(args)
            .arg("-out")
            .arg(&path)
            .output()
            .expect("openssl genpkey (install openssl: .ci/run does)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pem = std::fs::read(&path).unwrap();
        if args.contains(&"RSA") {
            EncodingKey::from_rsa_pem(&pem).unwrap()
        } else if args.contains(&"ED25519") {
            EncodingKey::from_ed_pem(&pem).unwrap()
        } else {
            EncodingKey::from_ec_pem(&pem).unwrap()
        }
    }

    pub(crate) fn jwks(keys: &[(&EncodingKey, Algorithm, &str)]) -> String {
        let keys: Vec<_> = keys
            .iter()
            .map(|(k, alg, kid)| {
                let mut j = jsonwebtoken::jwk::Jwk::from_encoding_key(k, *alg).unwrap();
                j.common.key_id = Some(kid.to_string());
                j
            })
            .collect();
        serde_json::to_string(&JwkSet { keys }).unwrap()
    }

    pub(crate) fn now() -> i64 {
        jiff::Timestamp::now().as_second()
    }

    pub(crate) fn sign(
        k: &EncodingKey,
        alg: Algorithm,
        kid: &str,
        claims: serde_json::Value,
    ) -> String {
        let mut h = Header::new(alg);
        h.kid = Some(kid.into());
        jsonwebtoken::encode(&h, &claims, k).unwrap()
    }

    const ISS: &str = "https://issuer.example.test";
    const AUD: &str = "https://mcp.example.test/mcp";

    fn claims(exp_in: i64) -> serde_json::Value {
        serde_json::json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": now() + exp_in})
    }

    #[test]
    fn tokens_are_checked_for_key_issuer_audience_and_time() {
        let dir = tempfile::tempdir().unwrap();
        let rsa = openssl_key(
            dir.path(),
            "rsa.pem",
            &["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        );
        let ec = openssl_key(
            dir.path(),
            "ec.pem",
            &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        );
        let other = openssl_key(
            dir.path(),
            "other.pem",
            &["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
        );
        let file = dir.path().join("jwks.json");
        std::fs::write(
            &file,
            jwks(&[
                (&rsa, Algorithm::RS256, "r1"),
                (&ec, Algorithm::ES256, "e1"),
            ]),
        )
        .unwrap();
        let c = JwtCheck::load(&file, ISS, AUD).unwrap();

        let ok = sign(&rsa, Algorithm::RS256, "r1", claims(300));
        assert!(JwtCheck::looks_like_jwt(ok.as_bytes()));
        assert_eq!(c.verify(ok.as_bytes()), Ok(()));
        assert_eq!(
            c.verify(sign(&ec, Algorithm::ES256, "e1", claims(300)).as_bytes()),
            Ok(())
        );

        // near misses, one claim or one key off each
        let expired = sign(
            &rsa,
            Algorithm::RS256,
            "r1",
            claims(-(LEEWAY_SECS as i64) - 5),
        );
        assert_eq!(c.verify(expired.as_bytes()), Err(Rejected::Expired));
        let within_leeway = sign(&rsa, Algorithm::RS256, "r1", claims(-5));
        assert_eq!(c.verify(within_leeway.as_bytes()), Ok(()));
        let mut wrong_aud = claims(300);
        wrong_aud["aud"] = "https://other.example.test/mcp".into();
        assert_eq!(
            c.verify(sign(&rsa, Algorithm::RS256, "r1", wrong_aud).as_bytes()),
            Err(Rejected::Audience)
        );
        let mut wrong_iss = claims(300);
        wrong_iss["iss"] = "https://evil.example.test".into();
        assert_eq!(
            c.verify(sign(&rsa, Algorithm::RS256, "r1", wrong_iss).as_bytes()),
            Err(Rejected::Issuer)
        );
        let mut no_aud = claims(300);
        no_aud.as_object_mut().unwrap().remove("aud");
        assert_eq!(
            c.verify(sign(&rsa, Algorithm::RS256, "r1", no_aud).as_bytes()),
            Err(Rejected::Claims)
        );
        let mut no_exp = claims(300);
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(
            c.verify(sign(&rsa, Algorithm::RS256, "r1", no_exp).as_bytes()),
            Err(Rejected::Expired)
        );
        let mut later = claims(300);
        later["nbf"] = (now() + 3600).into();
        assert_eq!(
            c.verify(sign(&rsa, Algorithm::RS256, "r1", later).as_bytes()),
            Err(Rejected::NotYetValid)
        );
        // another key under a kid the set has: the signature fails
        assert_eq!(
            c.verify(sign(&other, Algorithm::ES256, "e1", claims(300)).as_bytes()),
            Err(Rejected::Signature)
        );
        // a kid the set lacks
        assert_eq!(
            c.verify(sign(&other, Algorithm::ES256, "nope", claims(300)).as_bytes()),
            Err(Rejected::UnknownKey)
        );
        // the RSA key's kid with an EC algorithm: the key names RS256
        assert_eq!(
            c.verify(sign(&ec, Algorithm::ES256, "r1", claims(300)).as_bytes()),
            Err(Rejected::Algorithm)
        );
        // HS256 with the RSA key's public modulus as the secret: refused by alg
        let hs = sign(
            &EncodingKey::from_secret(b"n").unwrap(),
            Algorithm::HS256,
            "r1",
            claims(300),
        );
        assert_eq!(c.verify(hs.as_bytes()), Err(Rejected::Algorithm));
        // alg none, hand-made
        let b64 = |s: &str| {
            use base64::Engine as _;
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
        };
        let none = format!(
            "{}.{}.",
            b64(r#"{"alg":"none","kid":"r1"}"#),
            b64(&claims(300).to_string())
        );
        assert_ne!(c.verify(none.as_bytes()), Ok(()));
        assert_eq!(c.verify(b"a.b.c"), Err(Rejected::Malformed));
        assert!(!JwtCheck::looks_like_jwt(b"plain-static-token"));
    }

    #[test]
    fn a_rotated_key_set_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let a = openssl_key(dir.path(), "a.pem", &["-algorithm", "ED25519"]);
        let b = openssl_key(dir.path(), "b.pem", &["-algorithm", "ED25519"]);
        let file = dir.path().join("jwks.json");
        std::fs::write(&file, jwks(&[(&a, Algorithm::EdDSA, "a")])).unwrap();
        let c = JwtCheck::load(&file, ISS, AUD).unwrap();
        let by_b = sign(&b, Algorithm::EdDSA, "b", claims(300));
        assert_eq!(c.verify(by_b.as_bytes()), Err(Rejected::UnknownKey));
        std::fs::write(
            &file,
            jwks(&[(&a, Algorithm::EdDSA, "a"), (&b, Algorithm::EdDSA, "b")]),
        )
        .unwrap();
        // let the file's mtime move and the re-read window pass
        let later = std::time::SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(later)
            .unwrap();
        c.loaded.write().unwrap().checked = Instant::now() - RELOAD_EVERY - Duration::from_secs(1);
        assert_eq!(c.verify(by_b.as_bytes()), Ok(()));
    }

    #[test]
    fn bad_key_sets_are_refused_without_their_content() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("jwks.json");
        std::fs::write(
            &file,
            r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0LWNhbmFyeQ"}]}"#,
        )
        .unwrap();
        let e = JwtCheck::load(&file, ISS, AUD).unwrap_err().to_string();
        assert!(e.contains("symmetric"), "{e}");
        assert!(!e.contains("c2VjcmV0"), "{e}");
        std::fs::write(&file, "not json: s3cret-canary").unwrap();
        let e = JwtCheck::load(&file, ISS, AUD).unwrap_err().to_string();
        assert!(e.contains("line 1"), "{e}");
        assert!(!e.contains("s3cret"), "{e}");
        std::fs::write(&file, r#"{"keys": []}"#).unwrap();
        assert!(matches!(
            JwtCheck::load(&file, ISS, AUD),
            Err(JwksError::NoKey { .. })
        ));
        assert!(matches!(
            JwtCheck::load(&dir.path().join("missing.json"), ISS, AUD),
            Err(JwksError::Read { .. })
        ));
    }
}
