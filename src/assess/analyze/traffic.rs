//! Other programs' traffic redirected or intercepted (MB947, MB220):
//! well-known names mapped to other addresses in /etc/hosts, the system
//! resolver replaced by an outside one, a root certificate put into the
//! system or browser trust stores, proxies exported to every login, NAT
//! rules sending web or DNS traffic elsewhere, ARP replies forged in a
//! loop. Reading these files, a test CA kept in the project and a reverse
//! proxy for one's own app are not this.

use std::cell::OnceCell;

use super::effects::Effects;
use super::literal::{b64decode, hexdecode, shorten, string_value};
use super::needles::NAT_TOOL;
use super::{line, Analyzer, Node, K};

/// Where the system and browsers keep the certificates they trust.
const TRUST_STORES: &[&str] = &[
    "/usr/local/share/ca-certificates/",
    "/usr/share/ca-certificates/",
    "/etc/pki/ca-trust/source/anchors/",
    "/etc/ca-certificates/trust-source/",
    "/etc/ssl/certs/",
    "/.pki/nssdb",
    "/cert9.db",
    "/cert8.db",
];

/// Resolver configuration files.
const RESOLVERS: &[&str] = &[
    "/etc/resolv.conf",
    "/etc/systemd/resolved.conf",
    "/etc/networkmanager/conf.d/",
    "/etc/dhcp/dhclient.conf",
];

/// Public resolvers an administrator may choose.
const KNOWN_RESOLVERS: &[&str] = &[
    "8.8.8.8",
    "8.8.4.4",
    "1.1.1.1",
    "1.0.0.1",
    "9.9.9.9",
    "149.112.112.112",
    "208.67.222.222",
    "208.67.220.220",
];

/// Top-level domains of names other people's traffic goes to.
const PUBLIC_TLDS: &[&str] = &[
    "com", "org", "net", "io", "dev", "app", "co", "uk", "de", "fr", "ru", "cn", "info", "biz",
    "gov", "edu", "cloud", "ai", "me", "us", "eu",
];

/// Files every login session reads its environment from.
const LOGIN_ENVIRONMENT: &[&str] = &[
    "/etc/environment",
    "/etc/profile",
    "/.bashrc",
    "/.zshrc",
    "/.profile",
    "/.bash_profile",
    "/.zprofile",
    "/.config/fish/config.fish",
];

fn ipv4(t: &str) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut parts = t.split('.');
    for o in &mut out {
        *o = parts.next()?.parse().ok()?;
    }
    parts.next().is_none().then_some(out)
}

/// An address on this machine or its own network.
fn local_address(ip: [u8; 4]) -> bool {
    matches!(ip, [127, ..] | [10, ..] | [192, 168, ..] | [0, ..])
        || (ip[0] == 172 && (16..32).contains(&ip[1]))
}

/// The words of a literal that are IPv4 addresses (ports cut off).
fn addresses(t: &str) -> impl Iterator<Item = (&str, [u8; 4])> {
    t.split(|c: char| !(c.is_ascii_digit() || c == '.' || c == ':'))
        .map(|w| w.split(':').next().unwrap_or(w))
        .filter_map(|w| ipv4(w).map(|ip| (w, ip)))
}

/// A host name under a public top-level domain.
fn public_name(w: &str) -> bool {
    let labels: Vec<&str> = w.split('.').collect();
    labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && labels.last().is_some_and(|tld| PUBLIC_TLDS.contains(tld))
        && !labels[0].chars().all(|c| c.is_ascii_digit())
}

/// What the checks found: a trusted root, and the redirections.
#[derive(Default)]
struct Found<'t> {
    trust: Option<(Node<'t>, String)>,
    hijacks: Vec<(Node<'t>, String)>,
}

/// A literal naming a proxy variable.
fn proxy_named<'t>(fx: &Effects<'t>) -> Option<Node<'t>> {
    fx.text_holding(super::needles::PROXY_VAR).map(|(n, _)| n)
}

/// [`proxy_named`], or the value Windows keeps the user's proxy in
/// (`ProxyServer`): asked only once a root is trusted, so searched here
/// rather than with every literal's needles.
fn proxy_set<'t>(fx: &Effects<'t>) -> Option<Node<'t>> {
    proxy_named(fx).or_else(|| fx.text_where(|t| t.contains("proxyserver")).map(|(n, _)| n))
}

