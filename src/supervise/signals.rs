//! The caller's signals, for a caller that owns its process's signals (the command
//! line): SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are blocked in the
//! calling thread from before the sandbox is made until the run is over, and read from
//! a signalfd. The first goes to the code; a second one ends the sandbox.

use crate::engine::init::FORWARDED;
use crate::error::{SetupError, Step, StepContext};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::os::fd::{AsFd, BorrowedFd};

/// Blocked signals and the descriptor they are read from; dropping it restores the
/// thread's signal mask.
pub struct Forwarder {
    fd: SignalFd,
    old_mask: SigSet,
}

impl Forwarder {
    pub fn install() -> Result<Forwarder, SetupError> {
        let mut set = SigSet::empty();
        for s in FORWARDED {
            set.add(*s);
        }
        let mut old_mask = SigSet::empty();
        nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), Some(&mut old_mask))
            .step(Step::Signals, "block the caller's signals")?;
        match SignalFd::with_flags(&set, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK) {
            Ok(fd) => Ok(Forwarder { fd, old_mask }),
            Err(e) => {
                let _ = old_mask.thread_set_mask();
                Err(SetupError::new(Step::Signals, format!("signalfd: {e}")))
            }
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The signals that arrived since the last call.
    pub fn pending(&self) -> Vec<Signal> {
        let mut v = Vec::new();
        while let Ok(Some(info)) = self.fd.read_signal() {
            if let Ok(s) = Signal::try_from(info.ssi_signo as i32) {
                v.push(s);
            }
        }
        v
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        let _ = self.old_mask.thread_set_mask();
    }
}
