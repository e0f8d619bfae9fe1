//! Runs before the string and send checks consume their lists.
//!
//! Collection that only makes sense for someone else: cloud instance
//! credentials fetched from the metadata service and then sent to another
//! host (MB916); address ranges swept and the results sent to a public
//! address (MB934); the clipboard watched and crypto-currency addresses in
//! it replaced (MB935).

use super::calls::arg_values;
use super::literal::shorten;
use super::names::{runs_command, METADATA_HOSTS};
use super::needles::METADATA;
use super::{exfil::SendKind, Analyzer, Bind, Node};

/// Keyword arguments that carry a request's body.
const BODY_KEYWORDS: &[&str] = &["data", "json", "files", "body", "content"];

/// Programs and calls that read or replace the clipboard: (reads, writes).
fn clipboard_use(q: Option<&str>, method: Option<&str>, argv: &str) -> (bool, bool) {
    let words: Vec<&str> = argv.split_whitespace().collect();
    let head = words.first().map(|h| h.rsplit('/').next().unwrap_or(h));
    let has = |w: &str| words.contains(&w);
    let (cmd_read, cmd_write) = match head {
        Some("xclip") => (has("-o") || has("-out"), !(has("-o") || has("-out"))),
        Some("xsel") => (has("-o") || has("--output"), has("-i") || has("--input")),
        Some("pbpaste" | "wl-paste") => (true, false),
        Some("pbcopy" | "wl-copy") => (false, true),
        _ => (false, false),
    };
    let lib_read = matches!(q, Some("pyperclip.paste" | "clipboard.paste"))
        || matches!(method, Some("clipboard_get" | "GetClipboardData"));
    let lib_write = matches!(q, Some("pyperclip.copy" | "clipboard.copy"))
        || matches!(method, Some("clipboard_append" | "SetClipboardData"));
    (cmd_read || lib_read, cmd_write || lib_write)
}

/// A crypto-currency address, or a pattern written to match one; an IBAN.
fn wallet_like(v: &str) -> bool {
    let t = v.trim();
    let pattern = t.starts_with('^')
        && (t.contains("bc1") || t.contains("0x[a-fA-F0-9]{40}") || t.contains("[13]"));
    wallet_address(t) || pattern || super::payment::iban(t)
}

/// A crypto-currency address (Ethereum, Bitcoin, Monero).
pub(super) fn wallet_address(t: &str) -> bool {
    let alnum = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric());
    let eth = t.len() == 42 && t.starts_with("0x") && t[2..].chars().all(|c| c.is_ascii_hexdigit());
    let btc = (t.starts_with("bc1") && (42..=62).contains(&t.len()) && alnum(t))
        || ((t.starts_with('1') || t.starts_with('3'))
            && (26..=35).contains(&t.len())
            && alnum(t)
            && !t.chars().all(|c| c.is_ascii_digit()));
    let xmr = t.starts_with('4') && t.len() == 95 && alnum(t);
    eth || btc || xmr
}

/// A public IPv4 address, alone or as the host of a URL.
fn public_host(v: &str) -> Option<String> {
    let t = v.trim();
    let host = t
        .split_once("://")
        .map_or(t, |(_, rest)| rest)
        .split(['/', ':', '?'])
        .next()
        .unwrap_or("");
    let ip: std::net::Ipv4Addr = host.parse().ok()?;
    let local = ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_documentation();
    (!local).then(|| host.to_string())
}

impl<'t> Analyzer<'t> {
    pub(super) fn check_recon(&mut self) {
        self.check_metadata_sent();
        self.check_sweep_reported();
        self.check_clipboard_swap();
    }

    /// Whether the script imports `module` (or names from it).
    pub(super) fn imports_module(&self, module: &str) -> bool {
        self.imports_any_module(&[module])
    }

    /// Whether the script imports one of `modules`. The imported modules
    /// are gathered in one walk over every binding of the file, at the
    /// first question: each of the five families that ask walked it again.
    pub(super) fn imports_any_module(&self, modules: &[&str]) -> bool {
        let imported = self.imported.get_or_init(|| {
            let mut tops: Vec<&'t str> = self
                .binds
                .values()
                .flatten()
                .filter_map(|b| match b.bind {
                    Bind::Module(m, _) => m.split('.').next(),
                    _ => None,
                })
                .collect();
            tops.sort_unstable();
            tops.dedup();
            tops
        });
        modules.iter().any(|m| imported.binary_search(m).is_ok())
    }

