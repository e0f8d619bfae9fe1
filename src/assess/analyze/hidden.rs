//! File contents sent to a destination the script hides (MB960): a send
//! carries the contents of files (read directly, or packed into an archive
//! first: see [`super::archive`]) to a URL whose host appears in none of
//! the script's literals as written: it is only there once decoded
//! (base64, hex, rot13), reversed or built from character codes. Uploaders
//! name where they upload; a script that hides where the user's files go
//! does not want the reader to know.

use super::calls::{arg_values, kwarg};
use super::exfil::SendKind;
use super::flow::Source;
use super::literal::shorten;
use super::{Analyzer, Bind, Node, F, K};

/// Levels of names, parameters and requests followed to a send's URL.
const DESTINATION_DEPTH: usize = 4;

impl<'t> Analyzer<'t> {
    /// MB960 over the sends (run after `check_sends`, which keeps them).
    pub(super) fn check_hidden_destination(&mut self) {
        // One finding says it: the request and the call opening it are
        // both sends.
        let found = self.sends.iter().find_map(|s| {
            if s.kind == SendKind::Command {
                return None;
            }
            let host = self
                .hidden_host(s.node, s.scope)
                .or_else(|| self.hidden_recipient(s.node, s.scope))?;
            let (pos, kw) = self.args(s.node);
            let read =
                arg_values(pos, kw).find_map(|a| self.taint(a, s.scope).get(Source::FileData))?;
            Some((s.node, host, read))
        });
        let Some((send, host, read)) = found else {
            return;
        };
        let detail = format!(
            "file contents read by `{}` (line {}) are sent by `{}` to {host}, \
             which the script spells out only once decoded",
            shorten(self.text(read)),
            read.start_position().row + 1,
            shorten(self.text(send)),
        );
        self.add("MB960", send, detail);
    }

    /// MB967: what the cloud metadata service answers sent to a host the
    /// script hides, in a script that asks the service for credentials or
    /// user data (MB206, not MB228): the instance's role keys leave for a
    /// destination the reader is not shown. Inventory agents report to the
    /// database they name.
    pub(super) fn check_metadata_to_hidden_host(&mut self) {
        let asks_credentials = || {
            self.findings.iter().any(|f| f.rule == "MB206")
                || (self
                    .lowered()
                    .found
                    .iter()
                    .any(|f| f & super::needles::METADATA != 0)
                    && !self.metadata_without_credentials())
        };
        if self.sends.is_empty() || !asks_credentials() {
            return;
        }
        let found = self.sends.iter().find_map(|s| {
            if s.kind == SendKind::Command {
                return None;
            }
            let host = self.hidden_host(s.node, s.scope)?;
            let (pos, kw) = self.args(s.node);
            let answer =
                arg_values(pos, kw).find_map(|a| self.taint(a, s.scope).get(Source::Network))?;
            Some((s.node, host, answer))
        });
        if let Some((send, host, answer)) = found {
            let detail = format!(
                "the metadata service's answer (`{}`, line {}) is sent by `{}` to {host}, \
                 which the script spells out only once decoded",
                shorten(self.text(answer)),
                answer.start_position().row + 1,
                shorten(self.text(send)),
            );
            self.add("MB967", send, detail);
        }
    }

    /// The host a send goes to, when no literal of the script names it.
    fn hidden_host(&self, send: Node<'t>, scope: usize) -> Option<String> {
        self.send_urls(send, scope)
            .into_iter()
            .find_map(|(url, s)| self.unwritten_host(url, s))
    }

    /// The expressions a send's URL may come from (its first argument or
    /// `url=`, through names, parameters and requests).
    fn send_urls(&self, send: Node<'t>, scope: usize) -> Vec<(Node<'t>, usize)> {
        let (pos, kw) = self.args(send);
        let mut urls = Vec::new();
        if let Some(arg) = pos.first().copied().or_else(|| kwarg(kw, "url")) {
            self.destinations(arg, scope, 0, &mut urls);
        }
        urls
    }

