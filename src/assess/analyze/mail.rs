//! Mail hijacked (MB950): the user's mail quietly sent on to someone else.
//! Forwarding set up where the user will not look (a `.forward`, a
//! procmail or sieve recipe that redirects, a Gmail forwarding address or
//! forwarding filter, a Microsoft Graph or Exchange inbox rule that
//! forwards or redirects) towards an address fixed in the script, or whole
//! messages fetched from a mailbox and sent out again. A vacation reply, a
//! digest of one's own headers mailed to oneself and filters that only
//! label or file are not this: nothing leaves for another address.

use super::effects::Effects;
use super::flow::Source;
use super::literal::shorten;
use super::{exfil::SendKind, line, Analyzer, Node};

/// Files a mail server or a delivery filter reads to decide where mail goes.
fn forwarding_file(p: &str) -> Option<&'static str> {
    let name = p.rsplit('/').next().unwrap_or(p);
    match name {
        ".forward" => Some("the .forward file"),
        ".procmailrc" => Some("the procmail recipes"),
        ".mailfilter" => Some("the maildrop filter"),
        _ if name.starts_with(".qmail") => Some("a .qmail file"),
        _ if name.ends_with(".sieve") => Some("a sieve script"),
        _ => None,
    }
}

/// The first e-mail address with a domain in a text.
fn address_in(t: &str) -> Option<&str> {
    t.split(|c: char| c.is_whitespace() || "<>\"',;:()[]{}!\\".contains(c))
        .find(|w| {
            w.split_once('@').is_some_and(|(user, domain)| {
                !user.is_empty()
                    && domain.contains('.')
                    && !domain.ends_with('.')
                    && domain
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
            })
        })
}

/// A fixed address as a finding shows it: the address itself when the
/// text holds one, else the text, shortened.
fn shown_address(t: &str) -> String {
    shorten(address_in(t).unwrap_or(t))
}

/// Whether a text holds an e-mail address with a domain.
pub(super) fn has_address(t: &str) -> bool {
    address_in(t).is_some()
}

/// Keys of inbox rules (Microsoft Graph, Exchange) that send mail on.
const RULE_FORWARD_KEYS: &[&str] = &["forwardto", "redirectto", "forwardasattachmentto"];

/// Exchange command lines that forward a mailbox.
const EXCHANGE_FORWARDS: &[&str] = &[
    "-forwardto",
    "-redirectto",
    "-forwardasattachmentto",
    "-forwardingsmtpaddress",
    "-forwardingaddress",
];

impl<'t> Analyzer<'t> {
    /// MB950 over the files written, the mail APIs called and the sends.
    pub(super) fn check_mail(&mut self, fx: &Effects<'t>) {
        if let Some((at, what)) = self.forwarding_set(fx) {
            // Asked only once forwarding is set up: looking for an address
            // folds module-level values and reads every literal, which every
            // file paid.
            if let Some((addr_at, addr)) = self.fixed_address() {
                let detail = format!(
                    "{what}, to an address the script fixes (`{}`, line {}): every later message is copied to someone else",
                    shown_address(&addr),
                    line(addr_at)
                );
                self.add("MB950", at, detail);
                return;
            }
        }
        if let Some((at, detail)) = self.mailbox_shipped() {
            self.add("MB950", at, detail);
        }
        if let Some((at, detail)) = self.alerts_deleted() {
            self.add("MB223", at, detail);
        }
    }

    /// The address in a recipe that redirects, else the first address the
    /// script fixes.
    fn fixed_address(&self) -> Option<(Node<'t>, String)> {
        let redirect = |t: &str| t.contains('!') || t.to_ascii_lowercase().contains("redirect");
        self.first_constant_text(|t| has_address(t) && redirect(t))
            .or_else(|| self.first_constant_text(has_address))
    }

    /// Where and how the script makes mail be forwarded.
    fn forwarding_set(&self, fx: &Effects<'t>) -> Option<(Node<'t>, String)> {
        for w in &fx.writes {
            let Some(what) = w.paths.iter().find_map(|p| forwarding_file(p)) else {
                continue;
            };
            // A recipe that only files mail into folders sends nothing on.
            let redirects = what == "the .forward file"
                || what == "a .qmail file"
                || fx
                    .texts()
                    .iter()
                    .any(|(_, t)| has_address(t) && (t.contains('!') || t.contains("redirect")));
            if redirects {
                return Some((w.call, format!("writes {what}")));
            }
        }
        for site in &self.calls {
            let m = site.method;
            let gmail = matches!(m, Some("forwardingAddresses" | "updateAutoForwarding"))
                || (m == Some("filters") && fx.texts().iter().any(|(_, t)| t == "forward"));
            if gmail {
                return Some((site.node, "sets Gmail forwarding".into()));
            }
        }
        if let Some((n, k)) = fx
            .texts()
            .iter()
            .find(|(_, t)| RULE_FORWARD_KEYS.contains(&&**t))
        {
            return Some((*n, format!("makes an inbox rule that uses `{k}`")));
        }
        fx.commands.iter().find_map(|c| {
            let forwards = EXCHANGE_FORWARDS.iter().find(|o| c.line.contains(*o))?;
            Some((
                c.call,
                format!("runs an Exchange command with `{forwards}`"),
            ))
        })
    }