    /// Values of a send call's destination and body arguments.
    pub(super) fn send_values(&self, node: Node<'t>, scope: usize) -> (Vec<String>, bool) {
        let (pos, kw) = self.args(node);
        let mut values = Vec::new();
        for a in arg_values(pos, kw) {
            values.extend(self.paths(a, scope));
        }
        let method = self.method_name(node);
        let body = kw.iter().any(|(k, _)| BODY_KEYWORDS.contains(k))
            || matches!(method, Some("post" | "put" | "sendto" | "sendall" | "send"));
        (values, body)
    }

    /// A metadata host is named and a request with a body goes elsewhere.
    fn check_metadata_sent(&mut self) {
        // The needle bits of the literals, lower-cased once for all the
        // families, instead of lower-casing and searching each one again.
        let lowered = self.lowered();
        let named = self
            .literals()
            .zip(&lowered.found)
            .find(|((_, v), found)| v.is_some() && *found & METADATA != 0);
        let Some(at) = named.map(|((n, _), _)| super::pos(n)) else {
            return;
        };
        let sends: Vec<_> = self.sends.clone();
        for s in sends.iter().filter(|s| matches!(s.kind, SendKind::Client)) {
            let (values, body) = self.send_values(s.node, s.scope);
            let elsewhere = values.iter().find(|v| {
                let l = v.to_ascii_lowercase();
                l.starts_with("http") && !METADATA_HOSTS.iter().any(|h| l.contains(h))
            });
            if let (Some(url), true) = (elsewhere, body) {
                let detail = format!(
                    "the cloud metadata service (line {}) hands out instance credentials; a request with a body goes to {:?} (line {})",
                    at.0 + 1,
                    shorten(url),
                    s.node.start_position().row + 1
                );
                self.add_at("MB916", at, detail);
                return;
            }
        }
    }

    /// Hosts of an address range enumerated (`ip_network(...).hosts()`),
    /// and data sent to a public address named in the script.
    fn check_sweep_reported(&mut self) {
        let sweep = self.calls.iter().find(|c| c.method == Some("hosts"));
        if !self.imports_module("ipaddress") {
            return;
        }
        let Some(sweep) = sweep.map(|c| c.node) else {
            return;
        };
        let sends: Vec<_> = self.sends.clone();
        for s in sends
            .iter()
            .filter(|s| !matches!(s.kind, SendKind::Command))
        {
            let (values, body) = self.send_values(s.node, s.scope);
            if let (Some(host), true) = (values.iter().find_map(|v| public_host(v)), body) {
                let detail = format!(
                    "sweeps the hosts of an address range (line {}) and sends data to {host}",
                    sweep.start_position().row + 1
                );
                self.add("MB934", s.node, detail);
                return;
            }
        }
    }

    /// The clipboard read and replaced by a script that carries a
    /// crypto-currency address or a pattern for one.
    fn check_clipboard_swap(&mut self) {
        let (mut read, mut write) = (None, None);
        for c in &self.calls {
            let (q, method) = (self.site_q(c), c.method);
            let runs = q.is_some_and(runs_command);
            // Only a call that runs a program has a command line to read.
            let argv = if runs {
                self.args(c.node)
                    .0
                    .first()
                    .map(|a| {
                        self.command_values(*a, c.scope)
                            .join(" ")
                            .to_ascii_lowercase()
                    })
                    .unwrap_or_default()
            } else {
                String::new()
            };
            let (r, w) = clipboard_use(q, method, &argv);
            if r {
                read.get_or_insert(c.node);
            }
            if w {
                write.get_or_insert(c.node);
            }
        }
        let (Some(read), Some(write)) = (read, write) else {
            return;
        };
        let wallet = self
            .literals()
            .find(|(_, v)| v.is_some_and(wallet_like))
            .map(|(s, _)| s);
        if let Some(w) = wallet {
            let detail = format!(
                "reads the clipboard (line {}) and replaces it (line {}) in a script carrying a crypto-currency address or pattern or an IBAN (line {})",
                read.start_position().row + 1,
                write.start_position().row + 1,
                w.start_position().row + 1
            );
            self.add("MB935", write, detail);
        }
    }
}