/// An IPv4 address in the literals outside this machine's networks (and,
/// when `known_ok`, not a well-known public resolver).
fn outside_ip(fx: &Effects<'_>, known_ok: bool) -> Option<String> {
    fx.texts().iter().find_map(|(_, t)| {
        addresses(t)
            .find(|(w, ip)| !(local_address(*ip) || (known_ok && KNOWN_RESOLVERS.contains(w))))
            .map(|(w, _)| w.to_string())
    })
}

/// Settings that switch certificate checks off for every program of a
/// kind (Python, Node, git), lower-cased as a shell line spells them.
const TLS_CHECKS_OFF: &[&str] = &[
    "pythonhttpsverify=0",
    "node_tls_reject_unauthorized=0",
    "git_ssl_no_verify=1",
    "git_ssl_no_verify=true",
];

/// A literal that turns certificate checks off, in a script that writes
/// files and names a proxy variable and an outside address: every program
/// of the login sent through that proxy, which can then read and change
/// encrypted traffic unnoticed. Asked of the proxy's literals first (the
/// needle bits), so most scripts pay nothing.
fn unverified_proxy<'t>(fx: &Effects<'t>) -> Option<(Node<'t>, String)> {
    proxy_named(fx)?;
    if fx.writes.is_empty() {
        return None;
    }
    let (n, t) = fx
        .texts()
        .iter()
        .find(|(_, t)| TLS_CHECKS_OFF.iter().any(|w| t.contains(w)))?;
    let ip = outside_ip(fx, false)?;
    let what = format!(
        "`{}` written with a proxy at {ip}: programs' encrypted traffic goes through it with certificate checks off",
        shorten(t)
    );
    Some((*n, what))
}

/// Whether a command line (lower-cased) sets the system's DNS servers:
/// netsh, macOS' networksetup, PowerShell's DnsClient, resolvectl.
fn sets_resolver(l: &str) -> bool {
    (l.contains("netsh") && (l.contains("dnsservers") || l.contains(" set dns")))
        || l.contains("-setdnsservers")
        || l.contains("set-dnsclientserveraddress")
        || (l.contains("resolvectl") && l.contains(" dns "))
}

/// Whether the script switches IP forwarding on: the kernel setting
/// written, or set with sysctl.
fn forwards_packets(fx: &Effects<'_>) -> bool {
    fx.writes
        .iter()
        .any(|w| w.paths.iter().any(|p| p.ends_with("/net/ipv4/ip_forward")))
        || fx
            .commands
            .iter()
            .any(|c| c.line.contains("ip_forward=1") || c.line.contains("ip_forward = 1"))
}

/// Trust-store commands and network poisoning tools.
fn traffic_commands<'t>(fx: &Effects<'t>, found: &mut Found<'t>) {
    for c in &fx.commands {
        let l = &c.line;
        let head = l.split_whitespace().next().unwrap_or("");
        let head = head.rsplit('/').next().unwrap_or(head);
        if matches!(head, "update-ca-certificates" | "update-ca-trust")
            || (head == "certutil" && l.contains(" -a"))
            || (head == "trust" && l.contains("anchor"))
        {
            let what = format!("runs `{}`, installing a trusted root", shorten(l));
            found.trust.get_or_insert((c.call, what));
        }
        if sets_resolver(l) {
            if let Some(ip) = addresses(l)
                .find(|(w, ip)| !(local_address(*ip) || KNOWN_RESOLVERS.contains(w)))
                .map(|(w, _)| w.to_string())
                .or_else(|| outside_ip(fx, true))
            {
                let what = format!(
                    "runs `{}`: every name is answered by the outside server {ip}",
                    shorten(l)
                );
                found.hijacks.push((c.call, what));
            }
        }
        if matches!(head, "arpspoof" | "ettercap" | "bettercap") {
            let what = format!(
                "runs `{}`, poisoning the network's address tables",
                shorten(l)
            );
            found.hijacks.push((c.call, what));
        }
    }
}

