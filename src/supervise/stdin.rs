//! The code's standard input: the caller's bytes or descriptor, copied into the
//! sandbox's stdin pipe without blocking the supervisor (host descriptors are never
//! handed to the sandbox itself).

use crate::io::Stdin;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

pub(super) struct Pump<'a> {
    /// Where more input comes from, until its end-of-file.
    from: Option<BorrowedFd<'a>>,
    to_child: Option<OwnedFd>,
    buf: Vec<u8>,
}

impl<'a> Pump<'a> {
    pub fn new(stdin: Stdin<'a>, to_child: Option<OwnedFd>) -> Pump<'a> {
        if let Some(w) = &to_child {
            let _ = nix::fcntl::fcntl(
                w.as_raw_fd(),
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
            );
        }
        let (from, buf) = match stdin {
            Stdin::Null => (None, Vec::new()),
            Stdin::Bytes(b) => (None, b),
            Stdin::Fd(fd) => (Some(fd), Vec::new()),
        };
        let mut p = Pump {
            from,
            to_child,
            buf,
        };
        p.settle();
        p
    }

    /// The source to poll for reading, when the buffer wants refilling.
    pub fn source(&self) -> Option<BorrowedFd<'a>> {
        self.from
            .filter(|_| self.buf.is_empty() && self.to_child.is_some())
    }

    /// The pipe to poll for writing, when there is something to write.
    pub fn sink(&self) -> Option<BorrowedFd<'_>> {
        self.to_child
            .as_ref()
            .filter(|_| !self.buf.is_empty())
            .map(|w| w.as_fd())
    }

    pub fn on_readable(&mut self) {
        let Some(fd) = self.from else { return };
        let mut buf = vec![0u8; super::output::waiting(fd)];
        match nix::unistd::read(fd.as_raw_fd(), &mut buf) {
            Ok(0) | Err(_) => self.from = None,
            Ok(k) => self.buf.extend_from_slice(&buf[..k]),
        }
        self.settle();
    }

    pub fn on_writable(&mut self) {
        if let Some(w) = &self.to_child {
            match nix::unistd::write(w, &self.buf) {
                Ok(k) => {
                    self.buf.drain(..k);
                }
                Err(nix::errno::Errno::EAGAIN) => {}
                Err(_) => {
                    self.buf.clear();
                    self.from = None;
                    self.to_child = None;
                }
            }
        }
        self.settle();
    }

    /// At the source's end with nothing left to write, the pipe is closed: the code
    /// sees end-of-file.
    fn settle(&mut self) {
        if self.from.is_none() && self.buf.is_empty() {
            self.to_child = None;
        }
    }
}
