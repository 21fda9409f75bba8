//! Redaction of token-like strings in captured logs and quoted evidence.
//! Secrets' values are never fetched into output at all; this catches the
//! credentials programs print themselves.

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
