//! Spam relays besides MB942's rotating relays ([`super::abuse`]): mail
//! whose sender is picked at random for each message (MB969: forged
//! senders, the mark of phishing and bulk spam), forms posted through
//! rotating proxies with their CAPTCHAs solved by a service (MB969: comment
//! spam), and verification codes requested for one number from several
//! providers over and over (MB970: SMS and call bombing).
//!
//! Each is asked only where a cheap fact holds first: a mail send in a
//! loop, a literal naming a CAPTCHA, a forged client address found or
//! several code-request URLs among the literals.

use super::calls::kwarg;
use super::flow::Source;
use super::literal::shorten;
use super::{Analyzer, Bind, Node, F, K};

/// Words of the URLs that ask a service to send a one-time code.
const CODE_REQUESTS: &[&str] = &[
    "otp",
    "/sms",
    "sms/",
    "request-code",
    "request_code",
    "send-code",
    "send_code",
    "sendcode",
    "verify/call",
    "/verification",
    "login/sms",
];

/// Words of CAPTCHA-solving services and their APIs (an answer asked
/// for, then fetched).
const CAPTCHA_SOLVERS: &[&str] = &[
    "solve",
    "2captcha",
    "anti-captcha",
    "anticaptcha",
    "capmonster",
    "deathbycaptcha",
    "in.php",
    "res.php",
];

/// Distinct code-request URLs that make a list of providers, with a
/// forged client address; without one, a list this long.
const PROVIDERS_MIN: usize = 2;
const PROVIDERS_ALONE: usize = 3;

impl<'t> Analyzer<'t> {
    /// MB969 and MB970, after the calls and the composites they build on.
    pub(super) fn check_spam(&mut self) {
        if let Some((at, what)) = self.forged_sender().or_else(|| self.captcha_spam()) {
            self.add("MB969", at, what);
        }
        if let Some((at, what)) = self.code_bombing() {
            self.add("MB970", at, what);
        }
    }

    /// A message's `From` header set to a random pick (`msg["From"] =
    /// random.choice(NAMES)`, through helpers too), in a script that sends
    /// mail from a loop through a server it does not name: every message
    /// claims another sender. Newsletters send from one address.
    fn forged_sender(&self) -> Option<(Node<'t>, String)> {
        let send = self.calls.iter().find(|c| {
            c.loop_node.is_some() && matches!(c.method, Some("sendmail" | "send_message"))
        })?;
        if !self.mails_through_unnamed_server() {
            return None;
        }
        // The literals as lowered (the string check has taken the list by
        // now): `"From"`, the header's name, is "from" there.
        for &(s, _) in self.lowered().texts.iter().filter(|(_, t)| t == "from") {
            if !matches!(self.text(s), "\"From\"" | "'From'") {
                continue;
            }
            let Some(sub) = s.parent().filter(|p| p.kind() == K::Subscript) else {
                continue;
            };
            let Some(asg) = sub.parent().filter(|p| p.kind() == K::Assignment) else {
                continue;
            };
            let (Some(l), Some(r)) = (asg.child(F::Left), asg.child(F::Right)) else {
                continue;
            };
            if l.id() != sub.id() {
                continue;
            }
            let t = self.taint(r, self.scope_of(asg));
            if let Some(src) = t.get(Source::Random) {
                let what = format!(
                    "`{}` sets each message's sender from `{}` (line {}), a random pick, and `{}` mails them from a loop: forged senders",
                    shorten(self.text(asg)),
                    shorten(self.text(src)),
                    src.start_position().row + 1,
                    shorten(self.text(send.node))
                );
                return Some((asg, what));
            }
        }
        None
    }

    /// Whether an SMTP client is made for a server the script does not
    /// fix (picked from a rotation or a file of logins, or passed in).
    fn mails_through_unnamed_server(&self) -> bool {
        self.calls.iter().any(|c| {
            matches!(self.site_q(c), Some("smtplib.SMTP" | "smtplib.SMTP_SSL"))
                && self.args(c.node).0.first().is_some_and(|h| {
                    // A name a loop or an unpacking binds, or a parameter,
                    // changes between messages even where the folder
                    // reads one value of it (the rotation's first).
                    let bound = h.kind() == K::Identifier
                        && matches!(
                            self.lookup(self.text(*h), c.scope, h.start_byte()),
                            Some([Bind::Part { .. } | Bind::Param { .. }])
                        );
                    self.reset_budget();
                    bound || self.fold(*h, c.scope, 0).is_none()
                })
        })
    }

    /// A literal naming a CAPTCHA and one naming a solving service, in a
    /// script whose requests go through a proxy it does not name as a
    /// constant (`ProxyHandler` or `proxies=` given a rotation's pick or a
    /// parameter): a bot that posts through changing exits with the checks
    /// against bots solved for it. A scraper that meets a CAPTCHA backs
    /// off; it does not buy answers.
    fn captcha_spam(&self) -> Option<(Node<'t>, String)> {
        let low = self.lowered();
        if !low.any_holds("captcha") || !CAPTCHA_SOLVERS.iter().any(|w| low.any_holds(w)) {
            return None;
        }
        let proxy = self.calls.iter().find(|c| {
            let (pos, kw) = self.args(c.node);
            let arg = match self.site_q(c) {
                Some("urllib.request.ProxyHandler") => pos.first().copied(),
                _ => kwarg(kw, "proxies"),
            };
            arg.is_some_and(|a| {
                self.reset_budget();
                self.fold(a, c.scope, 0).is_none()
            })
        })?;
        let what = format!(
            "requests sent through a proxy the script does not fix (`{}`, line {}) by a script that hands CAPTCHAs to a solving service: a spam bot dodging rate limits and bot checks",
            shorten(self.text(proxy.node)),
            proxy.node.start_position().row + 1
        );
        Some((proxy.node, what))
    }

    /// URLs of several services' code requests (`/otp/send`,
    /// `request-code`, `verify/call`), a network request made from a loop
    /// or by a function called from one, and the requests' client address
    /// forged (MB217) or the list long: the same number sent code after
    /// code by every provider in turn, a harassment tool. Sign-up flows
    /// and their tests ask one service once.
    fn code_bombing(&self) -> Option<(Node<'t>, String)> {
        let low = self.lowered();
        let mut urls: Vec<&str> = low
            .texts
            .iter()
            .map(|(_, t)| &**t)
            .filter(|t| t.starts_with("http") && CODE_REQUESTS.iter().any(|w| t.contains(w)))
            .collect();
        urls.sort_unstable();
        urls.dedup();
        let forged = self.findings.iter().any(|f| f.rule == "MB217");
        if urls.len() < PROVIDERS_MIN || (!forged && urls.len() < PROVIDERS_ALONE) {
            return None;
        }
        let repeated = |c: &super::CallSite<'t>| {
            c.loop_node.is_some()
                || self
                    .callers
                    .get(&c.scope)
                    .is_some_and(|cs| cs.iter().any(|k| k.in_loop))
        };
        let req = self
            .calls
            .iter()
            .find(|c| self.site_q(c).is_some_and(super::names::is_network_client) && repeated(c))?;
        let what = format!(
            "`{}` asks {} services for one-time codes ({}) over and over{}: the same number flooded with texts and calls",
            shorten(self.text(req.node)),
            urls.len(),
            shorten(&urls.join(", ")),
            if forged { ", from forged client addresses" } else { "" }
        );
        Some((req.node, what))
    }
}