impl<'t> Analyzer<'t> {
    /// MB947 and MB220 over writes, commands, literals and scapy calls.
    pub(super) fn check_traffic(&mut self, fx: &Effects<'t>) {
        let mut found = Found::default();
        self.traffic_writes(fx, &mut found);
        traffic_commands(fx, &mut found);
        self.nat_rules(fx, &mut found);
        if let Some(at) = self.forged_arp_replies() {
            let what = "forged ARP replies (op is-at) sent by scapy: the LAN's traffic is routed through this machine";
            found.hijacks.push((at, what.into()));
        }
        if let Some(at) = self.raw_arp_socket().filter(|_| forwards_packets(fx)) {
            let what = "ARP frames sent on a raw packet socket while IP forwarding is switched on: the LAN's traffic is routed through this machine";
            found.hijacks.push((at, what.into()));
        }
        if let Some(hijack) = unverified_proxy(fx) {
            found.hijacks.push(hijack);
        }
        if let Some((at, key)) = self.signs.root_store_key.clone() {
            let what = format!("opens `{}`, the root certificate store", shorten(&key));
            found.trust.get_or_insert((at, what));
        }
        if let Some((at, what)) = found.trust.take() {
            self.judge_trust(at, what, fx, &mut found);
        }
        for (n, detail) in found.hijacks {
            self.add("MB947", n, detail);
        }
    }

