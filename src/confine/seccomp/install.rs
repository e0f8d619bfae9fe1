//! Installing a compiled program on the calling thread, with or without a
//! listener for its user notifications.

use std::os::fd::{FromRawFd, OwnedFd};

use seccompiler::BpfProgram;

use crate::confine::ConfineError;

/// Installs `prog` on the calling thread. Meant for the forked child right
/// before execve: it does not allocate, and it sets no_new_privs itself (the
/// kernel refuses an unprivileged filter without it; setting it twice is harmless).
pub fn install_filter(prog: &BpfProgram) -> Result<(), ConfineError> {
    install(prog, 0).map(|_| ())
}

/// Installs `prog` without setting no_new_privs, for OCI specs that leave it off:
/// the kernel then requires CAP_SYS_ADMIN in the caller's user namespace.
pub fn install_filter_flags(prog: &BpfProgram, flags: libc::c_ulong) -> Result<(), ConfineError> {
    raw_install(prog, flags).map(|_| ())
}

/// Installs `prog` and returns the listener for its user notifications. The fd is
/// not close-on-exec: the caller must hand it on and close it before execve, or the
/// code would hold the power to answer its own denied calls.
pub fn install_filter_listening(prog: &BpfProgram) -> Result<OwnedFd, ConfineError> {
    let fd = install(prog, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    // SAFETY: with NEW_LISTENER, seccomp() returns a fresh fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// [`install_filter_flags`] with a listener for the filter's user notifications
/// (OCI `SCMP_ACT_NOTIFY`); the same care with the fd applies.
pub fn install_filter_flags_listening(
    prog: &BpfProgram,
    flags: libc::c_ulong,
) -> Result<OwnedFd, ConfineError> {
    let fd = raw_install(prog, flags | libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    // SAFETY: with NEW_LISTENER, seccomp() returns a fresh fd that we now own.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

fn install(prog: &BpfProgram, flags: libc::c_ulong) -> Result<libc::c_long, ConfineError> {
    // SAFETY: plain prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(ConfineError::NoNewPrivs(std::io::Error::last_os_error()));
    }
    raw_install(prog, flags)
}

fn raw_install(prog: &BpfProgram, flags: libc::c_ulong) -> Result<libc::c_long, ConfineError> {
    let len = u16::try_from(prog.len()).map_err(|_| ConfineError::FilterTooLarge(prog.len()))?;
    let fprog = libc::sock_fprog {
        len,
        // seccompiler's sock_filter is #[repr(C)] with the same layout as the kernel's.
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: fprog points to `prog`, alive for the call; the kernel copies it.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    };
    if rc < 0 {
        return Err(ConfineError::Install(std::io::Error::last_os_error()));
    }
    Ok(rc)
}
