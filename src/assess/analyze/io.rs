//! File contents as data: which file a file object writes to, what is
//! written (its sources, see [`super::flow`]), and which files are read.
//! A pass over every call before the checks fills the file store (a
//! download saved to a path makes that path's contents network data; a copy
//! of a secret makes the copy secret) and remembers downloads for the
//! dropper check and scrambled writes for the ransomware check.

use super::calls::kwarg;
use super::flow::{Source, Taint};
use super::{taxonomy, Analyzer, Bind, CallSite, Node, Part, F, K};

/// Levels of names followed to find where a file object was opened.
const OPEN_DEPTH: usize = 6;

/// Calls that open a file (the path is their first argument).
const OPENERS: &[&str] = &[
    "builtins.open",
    "io.open",
    "codecs.open",
    "gzip.open",
    "bz2.open",
    "lzma.open",
    "os.fdopen",
];

/// Temporary files, open for writing from the start.
const TEMP_FILES: &[&str] = &[
    "tempfile.NamedTemporaryFile",
    "tempfile.TemporaryFile",
    "tempfile.SpooledTemporaryFile",
];

/// The mode [`Analyzer::opening_call`] gives an archive opened for writing
/// with encryption, whose `write(path)` puts that file's contents in
/// scrambled.
const ENCRYPTED_ARCHIVE: &str = "w encrypted";

/// The mode [`Analyzer::opening_call`] gives an archive opened for reading,
/// so that only its `extractall` is taken for an extraction.
const ARCHIVE_READ: &str = "r members";

/// A write of data into a file.
pub(super) struct FileWrite<'t> {
    pub call: Node<'t>,
    pub paths: Vec<String>,
    pub data: Taint<'t>,
    /// Opened for update (`r+`), so what is written replaces what was read.
    pub in_place: bool,
}

/// A downloaded file: where it was saved, by which call.
pub(super) struct Download<'t> {
    pub path: String,
    /// A folder a downloaded archive was extracted into: every file under
    /// it came from the download.
    pub folder: bool,
    pub write: Node<'t>,
    /// What was written: downloaded data or an unpacked payload.
    pub what: &'static str,
}

impl<'t> Analyzer<'t> {
    /// Fills the file store and the download and scrambled-write lists.
    pub(super) fn index_writes(&mut self) {
        // By place, not over a copy of the list (see `check_calls`).
        for i in 0..self.calls.len() {
            let site = self.calls[i];
            let Some(w) = self.file_write(&site) else {
                continue;
            };
            self.check_spread(&w);
            let fetched = w.data.has(Source::Network) || w.data.has(Source::Embedded);
            if fetched || w.data.has(Source::Secret) {
                for p in w.paths.iter().filter(|p| p.as_str() != "*") {
                    self.file_store.push((p.clone(), w.data));
                }
            }
            if fetched {
                // A payload carried in the script and unpacked to a file is
                // a download that needed no network.
                let what = w.data.first(&[Source::Network, Source::Embedded]);
                let what = what.map_or("downloaded data", |(s, _)| match s {
                    Source::Embedded => Source::Embedded.describe(),
                    _ => "downloaded data",
                });
                for p in w.paths.iter().filter(|p| p.as_str() != "*") {
                    self.downloads.push(Download {
                        path: p.clone(),
                        folder: false,
                        write: w.call,
                        what,
                    });
                }
            }
            if w.data.has(Source::FileData) && w.data.has(Source::Scrambled) {
                self.signs
                    .scrambled_write
                    .get_or_insert((w.call, w.in_place));
            }
        }
        self.index_extractions();
    }

    /// A downloaded archive extracted into a folder makes that folder's
    /// files downloads too: droppers ship the program zipped so that the
    /// file they run is never the file they fetched.
    fn index_extractions(&mut self) {
        if self.downloads.is_empty() {
            return;
        }
        let mut found = Vec::new();
        for c in &self.calls {
            let Some((archive, dir)) = self.extraction(c) else {
                continue;
            };
            let fetched = self.downloads.iter().any(|d| archive.contains(&d.path));
            if fetched {
                let dirs = self.paths(dir, c.scope);
                found.extend(dirs.into_iter().filter(|p| p != "*").map(|p| (p, c.node)));
            }
        }
        for (path, write) in found {
            self.downloads.push(Download {
                path,
                folder: true,
                write,
                what: "an extracted download",
            });
        }
    }

