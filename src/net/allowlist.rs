//! Allowlist entries: exact host names and `*.suffix` wildcards, each with an
//! optional port.
//!
//! Port rule (decided here, documented in `mod.rs` too): an entry without a port
//! allows `CONNECT` to 443 and plain HTTP to 80, the two ports a package index
//! or documentation site is served on. An entry with `:PORT` allows exactly that
//! port, for both `CONNECT` and plain HTTP, and no other (so `pypi.org:8443`
//! does not also open 443).
//!
//! Entries are validated strictly at config load: anything that looks like a
//! URL, carries a path, userinfo, query, an IP literal, or an out-of-range port
//! is refused with the entry named, rather than guessed at.

use super::NetError;

/// One parsed allowlist entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub pattern: Pattern,
    /// `None`: the defaults (443 for CONNECT, 80 for plain HTTP).
    pub port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pattern {
    /// Matches exactly this name (lowercase, no trailing dot).
    Exact(String),
    /// `*.example.com` is stored as `example.com`; matches names strictly below
    /// it (`a.example.com`, `a.b.example.com`) but not `example.com` itself,
    /// which needs its own entry. That mirrors how TLS wildcards read and keeps
    /// an entry from silently covering the apex.
    Suffix(String),
}

/// How a target reached the proxy; picks the default port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Connect,
    PlainHttp,
}

impl Kind {
    fn default_port(self) -> u16 {
        match self {
            Kind::Connect => 443,
            Kind::PlainHttp => 80,
        }
    }
}

/// The parsed allowlist.
#[derive(Debug, Clone, Default)]
pub struct Allowlist {
    entries: Vec<Entry>,
}

impl Allowlist {
    pub fn parse(entries: &[String]) -> Result<Self, NetError> {
        let entries = entries
            .iter()
            .map(|e| parse_entry(e))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Allowlist { entries })
    }

    /// Whether `host:port` may be reached by a request of `kind`. `host` must
    /// already be normalized with [`normalize_host`].
    pub fn allows(&self, host: &str, port: u16, kind: Kind) -> bool {
        self.entries.iter().any(|e| {
            let port_ok = match e.port {
                Some(p) => p == port,
                None => port == kind.default_port(),
            };
            port_ok
                && match &e.pattern {
                    Pattern::Exact(name) => name == host,
                    Pattern::Suffix(suffix) => host
                        .strip_suffix(suffix.as_str())
                        .and_then(|rest| rest.strip_suffix('.'))
                        .is_some_and(|label| !label.is_empty()),
                }
        })
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }
}

fn bad(entry: &str, why: impl Into<String>) -> NetError {
    NetError::InvalidEntry {
        entry: entry.to_string(),
        why: why.into(),
    }
}

/// Parses one entry: `name`, `name:port`, `*.suffix`, `*.suffix:port`.
pub fn parse_entry(raw: &str) -> Result<Entry, NetError> {
    let s = raw.trim();
    if s.is_empty() {
        return Err(bad(raw, "empty entry"));
    }
    if s.contains("://") {
        return Err(bad(
            raw,
            "a URL; give a host name such as `pypi.org`, without a scheme",
        ));
    }
    if let Some(c) = s
        .chars()
        .find(|c| matches!(c, '/' | '?' | '#' | '@' | '[' | ']') || c.is_whitespace())
    {
        return Err(bad(
            raw,
            format!("contains `{c}`: only a host name and optional `:port` are allowed"),
        ));
    }
    let (host, port) = match s.rsplit_once(':') {
        Some((h, p)) => {
            if h.contains(':') {
                return Err(bad(raw, "more than one `:`; IPv6 literals are not allowed"));
            }
            (h, Some(parse_port(raw, p)?))
        }
        None => (s, None),
    };
    if host.is_empty() {
        return Err(bad(raw, "empty host name"));
    }
    let host = host.to_ascii_lowercase();
    let host = host.strip_suffix('.').unwrap_or(&host);
    let pattern = if let Some(suffix) = host.strip_prefix("*.") {
        if suffix.contains('*') {
            return Err(bad(
                raw,
                "`*` is allowed only as the whole first label (`*.example.com`)",
            ));
        }
        check_name(raw, suffix)?;
        // `*.com` would open a whole top-level domain: demand at least two labels.
        if !suffix.contains('.') {
            return Err(bad(
                raw,
                "a wildcard needs at least two labels after `*.` (e.g. `*.example.com`)",
            ));
        }
        Pattern::Suffix(suffix.to_string())
    } else {
        if host.contains('*') {
            return Err(bad(
                raw,
                "`*` is allowed only as the whole first label (`*.example.com`)",
            ));
        }
        check_name(raw, host)?;
        Pattern::Exact(host.to_string())
    };
    Ok(Entry { pattern, port })
}

fn parse_port(raw: &str, p: &str) -> Result<u16, NetError> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || p.len() > 5 {
        return Err(bad(
            raw,
            format!("port `{p}` is not a number from 1 to 65535"),
        ));
    }
    match p.parse::<u32>() {
        Ok(n) if (1..=65535).contains(&n) => {
            u16::try_from(n).map_err(|_| bad(raw, "port out of range"))
        }
        _ => Err(bad(raw, format!("port `{p}` is out of range (1 to 65535)"))),
    }
}

/// DNS host-name syntax (letters, digits, hyphens; labels of 1-63; at most 253),
/// and not an IP literal in any form `getaddrinfo` would accept.
fn check_name(raw: &str, name: &str) -> Result<(), NetError> {
    if name.parse::<std::net::IpAddr>().is_ok() || looks_numeric(name) {
        return Err(bad(
            raw,
            "an IP address; only host names can be allowlisted",
        ));
    }
    match name_syntax_error(name) {
        Some(why) => Err(bad(raw, why)),
        None => Ok(()),
    }
}

