//! What a call gives the script: deserialisers, sockets and raw sockets,
//! network clients, native code through ctypes, keyboard hooks, frame
//! access and large encoded blobs.

use super::calls::Call;
use super::literal::is_blob;
use super::names::*;
use super::{pos, Analyzer};

impl<'t> Analyzer<'t> {
    pub(super) fn check_capabilities(&mut self, q: &str, call: &Call<'t>) {
        let node = call.node;
        self.check_deserialise(q, call);
        self.check_socket(q, call);
        if network_client(q, call.kinds) {
            self.add("MB310", node, call.via());
            self.facts.network = true;
        }
        if q.starts_with("ctypes.") {
            self.add("MB410", node, call.via());
            self.facts.ctypes.get_or_insert(pos(node));
            if let Some(f) = q.strip_prefix("ctypes.CDLL().") {
                let f = f.split('.').next().unwrap_or(f);
                if PRIV_LIBC.contains(&f) {
                    self.add("MB210", node, format!("libc {f}() through ctypes"));
                }
                if matches!(f, "mprotect" | "mmap") {
                    self.facts.exec_memory = true;
                }
            }
        }
        if q == "sys._getframe" || q == "inspect.currentframe" {
            self.add("MB415", node, call.via());
        }
        if call.is(super::kinds::DECODER) {
            let blob = call.pos.first().and_then(|a| {
                self.reset_budget();
                self.fold(*a, call.scope, 0)
            });
            if blob.is_some_and(|b| is_blob(&b)) {
                self.add("MB420", node, format!("{q} of a long encoded literal"));
            }
        }
    }

    /// pickle, marshal and yaml loaders; pickling calls are remembered for
    /// the gadget check.
    fn check_deserialise(&mut self, q: &str, call: &Call<'t>) {
        let node = call.node;
        if call.is(super::kinds::PICKLER) {
            self.pickle_dumps.push((node, call.scope));
        }
        if call.is(super::kinds::DESERIALIZER) {
            self.add("MB301", node, call.via());
        } else if matches!(q, "marshal.loads" | "marshal.load") {
            self.add("MB302", node, call.via());
        } else if q == "yaml.load" || q == "yaml.load_all" {
            let loader = call.kwarg("Loader").or_else(|| call.pos.get(1).copied());
            let safe = loader.is_some_and(|l| {
                let t = self.text(l);
                t.contains("SafeLoader") || t.contains("BaseLoader") || t.contains("CSafeLoader")
            });
            if !safe {
                self.add("MB506", node, call.via());
            }
        } else if q == "yaml.unsafe_load" || q == "yaml.full_load" {
            self.add("MB506", node, call.via());
        }
    }

    fn check_socket(&mut self, q: &str, call: &Call<'t>) {
        if !matches!(
            q,
            "socket.socket"
                | "socket.create_connection"
                | "socket.fromfd"
                | "socket.create_server"
                | "socket.socketpair"
        ) {
            return;
        }
        let node = call.node;
        self.add("MB401", node, call.via());
        if q != "socket.socketpair" {
            self.facts.socket.get_or_insert(pos(node));
            self.facts.network = true;
        }
        let raw = call.arg_values().any(|a| {
            let t = self.text(a);
            ["SOCK_RAW", "AF_PACKET", "IPPROTO_RAW", "ETH_P_ALL"]
                .iter()
                .any(|r| t.contains(r))
        });
        if raw {
            self.add("MB207", node, "raw socket");
        }
    }
}
