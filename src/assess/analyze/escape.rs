//! Leaving the container and tampering with other processes, judged by the
//! kernel interface used: host control files written (core_pattern, cgroup
//! release agents, uevent and modprobe helpers), another process's root or
//! namespaces entered (MB930); another process's memory or executable
//! written, through /proc, ptrace, process_vm_writev or the Windows calls
//! of DLL and shellcode injection (MB929).

use super::calls::Call;
use super::{taxonomy, Analyzer, Node};

/// Windows calls that write into another process or start code in it: the
/// steps of classic DLL and shellcode injection. No other API spells
/// these names, so a method of that name counts even when its handle does
/// not resolve.
const WINDOWS_PROCESS_WRITES: &[&str] = &[
    "WriteProcessMemory",
    "NtWriteVirtualMemory",
    "ZwWriteVirtualMemory",
    "CreateRemoteThread",
    "CreateRemoteThreadEx",
    "NtCreateThreadEx",
    "RtlCreateUserThread",
    "QueueUserAPC",
    "NtQueueApcThread",
    "SetThreadContext",
];

/// ptrace requests that write into the traced process: POKETEXT, POKEDATA,
/// POKEUSER, SETREGS, SETFPREGS (Linux numbers).
const PTRACE_WRITES: &[i64] = &[4, 5, 6, 13, 15];

impl<'t> Analyzer<'t> {
    /// Judges one written path for MB929/MB930; true when a finding was made.
    pub(super) fn judge_escape(&mut self, p: &str, op: &str, node: Node<'t>) -> bool {
        if let Some(what) = taxonomy::host_control(p) {
            self.add(
                "MB930",
                node,
                format!("{op} {p}: writes {what}, which the host kernel acts on"),
            );
            return true;
        }
        if let Some(what) = taxonomy::process_image(p) {
            self.add(
                "MB929",
                node,
                format!("{op} {p}: writes {what} of another process"),
            );
            return true;
        }
        false
    }

    /// Namespace entry, root changes and cross-process writes made by calls.
    /// A library handle kept on `self` does not resolve, so `setns` is also
    /// recognised as a method name: no other API spells it.
    pub(super) fn check_escape_call(&mut self, call: &Call<'t>) {
        let q = call.q.as_deref().unwrap_or("");
        if call.method == Some("setns") && !q.starts_with("ctypes.CDLL().") {
            return self.check_setns(call);
        }
        let api = match q.strip_prefix("ctypes.") {
            Some(rest) => rest.rsplit('.').next(),
            None => call.method,
        };
        if let Some(api) = api.filter(|a| WINDOWS_PROCESS_WRITES.contains(a)) {
            return self.add(
                "MB929",
                call.node,
                format!("{api}: writes into another process, or starts code in it"),
            );
        }
        // The function a libc handle reaches (`ctypes.CDLL().setns`); only
        // those calls are split at their dots.
        let libc = q
            .strip_prefix("ctypes.CDLL().")
            .map(|f| f.split('.').next().unwrap_or(f));
        match libc {
            Some("process_vm_writev") => self.add(
                "MB929",
                call.node,
                "process_vm_writev through ctypes: writes into another process's memory",
            ),
            Some("ptrace") => self.check_ptrace_write(call),
            Some("setns") => self.check_setns(call),
            _ if q == "os.chroot" => self.check_chroot(call),
            _ => {}
        }
    }

    fn check_ptrace_write(&mut self, call: &Call<'t>) {
        let Some(req) = call.pos.first().copied() else {
            return;
        };
        self.reset_budget();
        let by_number = self
            .fold_int(req, call.scope, 0)
            .is_some_and(|n| PTRACE_WRITES.contains(&n));
        let named = self.text(req).to_ascii_uppercase();
        let by_name = named.contains("POKE") || named.contains("SETREGS");
        if by_number || by_name {
            self.add(
                "MB929",
                call.node,
                format!(
                    "ptrace({}, ...) through ctypes: writes into the traced process's code or registers",
                    self.text(req)
                ),
            );
        }
    }

    /// `setns` on a descriptor of another process's namespace (`/proc/N/ns/...`
    /// named in the script): joining the host's namespaces from a container.
    fn check_setns(&mut self, call: &Call<'t>) {
        let named = self.strings.iter().find_map(|s| {
            let v = super::literal::string_value(self.src, *s)?;
            taxonomy::foreign_namespace(&v).then_some(v)
        });
        if let Some(path) = named {
            self.add(
                "MB930",
                call.node,
                format!(
                    "setns() in a script that opens {path:?}: joins another process's namespaces"
                ),
            );
        }
    }

    fn check_chroot(&mut self, call: &Call<'t>) {
        let Some(t) = call.arg(0, "path") else { return };
        self.reset_budget();
        let values = match self.fold_path(t, call.scope, 0) {
            Some(p) => vec![p],
            None => self.paths(t, call.scope),
        };
        if let Some(p) = values.into_iter().find(|p| taxonomy::foreign_root(p)) {
            self.add(
                "MB930",
                call.node,
                format!("os.chroot {p}: enters another process's root file system"),
            );
        }
    }
}