    /// Whole messages fetched from a mailbox (`RFC822`, `BODY[]`, POP3
    /// `retr`) and sent on over the network: their contents followed to a
    /// send, or, when they are packed on the way (a zip, an mbox file, an
    /// attachment the data flow does not follow), mail sent to an address
    /// the script fixes ([`Analyzer::fixed_address`]).
    fn mailbox_shipped(&self) -> Option<(Node<'t>, String)> {
        let whole = self.calls.iter().find(|c| match c.method {
            Some("retr") => true,
            Some("fetch") => {
                let whole = |t: &str| {
                    let t = t.to_ascii_lowercase();
                    ["rfc822", "body[]", "body.peek[]"]
                        .iter()
                        .any(|w| t.contains(w))
                };
                // The message part may be kept in a constant.
                whole(self.text(c.node))
                    || self
                        .args(c.node)
                        .0
                        .iter()
                        .any(|a| whole(self.const_text(*a, c.scope)))
            }
            _ => false,
        })?;
        self.sends
            .iter()
            .filter(|s| s.kind != SendKind::Command)
            .find_map(|s| {
                let carried = self
                    .arg_values(s.node)
                    .find_map(|a| self.taint(a, s.scope).get(Source::Mail))?;
                let detail = format!(
                    "`{}` sends mailbox contents (from `{}`, line {}), and the script fetches whole messages (line {}): the mailbox is copied to someone else",
                    shorten(self.text(s.node)),
                    shorten(self.text(carried)),
                    line(carried),
                    line(whole.node)
                );
                Some((s.node, detail))
            })
            .or_else(|| {
                // The fixed address is looked for only now (see check_mail).
                let fixed = self.fixed_address()?;
                self.mailed_to_fixed(whole.node, &fixed)
            })
    }

    /// Mail sent (`sendmail`, `send_message`) by a script that fetches whole
    /// messages and fixes a recipient: the mailbox, however packed, goes to
    /// that address. A digest of headers fetches no whole message.
    fn mailed_to_fixed(
        &self,
        whole: Node<'t>,
        fixed: &(Node<'t>, String),
    ) -> Option<(Node<'t>, String)> {
        let sent = self
            .sends
            .iter()
            .find(|s| matches!(self.method_name(s.node), Some("sendmail" | "send_message")))?;
        let (addr_at, addr) = fixed;
        let detail = format!(
            "`{}` mails to the address the script fixes (`{}`, line {}), and the script fetches whole messages (line {}): the mailbox is copied to someone else",
            shorten(self.text(sent.node)),
            shown_address(addr),
            line(*addr_at),
            line(whole)
        );
        Some((sent.node, detail))
    }

    /// MB223: messages that match a search for an account's security
    /// notices (sign-in alerts, password changes, codes, new forwarding)
    /// deleted or moved to the bin. Whoever takes an account over hides
    /// these from its owner; clearing newsletters searches other words.
    fn alerts_deleted(&self) -> Option<(Node<'t>, String)> {
        // Deletions first: they are rare, and only then are searches read.
        let deletes = self.calls.iter().find(|c| match c.method {
            Some("expunge" | "trash" | "batchDelete" | "dele") => true,
            // IMAP's flag; `copy`/`move` to a bin are left out: `shutil`'s
            // are everywhere and reading each would cost every script.
            Some("store") => self.text(c.node).to_ascii_lowercase().contains("\\deleted"),
            _ => false,
        })?;
        let (search, word) = self.calls.iter().find_map(|c| {
            let m = c.method?;
            if !matches!(m, "search" | "list" | "uid") {
                return None;
            }
            self.arg_values(c.node)
                .flat_map(|a| self.texts_in(a, c.scope))
                .find_map(|t| SECURITY_NOTICES.iter().find(|w| t.contains(*w)))
                .map(|w| (c.node, *w))
        })?;
        let detail = format!(
            "`{}` looks for security notices (`{word}`) and `{}` (line {}) deletes them: the account's owner never sees the warnings",
            shorten(self.text(search)),
            shorten(self.text(deletes.node)),
            line(deletes.node)
        );
        Some((search, detail))
    }
}

/// Words of the notices a mail provider sends when an account is touched.
const SECURITY_NOTICES: &[&str] = &[
    "security alert",
    "sign-in",
    "signin",
    "new login",
    "login attempt",
    "password reset",
    "password was changed",
    "password change",
    "two-factor",
    "2-step",
    "verification code",
    "verify it's you",
    "new device",
    "unusual activity",
    "forwarding",
    "inbox rule",
    "account-security",
    "security-noreply",
    "accounts.google.com",
];