/// Returns why `name` is not a valid host name, or `None`.
pub fn name_syntax_error(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("empty host name".into());
    }
    if name.len() > 253 {
        return Some("host name longer than 253 characters".into());
    }
    for label in name.split('.') {
        if label.is_empty() {
            return Some("empty label (`..` or a leading dot)".into());
        }
        if label.len() > 63 {
            return Some(format!("label `{label}` longer than 63 characters"));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Some(format!(
                "label `{label}` has characters other than letters, digits and `-`"
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Some(format!("label `{label}` starts or ends with `-`"));
        }
    }
    None
}

/// `inet_aton` accepts `127.1`, `0x7f.1`, `2130706433`: a name whose last label
/// is all digits or hex-prefixed would be taken as an address by the resolver,
/// so it is treated as an IP literal. (No real TLD is numeric.)
pub fn looks_numeric(name: &str) -> bool {
    let last = name.rsplit('.').next().unwrap_or(name);
    !last.is_empty()
        && (last.bytes().all(|b| b.is_ascii_digit())
            || ((last.starts_with("0x") || last.starts_with("0X"))
                && last[2..].bytes().all(|b| b.is_ascii_hexdigit())))
}

/// Lowercases and drops one trailing dot, so `PyPI.org.` matches `pypi.org`.
pub fn normalize_host(host: &str) -> String {
    let h = host.to_ascii_lowercase();
    match h.strip_suffix('.') {
        Some(s) => s.to_string(),
        None => h,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(e: &[&str]) -> Allowlist {
        Allowlist::parse(&e.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn exact_and_default_ports() {
        let a = list(&["pypi.org"]);
        assert!(a.allows("pypi.org", 443, Kind::Connect));
        assert!(a.allows("pypi.org", 80, Kind::PlainHttp));
        assert!(!a.allows("pypi.org", 80, Kind::Connect));
        assert!(!a.allows("pypi.org", 443, Kind::PlainHttp));
        assert!(!a.allows("pypi.org", 22, Kind::Connect));
        assert!(!a.allows("evil.pypi.org", 443, Kind::Connect));
        assert!(!a.allows("pypi.org.evil.com", 443, Kind::Connect));
        assert!(!a.allows("xpypi.org", 443, Kind::Connect));
    }

    #[test]
    fn explicit_port_is_the_only_port() {
        let a = list(&["pypi.test:8080"]);
        assert!(a.allows("pypi.test", 8080, Kind::Connect));
        assert!(a.allows("pypi.test", 8080, Kind::PlainHttp));
        assert!(!a.allows("pypi.test", 443, Kind::Connect));
        assert!(!a.allows("pypi.test", 80, Kind::PlainHttp));
    }

    #[test]
    fn wildcard_matches_below_not_apex() {
        let a = list(&["*.Python.org"]);
        assert!(a.allows("docs.python.org", 443, Kind::Connect));
        assert!(a.allows("a.b.python.org", 443, Kind::Connect));
        assert!(!a.allows("python.org", 443, Kind::Connect));
        assert!(!a.allows("notpython.org", 443, Kind::Connect));
        assert!(!a.allows(".python.org", 443, Kind::Connect));
    }

    #[test]
    fn normalization() {
        assert_eq!(normalize_host("PyPI.ORG."), "pypi.org");
        let a = list(&["PYPI.org."]);
        assert!(a.allows(&normalize_host("pypi.ORG"), 443, Kind::Connect));
    }

    #[test]
    fn malformed_entries_are_named() {
        for (e, frag) in [
            ("http://pypi.org", "URL"),
            ("https://pypi.org/simple", "URL"),
            ("pypi.org/simple", "`/`"),
            ("pypi.org:0", "out of range"),
            ("pypi.org:65536", "out of range"),
            ("pypi.org:99999999", "not a number"),
            ("pypi.org:", "not a number"),
            ("pypi.org:http", "not a number"),
            ("", "empty"),
            ("   ", "empty"),
            (":443", "empty host"),
            ("*", "`*`"),
            ("*.", "`*`"),
            ("*.com", "two labels"),
            ("a*.example.com", "`*`"),
            ("*.*.example.com", "`*`"),
            ("foo.*.com", "`*`"),
            ("127.0.0.1", "IP address"),
            ("127.1", "IP address"),
            ("0x7f.1", "IP address"),
            ("[::1]:443", "`[`"),
            ("::1", "IPv6"),
            ("user@pypi.org", "`@`"),
            ("pypi..org", "empty label"),
            ("-pypi.org", "starts or ends"),
            ("py_pi.org", "characters"),
            ("pypi.org?x", "`?`"),
        ] {
            match parse_entry(e) {
                Err(NetError::InvalidEntry { entry, why }) => {
                    assert_eq!(entry, e);
                    assert!(why.contains(frag), "{e:?}: {why:?} lacks {frag:?}");
                }
                other => panic!("{e:?} accepted: {other:?}"),
            }
        }
    }

    #[test]
    fn good_entries_parse() {
        assert_eq!(
            parse_entry("files.pythonhosted.org").unwrap(),
            Entry {
                pattern: Pattern::Exact("files.pythonhosted.org".into()),
                port: None
            }
        );
        assert_eq!(
            parse_entry("*.example.com:8443").unwrap(),
            Entry {
                pattern: Pattern::Suffix("example.com".into()),
                port: Some(8443)
            }
        );
        assert_eq!(parse_entry("pypi.test:65535").unwrap().port, Some(65535));
    }
}
