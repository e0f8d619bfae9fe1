//! The code's stdout and stderr: read from the sandbox's pipes and handed to the
//! caller's sinks within the run's shared output cap.

use crate::io::Out;
use crate::output::{CappedOutput, Stream};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

pub(super) struct Output<'a> {
    pipes: [Option<OwnedFd>; 2],
    sinks: [Out<'a>; 2],
    pub capped: CappedOutput,
}

impl<'a> Output<'a> {
    pub fn new(stdout: OwnedFd, stderr: OwnedFd, sinks: [Out<'a>; 2], limit: u64) -> Output<'a> {
        Output {
            pipes: [Some(stdout), Some(stderr)],
            sinks,
            capped: CappedOutput::new(limit),
        }
    }

    /// The pipes still open, with their stream.
    pub fn open(&self) -> impl Iterator<Item = (Stream, BorrowedFd<'_>)> {
        [Stream::Stdout, Stream::Stderr]
            .into_iter()
            .zip(self.pipes.iter())
            .filter_map(|(s, p)| p.as_ref().map(|p| (s, p.as_fd())))
    }

    /// Both pipes are at end-of-file: everything the code wrote is delivered.
    pub fn done(&self) -> bool {
        self.pipes.iter().all(Option::is_none)
    }

    /// Reads what is ready on `stream`. Returns true when this crossed the cap (the
    /// caller then ends the run).
    pub fn on_readable(&mut self, stream: Stream) -> bool {
        let i = stream as usize;
        let Some(pipe) = &self.pipes[i] else {
            return false;
        };
        let mut buf = vec![0u8; waiting(pipe.as_fd())];
        match nix::unistd::read(pipe.as_raw_fd(), &mut buf) {
            Ok(0) | Err(_) => {
                self.pipes[i] = None;
                false
            }
            Ok(k) => {
                let sink = &mut self.sinks[i];
                self.capped
                    .forward(stream, &buf[..k], &mut |d: &[u8]| sink.write(d))
            }
        }
    }

    /// What the capturing sinks kept: (stdout, stderr).
    pub fn into_captured(self) -> (Vec<u8>, Vec<u8>) {
        let [o, e] = self.sinks;
        (o.captured, e.captured)
    }
}

/// The most one read takes: a pipe's default capacity.
const MAX_READ: usize = 65536;

/// How much one read of `fd` (a pipe or a socket) should take: what is waiting
/// (FIONREAD), at least one byte so that the read still sees end-of-file, at most
/// [`MAX_READ`].
///
/// Reads used to go through a 64 KiB array on the stack, cleared each time: in a
/// server, whose memory its live sandboxes share copy-on-write, each of its 16
/// pages was a page fault per read on the request thread's stack, while an
/// empty script's run has nothing to read but the end of its pipes.
pub(super) fn waiting(fd: BorrowedFd) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD stores one int through the pointer it is given.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    if r < 0 {
        return MAX_READ;
    }
    usize::try_from(n).unwrap_or(0).clamp(1, MAX_READ)
}
