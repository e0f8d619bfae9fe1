//! The seccomp filter's notifications, once the payload has handed over the listener:
//! a call on the kill list ends the run (named in the report), a denial routed here
//! (`--audit-syscalls`) is answered EPERM and counted.

use crate::confine::notify::{self, Classifier, Decision};
use crate::confine::syscalls;
use crate::outcome::{DeniedCall, Violation};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

#[derive(Default)]
pub(super) struct Watch {
    pub listener: Option<OwnedFd>,
    denied: std::collections::BTreeMap<i64, u64>,
}

impl Watch {
    pub fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.listener.as_ref().map(|l| l.as_fd())
    }

    /// Answers every pending notification. Returns the violation when a call ends
    /// the run; the caller then kills the sandbox.
    pub fn serve(&mut self, classifier: Option<&Classifier>) -> Option<Violation> {
        let listener = self.listener.as_ref()?;
        let n = match notify::receive(listener.as_fd()) {
            Ok(Some(n)) => n,
            Ok(None) => return None,
            Err(e) => {
                tracing::debug!(%e, "seccomp listener gone");
                self.listener = None;
                return None;
            }
        };
        let decision = classifier.map(|c| c.decide(n.nr)).unwrap_or(Decision::Kill);
        match decision {
            // Never answered: the caller stays blocked in the call until the sandbox's
            // SIGKILL ends it, so the code never runs another instruction (an answer
            // would race with the kill).
            Decision::Kill => Some(Violation::Seccomp {
                syscall: Some(n.name()),
                nr: Some(n.nr),
                signal: None,
            }),
            Decision::Deny => {
                *self.denied.entry(n.nr).or_default() += 1;
                if let Err(e) = notify::fail_call(listener.as_fd(), n.id, libc::EPERM) {
                    tracing::debug!(%e, "answering a seccomp notification");
                }
                None
            }
        }
    }

    pub fn denied(&self) -> Vec<DeniedCall> {
        self.denied
            .iter()
            .map(|(nr, count)| DeniedCall {
                syscall: syscalls::name(*nr)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("syscall_{nr}")),
                nr: *nr,
                count: *count,
            })
            .collect()
    }
}
