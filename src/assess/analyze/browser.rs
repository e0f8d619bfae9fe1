//! Browsers hijacked (MB955): a browser's settings (a profile's
//! `Preferences`, `Secure Preferences`, `user.js` or `prefs.js`, a launcher's
//! `.desktop` file or one put among the user's applications) written by a
//! script whose literals take over where the browser goes or switch its
//! protections off: the search provider, a proxy
//! or proxy script, an extension loaded from a directory or forced by policy,
//! Safe Browsing or add-on signature checks set to false. A forced-install
//! policy (`ExtensionInstallForcelist`) set through the registry or `reg` is
//! the same. Privacy settings (telemetry off, HTTPS-only), a homepage alone,
//! and a browser started with a development extension change none of this.

use super::effects::Effects;
use super::literal::shorten;
use super::{Analyzer, Node};

/// Files of a browser profile that hold its settings, and launchers.
const SETTINGS: &[&str] = &[
    "/preferences",
    "/secure preferences",
    "/user.js",
    "/prefs.js",
    ".desktop",
    "/applications/*",
];

/// Settings that send the browser elsewhere, whatever their value (with
/// a literal that starts with `default_search_provider`).
pub(super) const TAKEOVER_SETTINGS: &[&str] = &[
    "network.proxy.autoconfig_url",
    "network.proxy.http",
    "network.proxy.ssl",
    "--load-extension",
    "extensioninstallforcelist",
];

/// The first literal that sets one of [`TAKEOVER_SETTINGS`], read from
/// the literals' needle bits (five searches of every literal before).
fn takes_over<'f, 't>(fx: &'f Effects<'t>) -> Option<(Node<'t>, &'f str)> {
    fx.texts()
        .iter()
        .enumerate()
        .find(|(i, (_, t))| {
            t.starts_with("default_search_provider") || fx.holds(*i, super::needles::TAKEOVER)
        })
        .map(|(_, (n, t))| (*n, &**t))
}

/// Protections that count only when set false.
const PROTECTIONS: &[&str] = &["safebrowsing", "xpinstall.signatures.required"];

impl<'t> Analyzer<'t> {
    /// MB955 over the settings files a script writes.
    pub(super) fn check_browser(&mut self, fx: &Effects<'t>) {
        let written = fx.writes.iter().find_map(|w| {
            w.paths.iter().find_map(|p| {
                let lower = p.to_ascii_lowercase();
                SETTINGS
                    .iter()
                    .any(|s| lower.ends_with(s))
                    .then(|| (w.call, p.clone()))
            })
        });
        // The policy's literals are searched only in a script that can set
        // it (registry calls or commands): most files write no settings.
        let forced = || {
            (!fx.commands.is_empty() || self.src.contains("winreg"))
                .then(|| fx.text_where(|t| t.contains("extensioninstallforcelist")))
                .flatten()
        };
        let (at, target) = match written {
            Some((at, p)) => (at, p),
            None => match forced() {
                Some((at, _)) => (at, "the browser's policy".to_string()),
                None => return,
            },
        };
        let Some((lit, t)) = takes_over(fx).or_else(|| self.protection_off(fx)) else {
            return;
        };
        let detail = format!(
            "writes {target} with `{}` (line {}): the browser is sent elsewhere or its protections switched off",
            shorten(t),
            lit.start_position().row + 1
        );
        self.add("MB955", at, detail);
    }

    /// A protection's name followed, within its entry, by a false value:
    /// in the same literal (`user_pref("..", false);`) or after it in the
    /// source (`"..": False`).
    fn protection_off<'f>(&self, fx: &'f Effects<'t>) -> Option<(Node<'t>, &'f str)> {
        fx.texts().iter().find_map(|(n, t)| {
            let at = PROTECTIONS
                .iter()
                .find_map(|p| t.find(p).map(|i| i + p.len()))?;
            let end = n.byte_range().end;
            let after = self
                .src
                .get(end..(end + 40).min(self.src.len()))
                .unwrap_or("");
            let entry = |s: &str| {
                s.split(['\n', ';'])
                    .next()
                    .unwrap_or("")
                    .to_ascii_lowercase()
            };
            let inside = entry(&t[at..]);
            // The literal is the key alone: its value follows in the source.
            let key_only = !inside.contains([',', ':', '=', ' ']);
            let off = inside.contains("false") || (key_only && entry(after).contains("false"));
            off.then_some((*n, &**t))
        })
    }
}
