//! Ransomware (MB917): files are enumerated, their contents scrambled
//! (cipher, XOR, byte arithmetic: see [`super::flow::Source::Scrambled`])
//! and written back, and the originals deleted, renamed or overwritten in
//! place. Each step alone is ordinary (backups walk, tools encrypt one file,
//! converters delete what they converted); together they are the shape.

use super::calls::Call;
use super::{Analyzer, Node};

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
        if call.is(super::kinds::REMOVER) || path_method {
            self.signs.deletes.get_or_insert(call.node);
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
