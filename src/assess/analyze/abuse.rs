//! Attacks on third parties besides floods (MB927, [`super::resource`]) and
//! password guessing (MB925, [`super::lateral`]): packets sent in a loop
//! with an IP header the script writes itself, so the source address is
//! whatever it says (MB941: spoofing, reflection and amplification); mail
//! sent in a loop to addresses read from a file or the network through SMTP
//! servers that change between batches (MB942: spam runs rotating relays);
//! requests left unfinished on held connections (MB927: a slow flood);
//! requests with forged client-address headers (MB217, HIGH).

use super::calls::Call;
use super::flow::Source;
use super::literal::shorten;
use super::{Analyzer, Bind, Node, F, K};

/// Headers that tell a server which client address a request came from.
const CLIENT_ADDRESS_HEADERS: &[&str] = &[
    "x-forwarded-for",
    "x-real-ip",
    "x-client-ip",
    "client-ip",
    "true-client-ip",
    "x-originating-ip",
    "forwarded",
];

/// Mail-sending methods of smtplib's client.
const MAIL_SENDS: &[&str] = &["sendmail", "send_message"];

impl<'t> Analyzer<'t> {
    /// Notes the steps of MB941 and MB942 a call takes.
    pub(super) fn check_abuse_call(&mut self, call: &Call<'t>) {
        let args_text = || {
            call.arg_values()
                .map(|a| self.text(a))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let q = call.q.as_deref().unwrap_or("");
        let own_header = (q == "socket.socket" && args_text().contains("IPPROTO_RAW"))
            || (call.method == Some("setsockopt") && args_text().contains("HDRINCL"));
        // scapy: an IP layer given its source address, sent in a loop.
        let scapy_layer = q.starts_with("scapy.") && (q.ends_with(".IP") || q.ends_with(".IPv6"));
        let own_header = own_header || (scapy_layer && call.kwarg("src").is_some());
        if q.starts_with("scapy.")
            && matches!(
                q.rsplit('.').next(),
                Some("send" | "sendp" | "sr" | "sr1" | "srloop")
            )
            && call.loop_node.is_some()
        {
            self.signs.looped_sendto.get_or_insert(call.node);
        }
        if own_header {
            self.signs.own_ip_header.get_or_insert(call.node);
        }
        if call.method == Some("sendto") && call.loop_node.is_some() {
            self.signs.looped_sendto.get_or_insert(call.node);
        }
        if matches!(q, "smtplib.SMTP" | "smtplib.SMTP_SSL") && call.loop_node.is_some() {
            // A server chosen anew in the loop, not one configured relay.
            let fixed = call.arg(0, "host").is_some_and(|h| {
                self.reset_budget();
                self.fold(h, call.scope, 0).is_some()
            });
            if !fixed {
                self.signs.rotating_relay.get_or_insert(call.node);
            }
        }
        if matches!(call.method, Some("send" | "sendall" | "write"))
            && call
                .pos
                .first()
                .is_some_and(|a| self.text(*a).contains("HTTP/1."))
        {
            self.signs.hand_made_http.get_or_insert(call.node);
        }
        if let Some(h) = call.kwarg("headers") {
            self.check_forged_origin(call, h);
        }
        if call.method.is_some_and(|m| MAIL_SENDS.contains(&m)) && call.loop_node.is_some() {
            self.note_mass_mail(call);
        }
    }

    /// A send whose recipients are the items of a loop over data read from
    /// a file or the network (a list of addresses).
    fn note_mass_mail(&mut self, call: &Call<'t>) {
        let to = match call.method {
            Some("sendmail") => call.arg(1, "to_addrs"),
            _ => call.kwarg("to_addrs").or_else(|| call.pos.first().copied()),
        };
        let Some(mut to) = to else { return };
        if to.kind().is_sequence() {
            let Some(first) = to.children().next() else {
                return;
            };
            to = first;
        }
        self.reset_budget();
        let Some(list) = self.loop_origin(to, call.scope, 0) else {
            return;
        };
        let t = self.taint(list, call.scope);
        if t.has(Source::FileData) || t.has(Source::Network) {
            self.signs.mass_mail.get_or_insert((call.node, list));
        }
    }

    /// MB927 for a slow flood: an HTTP request written by hand on a
    /// socket, the blank line that ends its headers written nowhere in the
    /// script, and an endless loop: connections held open with requests
    /// that never finish (slowloris). Every honest hand-made request ends
    /// its headers, or the server never answers it.
    fn check_slow_flood(&mut self) {
        let Some(send) = self.signs.hand_made_http else {
            return;
        };
        let ends_headers = self.src.contains("\\r\\n\\r\\n") || self.src.contains("\\n\\n");
        let endless = self.calls.iter().any(|c| c.loop_node.is_some_and(|l| l.1));
        if !ends_headers && endless && self.facts.socket.is_some() {
            let detail = "writes HTTP requests by hand that never end their headers, from an endless loop: connections held open until the server runs out (a slow flood)";
            self.add("MB927", send, detail);
        }
    }

    /// MB217: a request whose client-address headers carry a computed
    /// value (a random or rotating address): the requests pretend to come
    /// from many machines, which rate limits and bans key on. A proxy in
    /// front of a test server is given one fixed address.
    fn check_forged_origin(&mut self, call: &Call<'t>, headers: Node<'t>) {
        let dict = match headers.kind() {
            K::Dictionary => Some((headers, call.scope)),
            K::Identifier => {
                match self.lookup(self.text(headers), call.scope, headers.start_byte()) {
                    Some([Bind::Expr(v, s)]) if v.kind() == K::Dictionary => Some((v, s)),
                    _ => None,
                }
            }
            _ => None,
        };
        let Some((dict, scope)) = dict else { return };
        for pair in dict.children() {
            let (Some(k), Some(v)) = (pair.child(F::Key), pair.child(F::Value)) else {
                continue;
            };
            self.reset_budget();
            let key = self
                .fold(k, scope, 0)
                .unwrap_or_default()
                .to_ascii_lowercase();
            if !CLIENT_ADDRESS_HEADERS.contains(&key.as_str()) {
                continue;
            }
            self.reset_budget();
            if self.fold(v, scope, 0).is_none() {
                let detail = format!(
                    "`{}` sends {key}: {} (computed): a forged client address, to dodge rate limits and bans",
                    shorten(call.written),
                    shorten(self.text(v))
                );
                return self.add("MB217", call.node, detail);
            }
        }
    }

    /// MB941 and MB942 from the steps noted.
    pub(super) fn check_abuse(&mut self) {
        self.check_slow_flood();
        if let (Some(h), Some(s)) = (self.signs.own_ip_header, self.signs.looped_sendto) {
            let detail = format!(
                "writes its own IP header (line {}) and sends packets in a loop: the source address is forged",
                h.start_position().row + 1
            );
            self.add("MB941", s, detail);
        }
        if let (Some((send, list)), Some(relay)) = (self.signs.mass_mail, self.signs.rotating_relay)
        {
            let detail = format!(
                "mails every address of `{}` (line {}) through SMTP servers that change in the loop (line {})",
                shorten(self.text(list)),
                list.start_position().row + 1,
                relay.start_position().row + 1
            );
            self.add("MB942", send, detail);
        }
    }
}