    /// Hosts, resolver, trust-store and login-environment writes.
    fn traffic_writes(&self, fx: &Effects<'t>, found: &mut Found<'t>) {
        // Both scan every literal, and only a write to one of these files
        // asks for them: computed then, not for every file.
        let public = OnceCell::new();
        let public = || {
            public.get_or_init(|| {
                fx.texts().iter().find_map(|(_, t)| {
                    t.split(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | ',' | '='))
                        .find(|w| public_name(w))
                        .map(str::to_string)
                })
            })
        };
        let proxy = OnceCell::new();
        let proxy =
            || *proxy.get_or_init(|| proxy_named(fx).is_some() && outside_ip(fx, false).is_some());
        for w in &fx.writes {
            for p in &w.paths {
                let lower = p.to_ascii_lowercase();
                let what = if lower == "/etc/hosts" || lower.ends_with("/drivers/etc/hosts") {
                    public()
                        .as_ref()
                        .map(|name| {
                            format!("writes {p} in a script naming {name}: other programs reach another address for it")
                        })
                        // An outside address the script spells only once
                        // decoded: names mapped where the reader cannot see.
                        .or_else(|| {
                            self.decoded_outside_ip().map(|ip| {
                                format!("writes {p} in a script hiding the outside address {ip} (decoded from a literal): names in it are sent there")
                            })
                        })
                } else if RESOLVERS.iter().any(|r| lower.starts_with(r)) {
                    outside_ip(fx, true).or_else(|| self.decoded_outside_ip()).map(|ip| {
                        format!("writes {p} with resolver {ip}: every name is answered by an outside server")
                    })
                } else if TRUST_STORES.iter().any(|s| lower.contains(s)) {
                    found
                        .trust
                        .get_or_insert((w.call, format!("writes {p}, a trust store")));
                    None
                } else if LOGIN_ENVIRONMENT.iter().any(|e| lower.ends_with(e)) && proxy() {
                    Some(format!(
                        "exports a proxy from {p}: every login's web traffic goes through it"
                    ))
                } else {
                    None
                };
                if let Some(what) = what {
                    found.hijacks.push((w.call, what));
                }
            }
        }
    }

    /// An outside address kept encoded, as hex or base64, in a literal
    /// (`bytes.fromhex("3230..")`, decoded in a loop or a comprehension): a
    /// resolver hidden from a reader is no administrator's choice either.
    /// Asked only once a resolver file is written.
    fn decoded_outside_ip(&self) -> Option<String> {
        self.strings.iter().find_map(|s| {
            let t = string_value(self.src, *s)?;
            let raw = hexdecode(&t).or_else(|| b64decode(&t))?;
            let v = String::from_utf8(raw).ok()?;
            let outside = addresses(&v)
                .find(|(w, ip)| !(local_address(*ip) || KNOWN_RESOLVERS.contains(w)))
                .map(|(w, _)| w.to_string());
            outside
        })
    }

    /// NAT rules in the script's literals that send web or DNS traffic
    /// elsewhere, in a script that runs commands.
    fn nat_rules(&self, fx: &Effects<'t>, found: &mut Found<'t>) {
        // Whether the script runs commands is asked only once a literal
        // reads as such a rule: it scans the text of every call.
        let runs_commands = OnceCell::new();
        let runs_commands = || {
            *runs_commands.get_or_init(|| {
                !fx.commands.is_empty() || self.call_text_has(&["subprocess", "system("])
            })
        };
        for (i, (n, t)) in fx.texts().iter().enumerate() {
            // The programs from the literals' needle bits (see `needles`).
            let nat = fx.holds(i, NAT_TOOL) && (t.contains("redirect") || t.contains("dnat"));
            // Asked only of a NAT rule: seven searches of every literal.
            let others = || {
                [" 80 ", " 443 ", " 53 ", "dport 80", "dport 443", "dport 53"]
                    .iter()
                    .any(|p| t.contains(p))
                    || !t.contains("dport")
            };
            if nat && others() && runs_commands() {
                let what = format!(
                    "`{}`: web or DNS traffic of other programs sent elsewhere",
                    shorten(t)
                );
                found.hijacks.push((*n, what));
            }
        }
    }

    /// A root trusted: BLOCKED when downloaded or with another hijack or a
    /// proxy, else MB220.
    fn judge_trust(&mut self, at: Node<'t>, what: String, fx: &Effects<'t>, found: &mut Found<'t>) {
        let downloaded = self.downloads.iter().find(|d| {
            let lower = d.path.to_ascii_lowercase();
            TRUST_STORES.iter().any(|s| lower.contains(s))
        });
        let why = match (downloaded, found.hijacks.first(), proxy_set(fx)) {
            (Some(d), _, _) => format!("with a certificate downloaded at line {}", line(d.write)),
            (None, Some((h, _)), _) => format!("with traffic redirected at line {}", line(*h)),
            (None, None, Some(p)) => format!("with a proxy set at line {}", line(p)),
            _ if self.own_new_root() => {
                let why = "a root the script made itself, with a key made here, in a script that uses no network";
                return self.add("MB226", at, format!("{what}: {why}"));
            }
            _ => return self.add("MB220", at, what),
        };
        found.hijacks.push((at, format!("{what}, {why}")));
    }

    /// Whether the script makes a certificate authority of its own (a
    /// CA certificate built with `cryptography`, or `openssl req -x509` with
    /// a new key) and imports no network module: a local development root,
    /// whose key never leaves the machine, so nobody else can use it to
    /// intercept anything.
    fn own_new_root(&self) -> bool {
        let has = |w: &str| memchr::memmem::find(self.src.as_bytes(), w.as_bytes()).is_some();
        let built = has("CertificateBuilder") && has("ca=True");
        let openssl = has("-x509") && (has("-newkey") || has("genrsa") || has("genpkey"));
        !self.facts.net_import && (built || openssl)
    }

    /// A scapy `ARP(op=2)` (or `op="is-at"`) in a script that sends with
    /// scapy.
    /// A raw packet socket opened for ARP (`socket(AF_PACKET, SOCK_RAW,
    /// htons(0x0806))`): frames the script builds itself. ARP scanners
    /// open one too; with forwarding switched on (see
    /// [`forwards_packets`]) it is a man in the middle's.
    fn raw_arp_socket(&self) -> Option<Node<'t>> {
        const ETH_P_ARP: i64 = 0x0806;
        self.calls
            .iter()
            .filter(|c| self.site_q(c) == Some("socket.socket"))
            .find(|c| {
                let (pos, _) = self.args(c.node);
                let [family, _, proto, ..] = pos[..] else {
                    return false;
                };
                let proto = match proto.kind() {
                    K::Call => self.args(proto).0.first().copied(),
                    _ => Some(proto),
                };
                self.text(family).ends_with("AF_PACKET")
                    && proto.is_some_and(|p| {
                        self.reset_budget();
                        self.text(p).ends_with("ETH_P_ARP")
                            || self.fold_int(p, c.scope, 0) == Some(ETH_P_ARP)
                    })
            })
            .map(|c| c.node)
    }

    fn forged_arp_replies(&self) -> Option<Node<'t>> {
        let mut reply = None;
        let mut sends = false;
        for c in &self.calls {
            let Some(q) = self.site_q(c) else {
                continue;
            };
            if !q.starts_with("scapy") {
                continue;
            }
            let last = q.rsplit('.').next().unwrap_or("");
            if matches!(last, "send" | "sendp" | "srp" | "sr" | "sendpfast") {
                sends = true;
            }
            if last == "ARP" {
                let (_, kw) = self.args(c.node);
                let op = kw
                    .iter()
                    .find(|(k, _)| *k == "op")
                    .map(|(_, v)| self.text(*v));
                if op.is_some_and(|o| matches!(o.trim_matches(['"', '\'']), "2" | "is-at")) {
                    reply.get_or_insert(c.node);
                }
            }
        }
        reply.filter(|_| sends)
    }
}