    /// An archive extraction: the archive's paths and the target folder.
    fn extraction(&self, site: &CallSite<'t>) -> Option<(Vec<String>, Node<'t>)> {
        let (call, scope) = (site.node, site.scope);
        let (pos, kw) = self.args(call);
        if self.site_q(site) == Some("shutil.unpack_archive") {
            let dir = pos.get(1).copied().or_else(|| kwarg(kw, "extract_dir"))?;
            return Some((self.paths(*pos.first()?, scope), dir));
        }
        if site.method != Some("extractall") {
            return None;
        }
        let func = call.child(F::Function)?;
        let dir = pos.first().copied().or_else(|| kwarg(kw, "path"))?;
        let (paths, mode) = self.opened(func.child(F::Object)?, scope, 0)?;
        (mode == ARCHIVE_READ).then_some((paths, dir))
    }

    /// The write a call makes, if it writes data into a file.
    fn file_write(&self, site: &CallSite<'t>) -> Option<FileWrite<'t>> {
        let (call, scope) = (site.node, site.scope);
        let func = call.child(F::Function)?;
        let (pos, _) = self.args(call);
        let q = self.site_q(site);
        let write = |paths: Vec<String>, data: Taint<'t>, in_place: bool| {
            Some(FileWrite {
                call,
                paths,
                data,
                in_place,
            })
        };
        match q {
            Some("urllib.request.urlretrieve" | "urllib.urlretrieve") => {
                let mut data = Taint::default();
                data.add(Source::Network, call);
                return write(self.paths(*pos.get(1)?, scope), data, false);
            }
            Some("shutil.copy" | "shutil.copy2" | "shutil.copyfile") => {
                let mut data = Taint::default();
                self.reset_budget();
                self.file_read(pos.first().copied(), scope, call, &mut data);
                return write(self.paths(*pos.get(1)?, scope), data, false);
            }
            Some("os.write") => {
                let (paths, _) = self.opened(*pos.first()?, scope, 0)?;
                return write(paths, self.taint(*pos.get(1)?, scope), false);
            }
            // A stream (often an HTTP response) copied into a file object.
            Some("shutil.copyfileobj") => {
                let (paths, mode) = self.opened(*pos.get(1)?, scope, 0)?;
                if !mode.contains(['w', 'a', 'x', '+']) {
                    return None;
                }
                return write(paths, self.taint(*pos.first()?, scope), false);
            }
            _ => {}
        }
        let method = site.method?;
        let obj = func.child(F::Object)?;
        match method {
            "write" | "writelines" | "writeall" => {
                let (paths, mode) = self.opened(obj, scope, 0)?;
                if mode == ENCRYPTED_ARCHIVE {
                    // A member: the named file's contents, encrypted.
                    let mut data = Taint::default();
                    self.reset_budget();
                    self.file_read(pos.first().copied(), scope, call, &mut data);
                    data.add(Source::Scrambled, call);
                    return write(paths, data, false);
                }
                if !mode.contains(['w', 'a', 'x', '+']) {
                    return None;
                }
                write(paths, self.taint(*pos.first()?, scope), mode.contains('+'))
            }
            "write_bytes" | "write_text" => {
                let paths = self.paths(obj, scope);
                write(paths, self.taint(*pos.first()?, scope), false)
            }
            _ => None,
        }
    }

    /// Where a file object was opened: the paths and the mode (`os.open`'s
    /// flags are given as a mode).
    pub(super) fn opened(
        &self,
        f: Node<'t>,
        scope: usize,
        depth: usize,
    ) -> Option<(Vec<String>, String)> {
        if depth > OPEN_DEPTH {
            return None;
        }
        match f.kind() {
            K::Identifier => {
                let binds = self.lookup(self.text(f), scope, f.start_byte())?;
                binds.into_iter().find_map(|b| match b {
                    Bind::Expr(v, s) => self.opened(v, s, depth + 1),
                    Bind::Part {
                        of,
                        scope: s,
                        how: Part::Context,
                    } => self.opened(of, s, depth + 1),
                    Bind::Part {
                        of,
                        scope: s,
                        how: Part::Unpacked(0),
                    } => self.opened(of, s, depth + 1),
                    _ => None,
                })
            }
            K::Call => self.opening_call(f, scope),
            _ => None,
        }
    }

    /// Whether `os.open` flags ask for writing: as written, or through a
    /// name of the same function whose value names a writing flag
    /// (`flags = os.O_WRONLY if mode == "w" else os.O_RDONLY`, then
    /// `os.open(path, flags | os.O_SYNC)`).
    pub(super) fn writing_flags(&self, f: Node<'t>, scope: usize) -> bool {
        const WRITING: [&str; 5] = ["O_WRONLY", "O_RDWR", "O_APPEND", "O_CREAT", "O_TRUNC"];
        let names = |t: &str| WRITING.iter().any(|o| t.contains(o));
        if names(self.text(f)) {
            return true;
        }
        let mut operands = std::iter::once(f).chain(if f.kind() == K::BinaryOperator {
            f.children().collect()
        } else {
            Vec::new()
        });
        operands.any(|n| {
            self.local_value(n, scope)
                .is_some_and(|v| names(self.text(v)))
        })
    }

