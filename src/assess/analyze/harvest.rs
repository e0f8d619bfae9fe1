//! Personal documents harvested (MB958): a walk of the user's home or of
//! its personal folders (Documents, Desktop, Pictures...), picking files by
//! document type, whose contents are sent to a peer the script itself
//! names. Each step alone is ordinary (indexers walk, filters pick office
//! files, uploaders upload); together, with no say of the user's in where
//! the files go, they are how document stealers work. The contents may
//! reach the send through queues, threads, pools or an archive, which the
//! data flow does not cross, so the send is asked only to carry file data.

use super::calls::arg_values;
use super::flow::Source;
use super::{Analyzer, Node, F, K};

/// Extensions of office documents and PDFs: what a filter picks when it
/// wants the user's papers.
const DOCUMENT_TYPES: &[&str] = &[
    ".doc", ".docx", ".xls", ".xlsx", ".ppt", ".pptx", ".pdf", ".odt", ".ods", ".rtf",
];

/// Folders of the home directory that hold the user's own files.
const PERSONAL_DIRS: &[&str] = &[
    "documents",
    "desktop",
    "downloads",
    "pictures",
    "onedrive",
    "dropbox",
    "movies",
    "videos",
    "music",
];

/// Key, vault and credential files, by extension or whole name: what a
/// filter picks when it wants the user's secrets. Certificates (`.pem`,
/// `.crt`) are left out: expiry scanners pick those.
const SECRET_TYPES: &[&str] = &[
    ".key",
    ".p12",
    ".pfx",
    ".kdbx",
    ".ppk",
    ".jks",
    ".keystore",
    ".ovpn",
    ".env",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    "id_rsa",
    "id_ed25519",
    "id_ecdsa",
    "wallet.dat",
];

/// Types of one kind a filter must name before the walk counts as a harvest.
const TYPES_MIN: usize = 2;

impl<'t> Analyzer<'t> {
    /// MB958 over the walks, the document-type literals and the sends.
    /// Also MB916 when the types picked are key and credential files.
    pub(super) fn check_document_harvest(&mut self) {
        if self.signs.walks.is_empty() || self.sends.is_empty() {
            return;
        }
        let documents = self.types_named(DOCUMENT_TYPES);
        let secrets = self.types_named(SECRET_TYPES);
        let (rule, types, what) = if documents.len() >= TYPES_MIN {
            ("MB958", documents, "by type")
        } else if secrets.len() >= TYPES_MIN {
            ("MB916", secrets, "as key and credential files")
        } else {
            return;
        };
        let Some((walk, root)) = self.personal_walk() else {
            return;
        };
        let Some((send, peer)) = self.file_data_send() else {
            return;
        };
        let line = walk.start_position().row + 1;
        self.add(
            rule,
            send,
            format!(
                "files under {root} walked (line {line}) and picked {what} ({}); \
                 their contents sent to {peer}",
                types.join(", ")
            ),
        );
    }

