//! Capped pass-through of the sandbox's stdout and stderr.
//!
//! Output is streamed live to the caller's sinks; both streams share one byte budget.
//! The first chunk that crosses it is cut at the limit and followed by a visible marker.

use std::os::fd::{AsFd, BorrowedFd};

#[derive(Debug, Default, Clone, Copy)]
pub struct StreamCount {
    pub bytes: u64,
    pub ended_with_newline: bool,
}

#[derive(Clone)]
pub struct CappedOutput {
    limit: u64,
    total: u64,
    pub truncated: bool,
    pub stdout: StreamCount,
    pub stderr: StreamCount,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl CappedOutput {
    pub fn new(limit: u64) -> Self {
        CappedOutput {
            limit,
            total: 0,
            truncated: false,
            stdout: StreamCount {
                bytes: 0,
                ended_with_newline: true,
            },
            stderr: StreamCount {
                bytes: 0,
                ended_with_newline: true,
            },
        }
    }

    /// Forwards `data` to `out` within the budget. Returns true when this call
    /// crossed the limit (the caller then stops the sandbox).
    pub fn forward(&mut self, which: Stream, data: &[u8], out: &mut dyn FnMut(&[u8])) -> bool {
        if self.truncated {
            return false;
        }
        let room = self.limit.saturating_sub(self.total);
        let take = (data.len() as u64).min(room) as usize;
        let part = &data[..take];
        out(part);
        self.total += take as u64;
        let count = match which {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        count.bytes += take as u64;
        if let Some(last) = part.last() {
            count.ended_with_newline = *last == b'\n';
        }
        if take < data.len() {
            self.truncated = true;
            let marker = format!(
                "{}[maibox: output truncated: the limit of {} bytes was reached]\n",
                if count.ended_with_newline { "" } else { "\n" },
                self.limit
            );
            out(marker.as_bytes());
            count.ended_with_newline = true;
            return true;
        }
        false
    }
}

/// Writes everything, giving up silently when the caller closed its end: the run
/// and its report must not fail because nobody reads the output.
pub fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) {
    while !data.is_empty() {
        match nix::unistd::write(fd.as_fd(), data) {
            Ok(0) => return,
            Ok(n) => data = &data[n..],
            Err(nix::errno::Errno::EINTR) => continue,
            Err(nix::errno::Errno::EAGAIN) => {
                let mut p = [nix::poll::PollFd::new(fd, nix::poll::PollFlags::POLLOUT)];
                let _ = nix::poll::poll(&mut p, nix::poll::PollTimeout::from(1000u16));
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::AsFd;

    #[test]
    fn cuts_at_the_limit_with_a_marker() {
        let (r, w) = nix::unistd::pipe().unwrap();
        let mut o = CappedOutput::new(10);
        let mut to_pipe = |d: &[u8]| write_all(w.as_fd(), d);
        assert!(!o.forward(Stream::Stdout, b"hello", &mut to_pipe));
        assert!(o.forward(Stream::Stderr, b"0123456789", &mut to_pipe));
        assert!(!o.forward(Stream::Stdout, b"more", &mut to_pipe));
        drop(w);
        let mut s = String::new();
        std::fs::File::from(r).read_to_string(&mut s).unwrap();
        assert!(
            s.starts_with("hello01234\n[maibox: output truncated"),
            "{s}"
        );
        assert!(!s.contains("more"));
        assert_eq!(o.stdout.bytes + o.stderr.bytes, 10);
        assert!(o.truncated);
    }
}
