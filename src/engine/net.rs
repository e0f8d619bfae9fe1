//! The sandbox's network namespace: only `lo`, brought up so local sockets work.

use crate::error::{SetupError, Step};

/// Sets IFF_UP on `lo` with the classic SIOCSIFFLAGS ioctl. A netlink client crate
/// would pull in an async runtime for what is two ioctls on a throw-away socket.
pub fn loopback_up() -> Result<(), SetupError> {
    let err = |what: &str| {
        SetupError::new(
            Step::Network,
            format!("{what}: {}", std::io::Error::last_os_error()),
        )
    };
    // SAFETY: a plain socket; closed below on every path.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(err("socket for interface configuration"));
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (i, b) in b"lo".iter().enumerate() {
        req.ifr_name[i] = *b as libc::c_char;
    }
    // SAFETY: fd is valid and req is a properly initialized ifreq.
    let result = unsafe {
        if libc::ioctl(fd, libc::SIOCGIFFLAGS, &mut req) < 0 {
            Err(err("SIOCGIFFLAGS lo"))
        } else {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            if libc::ioctl(fd, libc::SIOCSIFFLAGS, &req) < 0 {
                Err(err("SIOCSIFFLAGS lo up"))
            } else {
                Ok(())
            }
        }
    };
    // SAFETY: closing the socket we opened.
    unsafe { libc::close(fd) };
    result
}
