//! Data leaving through channels not made for data (MB948): file contents,
//! secrets, the environment or mail encoded into the names a script looks
//! up (DNS tunnelling), into request headers and cookies, carried by ICMP
//! echo payloads, hidden in an image's pixels before an upload, spelled out
//! in the lengths of pauses between requests (timing), or posted to
//! public paste and drop services. Resolving names a user gives, sending
//! an API token in `Authorization`, watermarking images with a fixed notice
//! and uploading photos are not this: the data is not the machine's own.

use super::calls::kwarg;
use super::flow::{Source, Taint};
use super::kinds;
use super::literal::shorten;
use super::needles::{needles_in, DROP_SERVICE};
use super::{exfil::SendKind, line, Analyzer, CallSite, Node, F, K};

/// What a covert channel carries off: data of the machine and its user.
const CARGO: &[Source] = &[
    Source::Secret,
    Source::Mail,
    Source::Environment,
    Source::OwnCode,
    Source::FileData,
];

/// Cargo worth hiding even without encoding it first (a pixel, a pause).
const SENSITIVE: &[Source] = &[Source::Secret, Source::Mail, Source::Environment];

/// Header names whose values are credentials or digests by design.
const AUTH_HEADER_WORDS: &[&str] = &[
    "auth",
    "token",
    "key",
    "signature",
    "hmac",
    "digest",
    "checksum",
    "md5",
    "sha",
    "nonce",
];

/// Public paste, gist and drop services: whatever is posted there can be
/// fetched by anyone who knows where.
pub(super) const DROP_SERVICES: &[&str] = &[
    "pastebin.com",
    "api.github.com/gists",
    "gist.github.com",
    "paste.ee",
    "hastebin",
    "ghostbin",
    "dpaste",
    "termbin.com",
    "ix.io",
    "0x0.st",
    "transfer.sh",
    "file.io",
    "paste.rs",
    "rentry.co",
    "controlc.com",
    "privatebin",
    "justpaste.it",
    "webhook.site",
    "requestbin",
    "pipedream.net",
    "anonfiles",
];

/// Methods of HTTP clients and sessions named after the request they send.
const HTTP_VERBS: &[&str] = &[
    "get", "head", "options", "delete", "post", "put", "patch", "request", "stream",
];

/// Programs that send a name or a pattern given on their command line.
const PROBE_PROGRAMS: &[&str] = &["dig", "nslookup", "host", "ping", "drill"];

