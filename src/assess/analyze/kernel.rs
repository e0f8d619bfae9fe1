//! Attacking the kernel directly (MB939): raw system calls through ctypes
//! that load code into the kernel or are the building blocks of kernel
//! exploits, kernel modules loaded through libc, and physical memory or I/O
//! ports written. Kernel settings and trigger files are judged with the
//! other host control files ([`super::escape`]).

use super::calls::Call;
use super::{Analyzer, Bind, Node, K};

/// System calls no ordinary program makes raw, by name and x86-64 number,
/// with what they give.
const KERNEL_SYSCALLS: &[(&str, i64, &str)] = &[
    ("bpf", 321, "loads programs into the kernel"),
    ("finit_module", 313, "loads a kernel module"),
    ("init_module", 175, "loads a kernel module"),
    ("kexec_load", 246, "replaces the running kernel"),
    ("kexec_file_load", 320, "replaces the running kernel"),
    (
        "userfaultfd",
        323,
        "stalls kernel copies, the race window of exploits",
    ),
    ("add_key", 248, "sprays the kernel heap with keys"),
    (
        "keyctl",
        250,
        "reads and revokes kernel keys, a heap-spray primitive",
    ),
    (
        "io_uring_setup",
        425,
        "sets up io_uring, a frequent exploit surface",
    ),
];

/// Devices that are the machine's memory or its I/O ports.
const MEMORY_DEVICES: &[&str] = &["/dev/mem", "/dev/kmem", "/dev/port"];

impl<'t> Analyzer<'t> {
    /// `libc.syscall(NR, ...)` with a kernel-attack syscall, by name (the
    /// constant or key it is written with) or number; `init_module` and
    /// friends called through libc by name.
    pub(super) fn check_kernel_call(&mut self, call: &Call<'t>) {
        let Some(f) = call
            .q
            .as_deref()
            .and_then(|q| q.strip_prefix("ctypes.CDLL()."))
        else {
            return;
        };
        let f = f.split('.').next().unwrap_or(f);
        let found = if f == "syscall" {
            call.pos
                .first()
                .and_then(|nr| self.syscall_named(*nr, call.scope))
        } else {
            KERNEL_SYSCALLS.iter().find(|(name, _, _)| *name == f)
        };
        if let Some((name, _, what)) = found {
            let detail = format!("{}: {name}, which {what}", call.written);
            self.add("MB939", call.node, detail);
        }
    }

    /// Which kernel-attack syscall a `syscall()` number argument names.
    fn syscall_named(
        &self,
        nr: Node<'t>,
        scope: usize,
    ) -> Option<&'static (&'static str, i64, &'static str)> {
        let written = self.written_as(nr, scope).to_ascii_lowercase();
        let by_name = KERNEL_SYSCALLS.iter().find(|(name, _, _)| {
            // `SYS_bpf`, `NR["bpf"]`, `__NR_init_module`: the name as a
            // whole word, so `init_module` is not found in `finit_module`.
            written
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| {
                    w == *name
                        || w.strip_prefix("sys_") == Some(name)
                        || w.strip_prefix("__nr_") == Some(name)
                        || w.strip_prefix("nr_") == Some(name)
                })
        });
        if by_name.is_some() {
            return by_name;
        }
        self.reset_budget();
        let n = self.fold_int(nr, scope, 0)?;
        KERNEL_SYSCALLS.iter().find(|(_, num, _)| *num == n)
    }

    /// The text of `n`, and of the value the name `n` is bound to.
    fn written_as(&self, n: Node<'t>, scope: usize) -> String {
        let mut t = self.text(n).to_string();
        if n.kind() == K::Identifier {
            if let Some([Bind::Expr(v, _)]) = self.lookup(self.text(n), scope, n.start_byte()) {
                t.push(' ');
                t.push_str(self.text(v));
            }
        }
        t
    }

    /// Writing (or mapping for writing) physical memory or I/O ports.
    pub(super) fn judge_kernel(&mut self, p: &str, op: &str, node: Node<'t>) -> bool {
        if !MEMORY_DEVICES.contains(&p) || op.contains("mkdir") {
            return false;
        }
        let detail =
            format!("{op} {p}: writes the machine's memory or I/O ports, under the kernel");
        self.add("MB939", node, detail);
        true
    }
}