    /// The distinct types of `types` the script's literals name (`.docx`,
    /// `*.pdf`, `id_rsa`).
    fn types_named(&self, types: &[&'static str]) -> Vec<&'static str> {
        let lowered = self.lowered();
        let mut found: Vec<&'static str> = types
            .iter()
            .copied()
            .filter(|t| {
                lowered
                    .texts
                    .iter()
                    .any(|(_, v)| v.strip_prefix('*').unwrap_or(v) == *t)
            })
            .collect();
        found.dedup();
        found
    }

    /// The first walk rooted at the home directory or one of its personal
    /// folders, and that root.
    fn personal_walk(&self) -> Option<(Node<'t>, String)> {
        self.signs.walks.iter().find_map(|&(call, scope)| {
            let root = self.walk_root(call, scope)?;
            self.path_values(root, scope)
                .into_iter()
                .find(|p| is_personal(p))
                .map(|p| (call, p))
        })
    }

    /// What a walk walks: `os.walk(root)`'s argument, `root.rglob(..)`'s
    /// receiver.
    fn walk_root(&self, call: Node<'t>, scope: usize) -> Option<Node<'t>> {
        let func = call.child(F::Function)?;
        let q = self.callee(call, scope);
        if q.as_deref()
            .is_some_and(|q| q.starts_with("os.") || q.starts_with("glob."))
        {
            return self.args(call).0.first().copied();
        }
        (func.kind() == K::Attribute)
            .then(|| func.child(F::Object))
            .flatten()
    }

    /// A send that carries file contents, to a peer the script names: a
    /// URL or address among its literals.
    fn file_data_send(&self) -> Option<(Node<'t>, String)> {
        let named = self.named_peer();
        self.sends.iter().find_map(|s| {
            if s.kind == super::exfil::SendKind::Command {
                return None;
            }
            // The peer a literal names, or the host the send's URL folds
            // to (`PORTAL = "https://" + host`, `f"{PORTAL}/{id}"`).
            let peer = named.clone().or_else(|| self.send_host(s.node, s.scope))?;
            let (pos, kw) = self.args(s.node);
            let carries = arg_values(pos, kw).any(|a| self.taint(a, s.scope).has(Source::FileData));
            carries.then_some((s.node, peer))
        })
    }

    /// The first literal that is a URL, an IPv4 or a mail address, read backwards
    /// when the script reverses it (`reversed(..)`, `[::-1]`).
    fn named_peer(&self) -> Option<String> {
        let lowered = self.lowered();
        lowered.texts.iter().find_map(|(n, v)| {
            if self.reversed_in_place(*n) {
                let r: String = v.chars().rev().collect();
                return is_peer(&r).then_some(r);
            }
            // Copied only when it is the peer, not for every literal.
            is_peer(v).then(|| v.to_string())
        })
    }

    /// Whether a literal is reversed where it stands.
    fn reversed_in_place(&self, n: Node<'t>) -> bool {
        let Some(parent) = n.parent() else {
            return false;
        };
        match parent.kind() {
            K::ArgumentList => parent
                .parent()
                .and_then(|c| c.child(F::Function))
                .is_some_and(|f| f.kind() == K::Identifier && self.text(f) == "reversed"),
            K::Subscript => self.reversed_by_slice(parent),
            _ => false,
        }
    }
}

/// `~`, or a personal folder directly under it.
fn is_personal(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('~') else {
        return false;
    };
    let first = rest.trim_start_matches('/').split('/').next().unwrap_or("");
    first.is_empty() || PERSONAL_DIRS.contains(&first.to_ascii_lowercase().as_str())
}

/// A URL of a transfer scheme, a dotted IPv4 address, or a mail address
/// (documents mailed to a fixed recipient leave just the same).
fn is_peer(v: &str) -> bool {
    if is_mail_address(v) {
        return true;
    }
    const SCHEMES: &[&str] = &["http://", "https://", "ftp://", "ftps://", "sftp://"];
    let lower = v.to_ascii_lowercase();
    if SCHEMES
        .iter()
        .any(|s| lower.starts_with(s) && lower.len() > s.len())
    {
        return true;
    }
    let parts: Vec<&str> = v.split('.').collect();
    parts.len() == 4
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// `local@domain.tld`: one `@`, a dotted domain, no spaces.
pub(super) fn is_mail_address(v: &str) -> bool {
    let Some((local, domain)) = v.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !v.contains(char::is_whitespace)
        && !domain.contains(['@', '/', ':'])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_and_personal_roots() {
        assert!(is_peer("198.51.100.7"));
        assert!(is_peer("https://x.example/u"));
        assert!(!is_peer("1.2.3"));
        assert!(!is_peer("https://"));
        assert!(is_peer("drop@mail.example"));
        assert!(!is_peer("@decorator"));
        assert!(!is_peer("user@host"));
        assert!(is_personal("~"));
        assert!(is_personal("~/Documents/**"));
        assert!(!is_personal("~/.cache/pip"));
        assert!(!is_personal("/srv/docs"));
    }
}
