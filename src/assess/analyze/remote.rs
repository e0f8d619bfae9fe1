//! Commands run on other machines: over SSH (the `ssh`, `plink` or
//! `ssh-copy-id` programs, paramiko's `exec_command`) or Windows remote
//! management (`wmic /node:`, `psexec \\host`). Reaching a host the user
//! names is administration; two shapes are not:
//!
//! * MB961: a login key put into other machines' `authorized_keys` (or
//!   pushed with `ssh-copy-id`): access that outlives the session, given to
//!   whoever holds the key.
//! * MB962: commands run on hosts the script found itself (the user's
//!   `known_hosts` and shell histories, the ARP table or `net view`, an
//!   address range swept), over SSH told to accept any host key or over
//!   Windows remote management: how worms move from machine to machine.
//!
//! The literals are read once (the shared lower-cased list); the helpers a
//! script wraps `ssh` in hide the data flow, but not the words.

use super::needles::NODE;
use super::{line, Analyzer, Node};

/// Where hosts a user reached before are written down.
const HOST_RECORDS: &[&str] = &["known_hosts", "bash_history", "zsh_history"];

/// Whether a lower-cased literal names an SSH program, and whether it
/// names a Windows remote-execution tool.
/// `found` holds the needle lists `v` holds (see [`super::needles`]).
fn remote_program(v: &str, found: u32) -> (bool, bool) {
    let ssh = matches!(v, "ssh" | "plink" | "ssh-copy-id") || v.starts_with("ssh ");
    let windows = found & NODE != 0 || v == "psexec";
    (ssh, windows)
}

/// What the literals and calls show of reaching other machines.
#[derive(Default)]
struct Reach<'t> {
    /// A program or call that runs commands on another machine.
    remote: Option<Node<'t>>,
    /// Windows remote management (accepts no host key to check).
    windows: bool,
    /// SSH told to accept any host key.
    blind_ssh: bool,
    /// `authorized_keys` named, or `ssh-copy-id` run.
    keys: Option<Node<'t>>,
    /// Hosts looked for in the user's records or the local network.
    found_hosts: Option<Node<'t>>,
}

impl<'t> Analyzer<'t> {
    pub(super) fn check_remote_reach(&mut self) {
        let r = self.reach();
        let Some(remote) = r.remote else { return };
        if let Some(found) = r.found_hosts.filter(|_| r.windows || r.blind_ssh) {
            let detail = format!(
                "runs commands on other machines (line {}) found in the user's records or the network (line {})",
                line(remote),
                line(found)
            );
            self.add("MB962", remote, detail);
        }
        if let Some(keys) = r.keys {
            let detail = format!(
                "puts a login key on other machines reached by SSH (line {})",
                line(remote)
            );
            self.add("MB961", keys, detail);
        }
    }

    fn reach(&self) -> Reach<'t> {
        let mut r = Reach::default();
        let exec = self.call_named("exec_command");
        if !self.runs_commands() && exec.is_none() {
            return r;
        }
        let lowered = self.lowered();
        // Nothing is found without a program or call that reaches another
        // machine: looked for first, the other needles are searched in
        // every literal only when there is one.
        let remote_named = lowered.texts.iter().zip(&lowered.found).any(|((_, v), f)| {
            let (ssh, windows) = remote_program(v, *f);
            ssh || windows
        });
        if exec.is_none() && !remote_named {
            return r;
        }
        for ((n, v), f) in lowered.texts.iter().zip(&lowered.found) {
            let v: &str = v;
            let (ssh, windows) = remote_program(v, *f);
            if ssh || windows {
                r.remote.get_or_insert(*n);
            }
            r.windows |= windows;
            r.blind_ssh |= v.contains("stricthostkeychecking=no");
            if v.contains("authorized_keys") || v == "ssh-copy-id" {
                r.keys.get_or_insert(*n);
            }
            let scans_lan = matches!(v, "arp" | "net view") || v.starts_with("arp -a");
            if scans_lan || HOST_RECORDS.iter().any(|h| v.contains(h)) {
                r.found_hosts.get_or_insert(*n);
            }
        }
        if let Some(c) = exec {
            r.remote.get_or_insert(c);
        }
        if self.imports_module("ipaddress") {
            if let Some(sweep) = self.call_named("hosts") {
                r.found_hosts.get_or_insert(sweep);
            }
        }
        r
    }
}