    /// The host of the URL `url` folds to, when no literal of the script
    /// names it (it is spelled out only once decoded or joined).
    pub(super) fn unwritten_host(&self, url: Node<'t>, scope: usize) -> Option<String> {
        let host = self.url_host_of(url, scope)?;
        let lowered = self.lowered();
        let written = lowered.any_holds(&host);
        (!written).then_some(host)
    }

    /// The host of the URL `url` folds to; for an f-string whose later
    /// parts do not fold (`f"{PORTAL}/{report_id}"`), the host its head
    /// names.
    pub(super) fn url_host_of(&self, url: Node<'t>, scope: usize) -> Option<String> {
        self.reset_budget();
        let folded = self.fold(url, scope, 0);
        let url = folded
            .or_else(|| self.fold_template_head(url, scope))?
            .to_ascii_lowercase();
        super::agents::url_host(&url).map(str::to_string)
    }

    /// The host a send goes to, hidden or written.
    pub(super) fn send_host(&self, send: Node<'t>, scope: usize) -> Option<String> {
        self.send_urls(send, scope)
            .into_iter()
            .find_map(|(url, s)| self.url_host_of(url, s))
    }

    /// The recipient of mail sent (`sendmail`'s addresses, the values put
    /// into the message `send_message` sends), when its domain appears in
    /// no literal of the script.
    fn hidden_recipient(&self, send: Node<'t>, scope: usize) -> Option<String> {
        let (pos, kw) = self.args(send);
        let mut values = Vec::new();
        match self.method_name(send)? {
            "sendmail" => values.extend(pos.get(1).map(|a| (*a, scope))),
            "send_message" => {
                values.extend(kwarg(kw, "to_addrs").map(|a| (a, scope)));
                if let Some(msg) = pos.first() {
                    self.message_values(*msg, scope, 0, &mut values);
                }
            }
            _ => return None,
        }
        let lowered = self.lowered();
        values.into_iter().find_map(|(v, s)| {
            self.reset_budget();
            let address = self.fold(v, s, 0)?.to_ascii_lowercase();
            if !super::harvest::is_mail_address(&address) {
                return None;
            }
            let domain = address.split_once('@')?.1;
            let written = lowered.any_holds(domain);
            (!written).then_some(address)
        })
    }

    /// The values put into a message (`msg["To"] = ..`), through the
    /// parameters it is passed in.
    fn message_values(
        &self,
        msg: Node<'t>,
        scope: usize,
        depth: usize,
        out: &mut Vec<(Node<'t>, usize)>,
    ) {
        if depth > DESTINATION_DEPTH || msg.kind() != K::Identifier {
            return;
        }
        let name = self.text(msg);
        out.extend(self.mutations_near(name, scope).map(|(s, v)| (v, s)));
        if let Some([Bind::Param { func, index, .. }]) = self.lookup(name, scope, msg.start_byte())
        {
            for (a, s) in self.passed(func, index, name) {
                self.message_values(a, s, depth + 1, out);
            }
        }
    }

    /// What a send's URL argument may be: through names, the defaults of
    /// parameters and what callers pass, and a `urllib.request.Request`
    /// to that request's URL.
    fn destinations(
        &self,
        arg: Node<'t>,
        scope: usize,
        depth: usize,
        out: &mut Vec<(Node<'t>, usize)>,
    ) {
        if depth > DESTINATION_DEPTH {
            return;
        }
        let d = depth + 1;
        match arg.kind() {
            K::Identifier => match self.lookup(self.text(arg), scope, arg.start_byte()) {
                Some([Bind::Expr(v, s)]) => self.destinations(v, s, d, out),
                Some([Bind::Param { param, func, index }]) => {
                    if let Some(default) = param.child(F::Value) {
                        self.destinations(default, func, d, out);
                    }
                    for (a, s) in self.passed(func, index, self.text(arg)) {
                        self.destinations(a, s, d, out);
                    }
                }
                _ => out.push((arg, scope)),
            },
            K::Call if self.callee(arg, scope).as_deref() == Some("urllib.request.Request") => {
                let (pos, kw) = self.args(arg);
                if let Some(url) = pos.first().copied().or_else(|| kwarg(kw, "url")) {
                    self.destinations(url, scope, d, out);
                }
            }
            _ => out.push((arg, scope)),
        }
    }
}
