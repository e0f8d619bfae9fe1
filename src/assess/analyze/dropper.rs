//! Droppers (MB915): a file written with downloaded data ([`super::io`]), or
//! with a payload unpacked from a long encoded literal the script carries,
//! is made executable, run as a program or script, or loaded as a library.

use super::calls::Call;
use super::literal::shorten;
use super::{Analyzer, Node};

/// Calls that run or load the file named by their first argument.
pub(super) const LOADERS: &[&str] = &[
    "ctypes.CDLL",
    "ctypes.PyDLL",
    "ctypes.cdll.LoadLibrary",
    "ctypes.CDLL.LoadLibrary",
    "runpy.run_path",
    "importlib.util.spec_from_file_location",
    "os.startfile",
    "pty.spawn",
    // Windows' process creation through ctypes: the program is the first
    // argument (lpApplicationName, WinExec's command line).
    "ctypes.windll.kernel32.CreateProcessW",
    "ctypes.windll.kernel32.CreateProcessA",
    "ctypes.windll.kernel32.WinExec",
    // The file is the third argument (after the window and the verb).
    "ctypes.windll.shell32.ShellExecuteW",
    "ctypes.windll.shell32.ShellExecuteA",
];

/// Which argument of a loader names the file it runs or loads.
fn loaded_argument(q: &str) -> usize {
    match q {
        "importlib.util.spec_from_file_location" => 1,
        "ctypes.windll.shell32.ShellExecuteW" | "ctypes.windll.shell32.ShellExecuteA" => 2,
        _ => 0,
    }
}

/// Programs that run, install or load a file named among their arguments.
const RUNNERS: &[&str] = &[
    "msiexec",
    "msiexec.exe",
    "rundll32",
    "rundll32.exe",
    "regsvr32",
    "regsvr32.exe",
    "wscript",
    "cscript",
    "mshta",
    "open",
    "nohup",
    "setsid",
    "installer",
];

impl<'t> Analyzer<'t> {
    pub(super) fn check_dropper(&mut self, call: &Call<'t>) {
        if self.downloads.is_empty() {
            return;
        }
        let Some(q) = call.q.as_deref() else {
            return;
        };
        let (uses, how): (Vec<Node<'t>>, &str) = if call.is(super::kinds::LOADER) {
            let i = loaded_argument(q);
            (
                call.pos.get(i).copied().into_iter().collect(),
                "loaded or run",
            )
        } else if matches!(q, "os.chmod" | "os.lchmod") {
            let exec_bits = call.arg(1, "mode").is_some_and(|m| {
                self.reset_budget();
                self.fold_int(m, call.scope, 0)
                    .is_some_and(|v| v & 0o111 != 0)
            });
            (
                call.pos
                    .first()
                    .copied()
                    .filter(|_| exec_bits)
                    .into_iter()
                    .collect(),
                "made executable",
            )
        } else if self.starts_process(q) {
            (self.programs(call), "run")
        } else {
            return;
        };
        for u in uses {
            let values = self.paths(u, call.scope);
            let hit = self.downloads.iter().find(|d| {
                values
                    .iter()
                    .any(|v| v == &d.path || runs_in_command(v, &d.path) || within(d, v))
            });
            if let Some(d) = hit {
                let place = if d.folder {
                    format!("a file under {}", d.path)
                } else {
                    d.path.clone()
                };
                let detail = format!(
                    "{place} written with {} by `{}` (line {}) is {how} here",
                    d.what,
                    shorten(self.text(d.write)),
                    d.write.start_position().row + 1
                );
                self.add("MB915", call.node, detail);
                return;
            }
        }
    }

    /// What a process call runs: the program of an argument vector (and the
    /// script, when the program is an interpreter), or the command line.
    fn programs(&self, call: &Call<'t>) -> Vec<Node<'t>> {
        let Some(mut argv) = call.arg(0, "args") else {
            return Vec::new();
        };
        // `cmd = [...]` then `run(cmd)` in one function: the vector's
        // program as if written in the call (`python -m pip install FILE`
        // runs pip, not the file; the whole list read as paths found it).
        if let Some(v) = self
            .local_value(argv, call.scope)
            .filter(|v| v.kind().is_sequence())
        {
            argv = v;
        }
        if !argv.kind().is_sequence() {
            return vec![argv];
        }
        let elems: Vec<Node<'t>> = argv.children().collect();
        let Some(first) = elems.first() else {
            return Vec::new();
        };
        let bases: Vec<String> = self
            .paths(*first, call.scope)
            .iter()
            .map(|p| p.rsplit(['/', '\\']).next().unwrap_or(p).to_lowercase())
            .collect();
        let interpreter = bases.iter().any(|b| {
            b == "<python>" || b.starts_with("python") || matches!(b.as_str(), "sh" | "bash")
        });
        // Installers and launchers take the file they run among their
        // options (`msiexec /i FILE /qn`, `open -a FILE`), not second.
        if bases.iter().any(|b| RUNNERS.contains(&b.as_str())) {
            elems
        } else if interpreter {
            elems.into_iter().take(2).collect()
        } else {
            vec![*first]
        }
    }

    fn starts_process(&self, q: &str) -> bool {
        use super::kinds::{EXEC, PROCESS, SHELL};
        super::kinds::is(q, SHELL | PROCESS | EXEC)
            || q.starts_with("os.exec")
            || q.starts_with("os.spawn")
    }
}

/// A path inside a folder a downloaded archive was extracted into.
fn within(d: &super::io::Download<'_>, path: &str) -> bool {
    d.folder
        && path
            .strip_prefix(d.path.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Does the command line `cmd` run, or make executable, the exactly known
/// file `path`: as a command's first word (after the launchers `nohup`,
/// `setsid`, `exec`, `start /b`), or as an argument of chmod, a shell or an
/// interpreter (`nohup "<python>" "/tmp/x.py" &`)? Quotes around words and
/// redirections are not words.
fn runs_in_command(cmd: &str, path: &str) -> bool {
    if path.contains('*') || path.len() < 3 {
        return false;
    }
    cmd.split(['&', '|', ';', '\n']).any(|seg| {
        let mut words = seg
            .split_whitespace()
            .map(|w| w.trim_matches(['"', '\'']))
            .filter(|w| !w.contains(['>', '<']));
        let mut first = words.next();
        while first.is_some_and(|w| matches!(w, "nohup" | "setsid" | "exec" | "start" | "/b" | ""))
        {
            first = words.next();
        }
        let Some(first) = first else {
            return false;
        };
        if first == path {
            return true;
        }
        let prog = first.rsplit(['/', '\\']).next().unwrap_or(first);
        if prog == "chmod" {
            return words.any(|w| w == path);
        }
        let interpreter = prog == "<python>"
            || prog.starts_with("python")
            || matches!(prog, "sh" | "bash" | "node" | "perl");
        // The interpreter's script is its first word that is no option;
        // `-m` and `-c` run a module or a string instead (`python -m
        // json.tool FILE` reads the file).
        interpreter
            && words
                .find(|w| !w.starts_with('-') || matches!(*w, "-m" | "-c"))
                .is_some_and(|w| w == path)
    })
}
