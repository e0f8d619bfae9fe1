//! Programs run from memory (MB973): an anonymous in-memory file made with
//! `memfd_create` (also found through `getattr` or called as the raw
//! system call through ctypes) is executed: `os.fexecve`, `os.execve` of
//! its descriptor, or any exec or subprocess of `/proc/self/fd/N` or
//! `/dev/fd/N`. The program never exists on disk, where scanners would see
//! it: what fileless loaders do with the binary they carry or fetch. A
//! memory file used as shared memory, or a program run from a path, is not
//! this.

use super::kinds::PROCESS;
use super::{Analyzer, Bind, CallSite, Node, K};

/// `memfd_create`'s number on x86-64, arm64 (and riscv), i386 and arm.
const MEMFD_SYSCALLS: &[i64] = &[319, 279, 356, 385];

/// Where Linux shows a process's open descriptors as files.
fn descriptor_path(p: &str) -> bool {
    if p.starts_with("/dev/fd/") {
        return true;
    }
    // `/proc/self/fd/3`, `/proc/{os.getpid()}/fd/{fd}`.
    p.strip_prefix("/proc/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(_, tail)| tail.starts_with("fd/"))
}

impl<'t> Analyzer<'t> {
    /// MB973 over the calls: a memory file made, and a program run from a
    /// descriptor.
    pub(super) fn check_fileless(&mut self) {
        // Every spelling names a descriptor or memfd: `fd` is in its text.
        if !self.src.contains("fd") {
            return;
        }
        let mut made = false;
        let mut run: Option<(Node<'t>, String)> = None;
        for site in &self.calls {
            let Some(q) = self.site_q(site) else { continue };
            if self.makes_memfd(site, q) {
                made = true;
            } else if run.is_none() {
                run = self.runs_descriptor(site, q).map(|how| (site.node, how));
            }
        }
        if let (true, Some((at, how))) = (made, run) {
            let detail = format!("{how}: a program kept in an anonymous memory file (memfd_create) runs without ever being written to disk");
            self.add("MB973", at, detail);
        }
    }

    /// `os.memfd_create(...)`, `libc.memfd_create(...)`, `libc.syscall(319, ...)`.
    fn makes_memfd(&self, site: &CallSite<'t>, q: &str) -> bool {
        if q.ends_with("memfd_create") {
            return true;
        }
        if !(q.starts_with("ctypes.") && q.ends_with(".syscall")) {
            return false;
        }
        let (pos, _) = self.args(site.node);
        self.reset_budget();
        pos.first()
            .and_then(|n| self.fold_int(*n, site.scope, 0))
            .is_some_and(|nr| MEMFD_SYSCALLS.contains(&nr))
    }

    /// How `site` runs a program from a descriptor, if it does.
    fn runs_descriptor(&self, site: &CallSite<'t>, q: &str) -> Option<String> {
        if q == "os.fexecve" {
            return Some(q.to_string());
        }
        let kinds = self.site_kinds(site);
        let process = kinds & PROCESS != 0
            || q.starts_with("os.exec")
            || q.starts_with("os.spawn")
            || q.starts_with("os.posix_spawn");
        if !process {
            return None;
        }
        let (pos, _) = self.args(site.node);
        let program = *pos.first()?;
        // `os.execve(fd, argv, env)`: exec takes a descriptor too.
        if q.starts_with("os.exec") && self.memfd_bound(program, site.scope) {
            return Some(format!("{q} of a memory file's descriptor"));
        }
        self.reset_budget();
        let path = self
            .path_values(program, site.scope)
            .into_iter()
            .find(|p| descriptor_path(p))?;
        Some(format!("{q} {path}"))
    }

    /// Whether the name `n` holds what a memfd_create call returned.
    fn memfd_bound(&self, n: Node<'t>, scope: usize) -> bool {
        if n.kind() != K::Identifier {
            return false;
        }
        let Some(binds) = self.lookup(self.text(n), scope, n.start_byte()) else {
            return false;
        };
        binds.iter().any(|b| {
            matches!(*b, Bind::Expr(v, s) if v.kind() == K::Call
                && self.callee(v, s).is_some_and(|q| q.ends_with("memfd_create")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::descriptor_path;

    #[test]
    fn descriptor_paths() {
        assert!(descriptor_path("/proc/self/fd/3") && descriptor_path("/dev/fd/{fd}"));
        assert!(descriptor_path("/proc/{os.getpid()}/fd/{fd}"));
        assert!(!descriptor_path("/proc/self/fdinfo/3") && !descriptor_path("/usr/bin/fd"));
        assert!(!descriptor_path("/proc/self/exe"));
    }
}
