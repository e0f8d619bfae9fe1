//! Ransomware (MB917): files are enumerated, their contents scrambled
//! (cipher, XOR, byte arithmetic: see [`super::flow::Source::Scrambled`])
//! and written back, and the originals deleted, renamed or overwritten in
//! place. Each step alone is ordinary (backups walk, tools encrypt one file,
//! converters delete what they converted); together they are the shape.

use super::archive::ARCHIVE_WRITERS;
use super::calls::Call;
use super::literal::shorten;
use super::{line, Analyzer, Node, F, K};

/// Calls that walk, list or glob directories.
pub(super) const ENUMERATORS: &[&str] = &[
    "os.walk",
    "os.fwalk",
    "os.scandir",
    "os.listdir",
    "glob.glob",
    "glob.iglob",
];

/// Calls and path methods that delete or move files.
pub(super) const REMOVERS: &[&str] = &[
    "os.remove",
    "os.unlink",
    "os.rename",
    "os.replace",
    "shutil.move",
];

/// Whether a literal (lower-cased, as written) reads as a ransom note: the
/// reader's files said to be locked or encrypted, a way to get them back,
/// and a payment or a contact to obtain it.
fn ransom_note(t: &str) -> bool {
    const LOCKED: &[&str] = &["locked", "encrypted", "archived with aes"];
    const BACK: &[&str] = &[
        "unlock",
        "decrypt",
        "get the key",
        "back",
        "restore",
        "recover",
    ];
    const DEMAND: &[&str] = &[
        "pay", "bitcoin", "btc", "xmr", "monero", "usdt", "wallet", "contact", "write to", "mail",
    ];
    ["file", "photo", "document", "your data"]
        .iter()
        .any(|w| t.contains(w))
        && [LOCKED, BACK, DEMAND]
            .iter()
            .all(|words| words.iter().any(|w| t.contains(w)))
}

impl<'t> Analyzer<'t> {
    /// Notes the enumeration and removal steps.
    pub(super) fn note_file_steps(&mut self, call: &Call<'t>) {
        let m = call.method.unwrap_or("");
        if call.is(super::kinds::ENUMERATOR)
            || matches!(m, "rglob" | "glob" | "iterdir" | "walk" | "scandir")
        {
            self.signs.walks.push((call.node, call.scope));
        }
        let path_method = call.q.is_none() && matches!(m, "unlink" | "rename" | "replace");
        let removes = call.is(super::kinds::REMOVER) || path_method || self.removes_in_worker(call);
        if removes && self.signs.deletes.is_none() && !self.removes_own_archive(call) {
            self.signs.deletes = Some(call.node);
        }
    }

    /// `archive.unlink()` or `os.remove(archive)` of an archive the script
    /// wrote itself (`tarfile.open(archive, "w:gz")`): its own intermediate
    /// output (the plaintext before `gpg --symmetric`), not an original.
    fn removes_own_archive(&self, call: &Call<'t>) -> bool {
        let target = match (call.q.as_deref(), call.method) {
            (Some("os.remove" | "os.unlink"), _) => call.pos.first().copied(),
            (None, Some("unlink")) => call
                .node
                .child(F::Function)
                .and_then(|f| f.child(F::Object)),
            _ => None,
        };
        // Most scripts that delete open no archive for writing: their
        // deletions are not searched for one.
        let writers = || {
            self.calls
                .iter()
                .filter(|c| self.site_q(c).is_some_and(|q| ARCHIVE_WRITERS.contains(&q)))
                .filter(|c| self.writes_archive(c.node, c.scope))
        };
        let (Some(target), Some(_)) = (target, writers().next()) else {
            return false;
        };
        let deleted = self.path_values(target, call.scope);
        if deleted.is_empty() || deleted.iter().any(|p| p.as_str() == "*") {
            return false;
        }
        let written: Vec<String> = writers()
            .filter_map(|c| self.args(c.node).0.first().map(|a| (*a, c.scope)))
            .flat_map(|(a, s)| self.path_values(a, s))
            .collect();
        deleted.iter().all(|p| written.contains(p))
    }

    /// `await asyncio.to_thread(path.unlink)`, `loop.run_in_executor(None,
    /// os.remove, p)`: a deletion handed to a worker thread, which the
    /// call itself never shows.
    fn removes_in_worker(&self, call: &Call<'t>) -> bool {
        let handed = call.q.as_deref() == Some("asyncio.to_thread")
            || matches!(call.method, Some("run_in_executor" | "to_thread"));
        handed
            && call.pos.iter().take(2).any(|f| {
                f.kind() == K::Attribute
                    && f.child(F::Attribute).is_some_and(|a| {
                        matches!(self.text(a), "unlink" | "remove" | "rename" | "replace")
                    })
            })
    }

    /// MB966: a ransom note (files said to be locked or encrypted, a key
    /// or unlock tool offered for payment or contact) in a script that
    /// walks directories and deletes or renames files. The encryption can
    /// hide in worker threads or stream ciphers; the note cannot, since it
    /// must be read. Tools that encrypt a folder for its owner explain
    /// themselves in their usage text, not in a demand left behind.
    pub(super) fn check_ransom_note(&mut self) {
        let s = &self.signs;
        let (Some(walk), Some(removal)) = (s.enumerates(), s.deletes) else {
            return;
        };
        // A scrambled write beside them is MB917's finding already.
        if s.scrambled_write.is_some() {
            return;
        }
        // A note spread over adjacent literals (f-strings among them) is
        // read whole.
        let note = self.strings.iter().find_map(|&n| {
            let whole = n
                .parent()
                .filter(|p| p.kind() == K::ConcatenatedString)
                .unwrap_or(n);
            ransom_note(&self.text(whole).to_ascii_lowercase()).then_some(whole)
        });
        if let Some(n) = note {
            let detail = format!(
                "`{}`: a ransom note, in a script that enumerates files (line {}) and deletes or renames them (line {})",
                shorten(self.text(n)),
                line(walk),
                line(removal)
            );
            self.add("MB966", n, detail);
        }
    }

    pub(super) fn check_ransomware(&mut self) {
        let s = &self.signs;
        let (Some((write, in_place)), Some(walk)) = (s.scrambled_write, s.enumerates()) else {
            return;
        };
        let removal: Option<Node<'t>> = s.deletes;
        if removal.is_none() && !in_place {
            return;
        }
        let line = |n: Node| n.start_position().row + 1;
        let how = match removal {
            Some(d) => format!("originals removed or renamed (line {})", line(d)),
            None => "written over the originals".to_string(),
        };
        self.add(
            "MB917",
            write,
            format!(
                "files enumerated (line {}), their contents scrambled and written (line {}), {how}",
                line(walk),
                line(write)
            ),
        );
    }
}