    pub(super) fn opening_call(
        &self,
        call: Node<'t>,
        scope: usize,
    ) -> Option<(Vec<String>, String)> {
        let func = call.child(F::Function)?;
        let (pos, kw) = self.args(call);
        let q = self.callee(call, scope);
        let mode = |i: usize, default: &str| {
            pos.get(i)
                .copied()
                .or_else(|| kwarg(kw, "mode"))
                .and_then(|m| self.fold(m, scope, 0))
                .unwrap_or_else(|| default.to_string())
        };
        match q.as_deref() {
            Some(q) if OPENERS.contains(&q) => {
                let path = pos.first().copied().or_else(|| kwarg(kw, "file"))?;
                Some((self.paths(path, scope), mode(1, "r")))
            }
            Some(q) if TEMP_FILES.contains(&q) => Some((self.paths(call, scope), mode(0, "w+b"))),
            // An archive written with encryption (AES zip, 7z with a
            // password): what is put into it is scrambled.
            Some("pyzipper.AESZipFile" | "py7zr.SevenZipFile")
                if kwarg(kw, "encryption")
                    .or_else(|| kwarg(kw, "password"))
                    .is_some() =>
            {
                let path = pos.first().copied().or_else(|| kwarg(kw, "file"))?;
                let m = mode(1, "r");
                let m = if m.contains(['w', 'a', 'x']) {
                    ENCRYPTED_ARCHIVE.into()
                } else {
                    m
                };
                Some((self.paths(path, scope), m))
            }
            Some("tempfile.mkstemp") => Some((self.paths(call, scope), "w+b".into())),
            Some("zipfile.ZipFile" | "tarfile.open" | "tarfile.TarFile") => {
                let path = pos
                    .first()
                    .copied()
                    .or_else(|| kwarg(kw, "file").or(kwarg(kw, "name")))?;
                let m = mode(1, "r");
                m.starts_with('r')
                    .then(|| (self.paths(path, scope), ARCHIVE_READ.into()))
            }
            Some("os.open") => {
                let writes = pos.get(1).is_some_and(|f| self.writing_flags(*f, scope));
                Some((
                    self.paths(*pos.first()?, scope),
                    if writes { "w" } else { "r" }.into(),
                ))
            }
            _ if func.kind() == K::Attribute
                && func
                    .child(F::Attribute)
                    .is_some_and(|a| self.text(a) == "open") =>
            {
                let obj = func.child(F::Object)?;
                Some((self.paths(obj, scope), mode(0, "r")))
            }
            _ => None,
        }
    }

    /// Every path the script's calls read (see [`Self::read_paths`]).
    pub(super) fn paths_read(&self) -> Vec<String> {
        self.calls
            .iter()
            .flat_map(|c| self.read_paths(self.site_q(c), c.method, c.node, c.scope))
            .collect()
    }

    /// Paths read by a call (`open(p)`, `p.read_bytes()`, copies' sources,
    /// archive members added), for the secret and device checks.
    /// `method` is the call's (see `CallSite::method`).
    pub(super) fn read_paths(
        &self,
        q: Option<&str>,
        method: Option<&str>,
        call: Node<'t>,
        scope: usize,
    ) -> Vec<String> {
        let reads = match (q, method) {
            (Some(q), _) => OPENERS.contains(&q) || q == "os.open" || q.starts_with("shutil.copy"),
            (None, Some(m)) => matches!(m, "open" | "read_bytes" | "read_text" | "write" | "add"),
            (None, None) => false,
        };
        if !reads {
            return Vec::new();
        }
        let (pos, _) = self.args(call);
        let first = || {
            pos.first()
                .map(|p| self.paths(*p, scope))
                .unwrap_or_default()
        };
        match (q, method) {
            (Some("shutil.copy" | "shutil.copy2" | "shutil.copyfile" | "shutil.copytree"), _) => {
                first()
            }
            (Some(_), _) | (None, None) => match self.opening_call(call, scope) {
                Some((paths, mode)) if !mode.contains(['w', 'a', 'x']) => paths,
                _ => Vec::new(),
            },
            (None, Some("read_bytes" | "read_text")) => call
                .child(F::Function)
                .and_then(|f| f.child(F::Object))
                .map(|o| self.paths(o, scope))
                .unwrap_or_default(),
            (None, Some("write" | "add")) if pos.len() <= 2 => {
                // zipfile's write(path) and tarfile's add(path) read the file.
                let values = first();
                if values.iter().any(|p| taxonomy::secret(p)) {
                    values
                } else {
                    Vec::new()
                }
            }
            (None, Some(_)) => match self.opening_call(call, scope) {
                Some((paths, mode)) if !mode.contains(['w', 'a', 'x']) => paths,
                _ => Vec::new(),
            },
        }
    }
}
