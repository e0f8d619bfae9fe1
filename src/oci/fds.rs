//! `--preserve-fds N` (create, run, exec): the caller's descriptors 3 to 3+N-1
//! reach the container's process, as runc passes them (socket activation, a
//! file a script opened for it). Only those the caller really handed down count:
//! open and without close-on-exec. Every descriptor maibox opens itself is
//! close-on-exec, so none of the runtime's own can slip in under a preserved
//! number (how CVE-2024-21626 reached the host).

use nix::fcntl::{fcntl, FcntlArg, FdFlag};
use std::os::fd::RawFd;

/// The descriptors among 3..3+n that the caller passed down.
pub fn inherited(n: u32) -> Vec<RawFd> {
    (3..3i64.saturating_add(i64::from(n)))
        .filter_map(|fd| RawFd::try_from(fd).ok())
        .filter(|fd| {
            fcntl(*fd, FcntlArg::F_GETFD)
                .is_ok_and(|f| !FdFlag::from_bits_truncate(f).contains(FdFlag::FD_CLOEXEC))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    #[test]
    fn only_open_descriptors_without_cloexec_are_inherited() {
        // std opens with O_CLOEXEC: this one is the runtime's own.
        let own = std::fs::File::open("/dev/null").unwrap();
        let fd = own.as_raw_fd();
        let n = u32::try_from(fd - 2).unwrap();
        assert!(!inherited(n).contains(&fd));
        // Cleared, it is what a caller hands down.
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::empty())).unwrap();
        assert!(inherited(n).contains(&fd));
        // Past n it does not count.
        assert!(!inherited(n - 1).contains(&fd));
    }
}
