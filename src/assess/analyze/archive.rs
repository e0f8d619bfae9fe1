//! Archives packed into a buffer: `zipfile.ZipFile(buf, "w")`,
//! `tarfile.open(fileobj=buf, mode="w:gz")`. What is put into such an
//! archive (`write(path)` and `add(path)` read that file, `writestr(name,
//! data)` takes its data) ends up in the buffer, which the script then
//! sends or encodes. The data flow follows names, not the bytes an archive
//! object writes into another object, so the members are indexed here by
//! the buffer's name, and [`super::flow`] adds them to what it carries.

use super::calls::kwarg;
use super::{Analyzer, Bind, Node, Part, F, K};

/// Calls that make an archive or compressed stream over a file object.
pub(super) const ARCHIVE_WRITERS: &[&str] = &[
    "zipfile.ZipFile",
    "tarfile.open",
    "tarfile.TarFile",
    "gzip.GzipFile",
    "pyzipper.AESZipFile",
    "py7zr.SevenZipFile",
];

/// Where an archive is written: a name, or an attribute of `self`.
#[derive(Clone, Copy)]
enum Buffer<'t> {
    Name(&'t str),
    Attribute(&'t str),
}

/// Levels of names followed from an archive object to the call making it.
const ARCHIVE_DEPTH: usize = 4;

impl<'t> Analyzer<'t> {
    /// Indexes the members put into archives written into a named buffer.
    pub(super) fn index_archives(&mut self) {
        let mut found: Vec<(Buffer<'t>, usize, Node<'t>)> = Vec::new();
        for c in &self.calls {
            let Some(m) = c.method else {
                continue;
            };
            if !matches!(m, "write" | "add" | "writestr") {
                continue;
            }
            let obj = c.node.child(F::Function).and_then(|f| f.child(F::Object));
            if let Some(buf) = obj.and_then(|o| self.archive_buffer(o, c.scope, 0)) {
                found.push((buf, c.scope, c.node));
            }
        }
        for (buf, scope, call) in found {
            let map = match buf {
                Buffer::Name(_) => &mut self.archive_members,
                Buffer::Attribute(_) => &mut self.archive_attr_members,
            };
            let (Buffer::Name(key) | Buffer::Attribute(key)) = buf;
            map.entry(key).or_default().push((scope, call));
        }
    }

    /// Whether the archive-opening call `call` opens it for writing (its
    /// mode, second or by keyword, starts with `w`, `a` or `x`).
    pub(super) fn writes_archive(&self, call: Node<'t>, scope: usize) -> bool {
        let (pos, kw) = self.args(call);
        pos.get(1)
            .copied()
            .or_else(|| kwarg(kw, "mode"))
            .and_then(|mode| self.fold(mode, scope, 0))
            .is_some_and(|m| m.starts_with(['w', 'a', 'x']))
    }

    /// The name of the buffer the archive `obj` is written into, when it
    /// was opened for writing over a named file object.
    fn archive_buffer(&self, obj: Node<'t>, scope: usize, depth: usize) -> Option<Buffer<'t>> {
        if depth > ARCHIVE_DEPTH {
            return None;
        }
        match obj.kind() {
            K::Identifier => {
                let binds = self.lookup(self.text(obj), scope, obj.start_byte())?;
                binds.into_iter().find_map(|b| match b {
                    Bind::Expr(v, s)
                    | Bind::Part {
                        of: v,
                        scope: s,
                        how: Part::Context,
                    } => self.archive_buffer(v, s, depth + 1),
                    _ => None,
                })
            }
            // `self._zip`, made in `__init__`.
            K::Attribute => {
                let attr = self.self_attribute(obj)?;
                self.attr_stores
                    .get(attr)?
                    .iter()
                    .find_map(|&(v, s)| self.archive_buffer(v, s, depth + 1))
            }
            K::Call => {
                let q = self.callee(obj, scope)?;
                if !ARCHIVE_WRITERS.contains(&&*q) {
                    return None;
                }
                let (pos, kw) = self.args(obj);
                let writes = self.writes_archive(obj, scope);
                let file = kwarg(kw, "fileobj")
                    .or_else(|| kwarg(kw, "file"))
                    .or_else(|| pos.first().copied())?;
                if !writes {
                    return None;
                }
                match file.kind() {
                    K::Identifier => Some(Buffer::Name(self.text(file))),
                    K::Attribute => self.self_attribute(file).map(Buffer::Attribute),
                    _ => None,
                }
            }
            _ => None,
        }
    }
}
