//! The host beyond the sandbox: typing into the terminal (TIOCSTI, MB919),
//! raw keyboards and memory (MB920), and the container runtime, which is
//! root on the host (MB423; a privileged container or one mounting `/`,
//! MB921).

use super::calls::Call;
use super::{taxonomy, Analyzer, F, K};

/// The TIOCSTI ioctl request on Linux.
const TIOCSTI: i64 = 0x5412;

impl<'t> Analyzer<'t> {
    /// `read`: the paths the call reads.
    pub(super) fn check_host(&mut self, call: &Call<'t>, read: &[String]) {
        let q = call.q.as_deref();
        if q == Some("fcntl.ioctl") {
            if let Some(req) = call.pos.get(1) {
                // Named as written, through what it resolves to (`op =
                // getattr(termios, "TIOC" + "STI")`), or as the number.
                self.reset_budget();
                let named = self.text(*req).ends_with("TIOCSTI")
                    || self
                        .resolve(*req, call.scope, 0)
                        .is_some_and(|q| q.ends_with("TIOCSTI"));
                self.reset_budget();
                if named || self.fold_int(*req, call.scope, 0) == Some(TIOCSTI) {
                    self.add(
                        "MB919",
                        call.node,
                        format!("ioctl({}) pushes input into a terminal", self.text(*req)),
                    );
                }
            }
        }
        for p in read {
            if let Some(what) = taxonomy::capture_device(p) {
                self.add("MB920", call.node, format!("reads {p}: {what}"));
                break;
            }
        }
        self.check_container_runtime(call);
    }

    fn check_container_runtime(&mut self, call: &Call<'t>) {
        let q = call.q.as_deref().unwrap_or("");
        if q.starts_with("docker.")
            || q.starts_with("requests_unixsocket.")
            // The Kubernetes client's workload constructors (the names are
            // its own; the API object rarely resolves to the module).
            || call
                .method
                .is_some_and(|m| m.starts_with("create_namespaced_"))
        {
            self.signs.docker.get_or_insert(call.node);
            if q.starts_with("docker.") {
                self.add("MB423", call.node, format!("{q}: the Docker API"));
            }
        }
        let privileged = call
            .kwarg("privileged")
            .is_some_and(|v| v.kind() == K::True);
        let mounts_root = call.kwarg("volumes").is_some_and(|v| {
            v.kind() == K::Dictionary
                && v.children()
                    .filter_map(|p| p.child(F::Key))
                    .any(|k| self.text(k).trim_matches(['"', '\'']) == "/")
        });
        if privileged || mounts_root {
            self.signs.privileged.get_or_insert(call.node);
        }
    }
}
