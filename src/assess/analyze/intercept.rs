//! An HTTP client patched to copy what passes through it (MB964): the
//! request or send method of requests, http.client or urllib3 replaced by
//! the script's own function, in a script whose only other destination is
//! a URL it spells out once decoded (base64, base32, character codes,
//! reversed). Every later request of the program, with its authorization
//! headers and cookies, passes through the replacement; the hidden URL is
//! where they go. Shims that add retries or timeouts name no destination
//! of their own, and hide none.

use super::literal::shorten;
use super::{Analyzer, Bind, Node, F, K};

/// Client classes whose request path a replacement would see all of.
const CLIENTS: &[&str] = &[
    "requests.Session",
    "requests.sessions.Session",
    "requests.adapters.HTTPAdapter",
    "http.client.HTTPConnection",
    "http.client.HTTPSConnection",
    "urllib3.PoolManager",
    "urllib3.connectionpool.HTTPConnectionPool",
    "httpx.Client",
];

/// Methods every request goes through.
const REQUEST_PATH: &[&str] = &["request", "send", "urlopen", "putheader", "_make_request"];

impl<'t> Analyzer<'t> {
    pub(super) fn check_intercepted_client(&mut self) {
        let Some((target, full)) = self.patched_client() else {
            return;
        };
        let Some(host) = self.hidden_module_url() else {
            return;
        };
        let detail = format!(
            "`{}` replaces {full}, and the script holds a URL for {host} that it spells out only once decoded",
            shorten(self.text(target))
        );
        self.add("MB964", target, detail);
    }

    /// `Client.method = replacement`, for a client of [`CLIENTS`] and a
    /// method of [`REQUEST_PATH`].
    fn patched_client(&self) -> Option<(Node<'t>, String)> {
        let assigned = self.assigned.iter().find_map(|&(target, _, scope)| {
            let obj = target
                .nth_child(0)
                .filter(|_| target.kind() == K::Attribute)?;
            let attr = target.child(F::Attribute).map(|a| self.text(a))?;
            self.client_method(target, obj, attr.to_string(), scope)
        });
        // `setattr(Client, "send", replacement)` does the same.
        assigned.or_else(|| {
            self.calls.iter().find_map(|c| {
                let named = c.node.child(F::Function).map(|f| self.text(f)) == Some("setattr");
                if !named && self.site_q(c) != Some("builtins.setattr") {
                    return None;
                }
                let (pos, _) = self.args(c.node);
                let (obj, name) = (*pos.first()?, *pos.get(1)?);
                self.reset_budget();
                let attr = self.fold(name, c.scope, 0)?;
                self.client_method(c.node, obj, attr, c.scope)
            })
        })
    }

    /// `at` with "Client.attr" when `obj` is a client of [`CLIENTS`] and
    /// `attr` a method of [`REQUEST_PATH`].
    fn client_method(
        &self,
        at: Node<'t>,
        obj: Node<'t>,
        attr: String,
        scope: usize,
    ) -> Option<(Node<'t>, String)> {
        if !REQUEST_PATH.contains(&attr.as_str()) {
            return None;
        }
        self.reset_budget();
        let owner = self.resolve(obj, scope, 0)?;
        CLIENTS
            .contains(&&*owner)
            .then(|| (at, format!("{owner}.{attr}")))
    }

    /// The host of a URL a module-level name is bound to by a call or an
    /// expression (a decoder, a join), when no literal names that host.
    fn hidden_module_url(&self) -> Option<String> {
        self.binds.values().flatten().find_map(|b| {
            if b.scope != 0 {
                return None;
            }
            let Bind::Expr(v, _) = b.bind else {
                return None;
            };
            if matches!(v.kind(), K::String | K::ConcatenatedString) {
                return None;
            }
            self.unwritten_host(v, 0)
        })
    }
}
