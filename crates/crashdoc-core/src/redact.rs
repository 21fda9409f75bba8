//! Redaction of token-like strings in captured logs and quoted evidence,
//! and [`mask_url`], the one function that takes credentials out of a URL
//! before crashdoc shows it anywhere. Secrets' values are never fetched
//! into output at all; this catches the credentials programs print
//! themselves and the ones given to crashdoc in URLs (`--db`,
//! `--webhook`, a kubeconfig's server, an OIDC issuer).

use regex::Regex;
use std::borrow::Cow;
use std::sync::LazyLock;

static PATTERNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?P<jwt>eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})",
        r"|(?P<bearer>(?i:bearer)\s+)[A-Za-z0-9._~+/=-]{12,}",
        r"|(?P<prefixed>\b(?:hf_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|sk-(?:proj-)?|sk_live_|rk_live_|AKIA|ASIA)[A-Za-z0-9_-]{12,})",
        r"|(?P<kv>(?i:password|passwd|secret|token|api[_-]?key|access[_-]?key|secret[_-]?key|client[_-]?secret)[\x22']?\s*[:=]\s*[\x22']?)[^\s\x22',;&]{6,}",
        r"|(?P<url>://[^/\s:@]+:)[^/\s@]{3,}@",
    ))
    .expect("static regex")
});

/// Replace token-like strings with `[REDACTED]`, keeping the text around them.
pub fn redact(line: &str) -> Cow<'_, str> {
    PATTERNS.replace_all(line, |c: &regex::Captures| {
        if let Some(m) = c.name("bearer") {
            format!("{}[REDACTED]", m.as_str())
        } else if let Some(m) = c.name("kv") {
            format!("{}[REDACTED]", m.as_str())
        } else if let Some(m) = c.name("url") {
            format!("{}[REDACTED]@", m.as_str())
        } else {
            "[REDACTED]".to_string()
        }
    })
}

/// The URL with its credentials replaced by `***`, the one function that
/// turns a URL into text for a message, a log, a metric label, a bundle or
/// an MCP result:
/// - the userinfo's password (`user:***@host`), and a userinfo that is a
///   token by itself (`https://ghp_…@github.com`);
/// - the value of every query (and fragment) parameter that names a
///   credential: `password`, `token`, `access_token`, `key`, `api_key`,
///   `secret`, `sig`, `signature`, `X-Amz-Signature`, … (see
///   [`is_secret_param`]);
/// - webhook path secrets: Slack's `hooks.slack.com/services/T/B/SECRET`
///   (and `/workflows/…`, `/triggers/…`), Discord's
///   `/api/webhooks/ID/TOKEN`, Teams' `…/IncomingWebhook/ID/GUID`, and any
///   other path segment that looks like a token (long, letters and digits).
///
/// Anything that is not a URL is returned with the same parameters masked.
pub fn mask_url(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let (authority_and_rest, is_url) = match url.find("://") {
        Some(i) => {
            out.push_str(&url[..i + 3]);
            (&url[i + 3..], true)
        }
        None => (url, false),
    };
    let mut rest = authority_and_rest;
    if is_url && let Some(at) = userinfo_end(rest) {
        let u = &rest[..at];
        match u.find(':') {
            Some(colon) => {
                out.push_str(&u[..colon]);
                out.push_str(":***");
            }
            None if looks_like_token(u) => out.push_str("***"),
            None => out.push_str(u),
        }
        out.push('@');
        rest = &rest[at + 1..];
    }
    let (rest, fragment) = match rest.split_once('#') {
        Some((r, f)) => (r, Some(f)),
        None => (rest, None),
    };
    let (head, query) = match rest.split_once('?') {
        Some((r, q)) => (r, Some(q)),
        None => (rest, None),
    };
    if is_url {
        let (host, path) = match head.find('/') {
            Some(i) => head.split_at(i),
            None => (head, ""),
        };
        out.push_str(host);
        out.push_str(&mask_path(host, path));
    } else {
        out.push_str(head);
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(&mask_params(q));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(&mask_params(f));
    }
    out
}

/// Where the userinfo of `rest` (a URL after its `scheme://`) ends: the
/// index of its '@'. Normally the last '@' before the first '/', '?' or
/// '#'; but a password may hold those characters, so when the authority
/// has `user:` followed by something that is no port, the last '@' of all.
fn userinfo_end(rest: &str) -> Option<usize> {
    let sep = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..sep];
    if let Some(at) = authority.rfind('@') {
        return Some(at);
    }
    let (_, after_colon) = authority.split_once(':')?;
    if !after_colon.is_empty() && after_colon.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.rfind('@').filter(|&at| at > sep)
}