impl<'t> Analyzer<'t> {
    /// MB948 over the calls, the pixel writes and the sends.
    pub(super) fn check_covert(&mut self, commands: &[super::effects::Command<'t>]) {
        let mut found: Vec<(Node<'t>, String)> = Vec::new();
        let dns = self.imports_module("dns");
        for site in &self.calls {
            let Some(what) = self.covert_call(site, dns) else {
                continue;
            };
            found.push((site.node, what));
        }
        for c in commands {
            if let Some(what) = self.probe_command(c.call, c.scope, &c.line) {
                found.push((c.call, what));
            }
        }
        if let Some(send) = self.signs.network_send {
            found.extend(self.hidden_in_pixels(send));
        }
        found.extend(self.dropped_publicly());
        for (n, what) in found {
            self.add("MB948", n, what);
        }
    }

    /// The covert channel one call opens, if any.
    fn covert_call(&self, site: &CallSite<'t>, dns: bool) -> Option<String> {
        let (q, method) = (self.site_q(site), site.method);
        let (pos, kw) = self.args(site.node);
        // A call that resolves a name ([`super::exfil::DNS_LOOKUPS`], read
        // from the call's facts: this kept a copy of that list and compared
        // every callee with each of its names).
        let lookup = self.site_kinds(site) & kinds::DNS_LOOKUP != 0
            || (dns && matches!(method, Some("resolve" | "query")));
        if lookup {
            let name = pos.first().copied().or_else(|| kwarg(kw, "qname"))?;
            return self
                .encoded_cargo(name, site.scope)
                .map(|(s, at)| format!("`{}` looks up names encoding {} from `{}` (line {}): each query carries a piece of it to whoever runs the name's server", shorten(self.text(site.node)), s.describe(), shorten(self.text(at)), line(at)));
        }
        if matches!(
            method,
            Some("add_header" | "putheader" | "add_unredirected_header")
        ) {
            let header = pos.first().and_then(|h| self.fold(*h, site.scope, 0));
            return self.header_leak(header.as_deref(), *pos.get(1)?, site);
        }
        if matches!(q, Some("time.sleep" | "asyncio.sleep")) && self.signs.network_send.is_some() {
            let t = self.taint(*pos.first()?, site.scope);
            return t.first(SENSITIVE).map(|(s, at)| format!("`{}` waits between sends for times set by {} from `{}` (line {}): the pauses spell the data out (a timing channel)", shorten(self.text(site.node)), s.describe(), shorten(self.text(at)), line(at)));
        }
        if let Some(what) = self.icmp_payload(site, q, method) {
            return Some(what);
        }
        if !self.http_request(site, method, kw) {
            return None;
        }
        if let Some(cookies) = kwarg(kw, "cookies") {
            if let Some(found) = self.header_leak(Some("cookie"), cookies, site) {
                return Some(found);
            }
        }
        let headers = kwarg(kw, "headers")?;
        let (dict, scope) = self.dict_of(headers, site.scope)?;
        self.dict_pairs(dict, scope)
            .into_iter()
            .find_map(|(k, v)| self.header_leak(k.as_deref(), v, site))
    }

    /// Whether a call makes an HTTP request (or builds one): a network
    /// client, a send method, or an HTTP verb given `headers=` or
    /// `cookies=` whatever it is called on (a session kept in an attribute
    /// or handed in as a parameter resolves to nothing; `dict.get` takes
    /// neither keyword).
    fn http_request(
        &self,
        site: &CallSite<'t>,
        method: Option<&str>,
        kw: &[(&str, Node<'t>)],
    ) -> bool {
        let verb = method.is_some_and(|m| HTTP_VERBS.contains(&m));
        // The call's facts read once (each accessor looked them up again).
        let facts = self.facts_of(site);
        let k = facts.map_or(0, |f| f.kinds);
        facts
            .and_then(|f| f.q.as_deref())
            .is_some_and(|q| super::names::network_client(q, k))
            || matches!(
                facts.and_then(|f| f.send),
                Some(SendKind::Method | SendKind::Client)
            )
            || (verb && (kwarg(kw, "headers").is_some() || kwarg(kw, "cookies").is_some()))
    }

    /// Data encoded into a header that is not a credential or a digest.
    fn header_leak(
        &self,
        header: Option<&str>,
        value: Node<'t>,
        site: &CallSite<'t>,
    ) -> Option<String> {
        let header = header.unwrap_or("*").to_ascii_lowercase();
        if AUTH_HEADER_WORDS.iter().any(|w| header.contains(w)) {
            return None;
        }
        let (s, at) = self.encoded_cargo(value, site.scope)?;
        Some(format!(
            "`{}` puts {} from `{}` (line {}), encoded, into the `{header}` header: requests that look empty carry it out",
            shorten(self.text(site.node)),
            s.describe(),
            shorten(self.text(at)),
            line(at)
        ))
    }

    /// Cargo that was encoded on its way (base64, base32, hex).
    fn encoded_cargo(&self, n: Node<'t>, scope: usize) -> Option<(Source, Node<'t>)> {
        let t = self.taint(n, scope);
        t.has(Source::Encoded).then(|| t.first(CARGO)).flatten()
    }

    /// An ICMP echo whose payload is data: a scapy packet built with
    /// `ICMP()`, or a send on a raw ICMP socket.
    fn icmp_payload(
        &self,
        site: &CallSite<'t>,
        q: Option<&str>,
        method: Option<&str>,
    ) -> Option<String> {
        let (pos, _) = self.args(site.node);
        let packet = *pos.first()?;
        let scapy_send = q.is_some_and(|q| {
            q.starts_with("scapy")
                && matches!(
                    q.rsplit('.').next(),
                    Some("send" | "sendp" | "sr" | "sr1" | "srp" | "srloop")
                )
        });
        let icmp = if scapy_send {
            self.bound_value(packet, site.scope, |v| self.text(v).contains("ICMP("))
                .is_some()
        } else if matches!(method, Some("sendto" | "send" | "sendall")) {
            let sock = site
                .node
                .child(F::Function)
                .and_then(|f| f.child(F::Object))?;
            self.bound_value(sock, site.scope, |v| {
                v.kind() == K::Call && self.text(v).contains("IPPROTO_ICMP")
            })
            .is_some()
        } else {
            false
        };
        if !icmp {
            return None;
        }
        let t: Taint<'t> = self.taint(packet, site.scope);
        let (s, at) = t.first(CARGO)?;
        Some(format!(
            "`{}` sends ICMP echoes whose payload is {} from `{}` (line {}): pings are not meant to carry data",
            shorten(self.text(site.node)),
            s.describe(),
            shorten(self.text(at)),
            line(at)
        ))
    }

    /// `dig`, `nslookup` or `ping -p` given encoded data.
    fn probe_command(&self, call: Node<'t>, scope: usize, cmd: &str) -> Option<String> {
        let head = cmd.split_whitespace().next()?;
        let head = head.rsplit('/').next().unwrap_or(head);
        if !PROBE_PROGRAMS.contains(&head) || (head == "ping" && !cmd.contains(" -p")) {
            return None;
        }
        let (pos, _) = self.args(call);
        let (s, at) = self.encoded_cargo(*pos.first()?, scope)?;
        Some(format!(
            "`{head}` is given {} from `{}` (line {}), encoded: it sends it in its queries or packets",
            s.describe(),
            shorten(self.text(at)),
            line(at)
        ))
    }

    /// Secrets or the environment written into an image's pixels, in a
    /// script that sends data out (`send`).
    fn hidden_in_pixels(&self, send: Node<'t>) -> Option<(Node<'t>, String)> {
        let pixel_access = |v: Node<'t>| v.kind() == K::Call && self.method_name(v) == Some("load");
        let stores = self.assigned.iter().filter_map(|&(target, value, scope)| {
            let obj = (target.kind() == K::Subscript).then(|| target.child(F::Value))??;
            self.bound_value(obj, scope, pixel_access)?;
            Some((target, value, scope))
        });
        let calls = self.calls.iter().filter_map(|c| {
            let i = match c.method? {
                "putpixel" => 1,
                "putdata" => 0,
                "frombytes" | "frombuffer" => 2,
                _ => return None,
            };
            let (pos, _) = self.args(c.node);
            Some((c.node, *pos.get(i)?, c.scope))
        });
        let (at, src, entered) = stores.chain(calls).find_map(|(at, value, scope)| {
            let t = self.taint(value, scope);
            t.first(SENSITIVE).map(|(s, n)| (at, s, n))
        })?;
        Some((
            at,
            format!(
                "an image's pixels are set from {} from `{}` (line {}), and the script sends data (line {}): steganography hides it in a picture that looks harmless",
                src.describe(),
                shorten(self.text(entered)),
                line(entered),
                line(send)
            ),
        ))
    }

    /// Secrets, the environment or mail posted to a paste or drop service.
    fn dropped_publicly(&self) -> Vec<(Node<'t>, String)> {
        let mut out = Vec::new();
        for s in self.sends.iter().filter(|s| s.kind != SendKind::Command) {
            let (values, _) = self.send_values(s.node, s.scope);
            // One pass of the needle table says whether a value names any
            // service: searching it for each of the twenty-odd names, at
            // every send, was most of this family's cost.
            let Some(service) = values.iter().find_map(|v| {
                let l = v.to_ascii_lowercase();
                let named = needles_in(&l) & DROP_SERVICE != 0;
                named.then(|| DROP_SERVICES.iter().find(|d| l.contains(*d)))?
            }) else {
                continue;
            };
            let (pos, kw) = self.args(s.node);
            let body = kw
                .iter()
                .filter(|(k, _)| matches!(*k, "data" | "json" | "files" | "content" | "body"))
                .map(|(_, v)| *v)
                .chain(pos.get(1).copied());
            let mut t = Taint::default();
            for b in body {
                t.merge(&self.taint(b, s.scope));
            }
            if let Some((src, at)) = t.first(SENSITIVE) {
                out.push((
                    s.node,
                    format!(
                        "`{}` posts {} from `{}` (line {}) to {service}: a public drop anyone with the link can read",
                        shorten(self.text(s.node)),
                        src.describe(),
                        shorten(self.text(at)),
                        line(at)
                    ),
                ));
            }
        }
        out
    }
}