/// Every URL in `text` (`scheme://…` up to white space or a quote) through
/// [`mask_url`]; the text around them is kept. For error chains and log
/// lines that may quote a URL another library put in them.
pub fn mask_urls_in(text: &str) -> Cow<'_, str> {
    static URL: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r#"[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>`]+"#).expect("static regex")
    });
    URL.replace_all(text, |c: &regex::Captures| mask_url(&c[0]))
}

fn mask_params(q: &str) -> String {
    q.split('&')
        .map(|kv| match kv.split_once('=') {
            Some((k, _)) if is_secret_param(k) => format!("{k}=***"),
            _ => kv.to_string(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Whether a query parameter's name says its value is a credential.
pub fn is_secret_param(k: &str) -> bool {
    let k = percent_decode(k).to_ascii_lowercase().replace('-', "_");
    const EXACT: &[&str] = &[
        "key",
        "sig",
        "code",
        "auth",
        "pwd",
        "pass",
        "jwt",
        "session",
        "sessionid",
        "sid",
        "x_amz_credential",
        "x_goog_credential",
        "hmac",
        "apikey",
        "authorization",
    ];
    const PART: &[&str] = &[
        "token",
        "secret",
        "passw",
        "signature",
        "api_key",
        "apikey",
        "access_key",
        "private_key",
        "credential",
        "auth_key",
        "client_key",
    ];
    EXACT.contains(&k.as_str()) || PART.iter().any(|p| k.contains(p))
}

/// The path with its secret segments masked (see [`mask_url`]).
fn mask_path(host: &str, path: &str) -> String {
    if path.is_empty() {
        return String::new();
    }
    let host = host
        .rsplit_once(':')
        .filter(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
        .map_or(host, |(h, _)| h)
        .to_ascii_lowercase();
    let segs: Vec<&str> = path.split('/').collect();
    // The index (in `segs`, whose first is "") from which every segment is
    // a secret, for the webhook services whose URL is their credential.
    let lower: Vec<String> = segs.iter().map(|s| s.to_ascii_lowercase()).collect();
    let from =
        |marker: &str, skip: usize| lower.iter().position(|s| s == marker).map(|i| i + 1 + skip);
    let secret_from = if host == "hooks.slack.com" || host.ends_with(".slack.com") {
        // /services/T…/B…/SECRET, /workflows/T…/A…/ID/SECRET,
        // /triggers/T…/ID/SECRET: the last segment.
        Some(segs.len().saturating_sub(1).max(1))
    } else if host.ends_with("discord.com") || host.ends_with("discordapp.com") {
        from("webhooks", 1)
    } else if host.ends_with("webhook.office.com") || host.ends_with("logic.azure.com") {
        from("incomingwebhook", 0)
    } else {
        None
    };
    segs.iter()
        .enumerate()
        .map(|(i, s)| {
            let secret = secret_from.is_some_and(|f| i >= f && !s.is_empty());
            if secret || looks_like_token(s) {
                "***"
            } else {
                s
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// A string that reads as a generated credential rather than a name: at
/// least 20 characters of a token's alphabet, with letters and digits, or
/// one of the well-known token prefixes.
fn looks_like_token(s: &str) -> bool {
    let s = percent_decode(s);
    if PREFIXED.is_match(&s) {
        return true;
    }
    s.len() >= 20
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~+=".contains(&b))
        && s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes().any(|b| b.is_ascii_alphabetic())
        // A file name (model-00001-of-00004.safetensors) is no token.
        && !s.contains('.')
}

static PREFIXED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:hf_|ghp_|gho_|ghs_|github_pat_|glpat-|xox[abpr]-|sk-|sk_live_|rk_live_)[A-Za-z0-9_-]{12,}$")
        .expect("static regex")
});

/// `%XX` sequences decoded (invalid ones kept as they are).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_redacted() {
        let cases = [
            (
                "Authorization: Bearer abcdefghijklmnop123",
                "Authorization: Bearer [REDACTED]",
            ),
            (
                "using token hf_AbCdEfGhIjKlMnOpQrStUv",
                "using token [REDACTED]",
            ),
            (
                "DATABASE_URL=postgres://app:hunter2pass@db:5432/x",
                "DATABASE_URL=postgres://app:[REDACTED]@db:5432/x",
            ),
            (
                "password=s3cretvalue host=db",
                "password=[REDACTED] host=db",
            ),
            ("key AKIAIOSFODNN7EXAMPLE1 used", "key [REDACTED] used"),
            (
                "\"api_key\": \"0123456789abcdef\"",
                "\"api_key\": \"[REDACTED]\"",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(redact(input), want, "{input}");
        }
    }

    #[test]
    fn urls_are_masked() {
        for (url, masked) in [
            (
                "postgres://u:secret@h:5432/db",
                "postgres://u:***@h:5432/db",
            ),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db", "postgres://h/db"),
            (
                "postgresql://u:p%40ss@h/db?sslmode=require&password=zz&application_name=x",
                "postgresql://u:***@h/db?sslmode=require&password=***&application_name=x",
            ),
            ("postgres://u:a/b?c@h/db", "postgres://u:***@h/db"),
            ("postgres://u:a@b@h/db", "postgres://u:***@h/db"),
            (
                "postgres://h/db?sslpassword=k",
                "postgres://h/db?sslpassword=***",
            ),
            ("postgres://h/db?PASSWORD=k", "postgres://h/db?PASSWORD=***"),
            ("/var/lib/h.redb", "/var/lib/h.redb"),
            (
                "https://hooks.slack.com/services/T0001/B0002/xyzzy",
                "https://hooks.slack.com/services/T0001/B0002/***",
            ),
            (
                "https://discord.com/api/webhooks/1234/abc-def",
                "https://discord.com/api/webhooks/1234/***",
            ),
            (
                "https://acme.webhook.office.com/webhookb2/g1@g2/IncomingWebhook/abc/def/V2x",
                "https://acme.webhook.office.com/webhookb2/g1@g2/IncomingWebhook/***/***/***",
            ),
            (
                "https://hooks.example.com/notify/a1b2c3d4e5f6a7b8c9d0e1f2?channel=ops",
                "https://hooks.example.com/notify/***?channel=ops",
            ),
            (
                "https://x.example/cb?access_token=aa&api_key=bb&sig=cc&X-Amz-Signature=dd&page=2",
                "https://x.example/cb?access_token=***&api_key=***&sig=***&X-Amz-Signature=***&page=2",
            ),
            (
                "https://x.example/cb#id_token=aa&state=s",
                "https://x.example/cb#id_token=***&state=s",
            ),
            (
                "https://ghp_abcdefghijklmnop1234@github.com/o/r",
                "https://***@github.com/o/r",
            ),
            (
                "https://x.example/cb?email=a@b.c&token=zz",
                "https://x.example/cb?email=a@b.c&token=***",
            ),
            (
                "https://u:pw@10.0.0.1:6443/api?timeout=3",
                "https://u:***@10.0.0.1:6443/api?timeout=3",
            ),
            (
                "https://issuer.example.com/realms/prod?client_secret=zz",
                "https://issuer.example.com/realms/prod?client_secret=***",
            ),
        ] {
            assert_eq!(mask_url(url), masked, "{url}");
        }
    }

    #[test]
    fn ordinary_urls_are_kept_whole() {
        for url in [
            "https://10.0.0.1:6443",
            "https://kubernetes.default.svc/api/v1/namespaces/llm/pods",
            "https://huggingface.co/meta-llama/Llama-3.1-8B-Instruct/resolve/main/model-00001-of-00004.safetensors",
            "https://accounts.google.com?monkey=1&keyword=x",
            "http://127.0.0.1:8765/mcp",
        ] {
            assert_eq!(mask_url(url), url, "{url}");
        }
    }

    #[test]
    fn urls_inside_text_are_masked() {
        let t = "error sending request for url (https://hooks.slack.com/services/T1/B2/SEKRIT): connection refused; db postgres://a:pw@h/d.";
        let m = mask_urls_in(t);
        assert!(!m.contains("SEKRIT") && !m.contains(":pw@"), "{m}");
        assert!(
            m.contains("connection refused") && m.contains("postgres://a:***@h/d."),
            "{m}"
        );
        assert!(matches!(mask_urls_in("no url here"), Cow::Borrowed(_)));
    }

    #[test]
    fn ordinary_lines_are_untouched() {
        for l in [
            "FATAL:  password authentication failed for user \"app\"",
            "Loading weights took 14.25 GiB",
            "token is invalid",
        ] {
            assert!(matches!(redact(l), Cow::Borrowed(_)), "{l}");
        }
    }
}
