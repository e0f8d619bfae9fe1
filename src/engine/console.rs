//! `terminal: true`: a pty made inside the container (its own devpts), the slave as
//! the process's controlling terminal and stdio, the master sent to the caller's
//! `--console-socket` (SCM_RIGHTS), as containerd's shim and runc expect.

use crate::error::{SetupError, Step, StepContext};
use nix::fcntl::OFlag;
use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Makes the pty, hands the master over `console` and makes the slave this process's
/// controlling terminal and fds 0-2 (owned by `uid`, the process's user). Call
/// after setsid, in the container's mount namespace, before dropping privileges.
pub fn attach(console: BorrowedFd, uid: u32, size: Option<(u16, u16)>) -> Result<(), SetupError> {
    let step = Step::Pipes;
    let master = nix::pty::posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC)
        .step(step, "open /dev/ptmx in the container")?;
    nix::pty::grantpt(&master).step(step, "grantpt")?;
    nix::pty::unlockpt(&master).step(step, "unlockpt")?;
    let name = nix::pty::ptsname_r(&master).step(step, "ptsname")?;
    let slave = nix::fcntl::open(
        name.as_str(),
        OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .step(step, format!("open the pty slave {name}"))?;
    // SAFETY: a fresh descriptor owned by nothing else.
    let slave = unsafe { OwnedFd::from_raw_fd(slave) };
    // The owner only, as runc: the group stays what devpts gives new ptys
    // (`gid=5`, the tty group, in the usual specs).
    nix::unistd::fchown(
        slave.as_raw_fd(),
        Some(nix::unistd::Uid::from_raw(uid)),
        None,
    )
    .step(
        step,
        format!("chown the pty slave {name} to the process's user"),
    )?;
    if let Some((rows, cols)) = size {
        set_size(&slave, rows, cols).step(step, format!("set the size of {name}"))?;
    }
    let fds = [master.as_raw_fd()];
    let cmsg = [ControlMessage::ScmRights(&fds)];
    let iov = [std::io::IoSlice::new(name.as_bytes())];
    sendmsg::<()>(console.as_raw_fd(), &iov, &cmsg, MsgFlags::empty(), None)
        .step(step, "send the pty master to the console socket")?;
    drop(master);
    // SAFETY: TIOCSCTTY with argument 0 on a terminal we just opened.
    if unsafe { libc::ioctl(slave.as_raw_fd(), libc::TIOCSCTTY, 0) } != 0 {
        return Err(SetupError::new(
            step,
            format!(
                "make {name} the controlling terminal: {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    for target in 0..3 {
        nix::unistd::dup2(slave.as_raw_fd(), target).step(step, "dup2 the pty slave to stdio")?;
    }
    Ok(())
}

/// Connects to the caller's console socket (a unix socket path on the host).
pub fn connect(path: &std::path::Path) -> Result<OwnedFd, SetupError> {
    let s = std::os::unix::net::UnixStream::connect(path).step(
        Step::Pipes,
        format!("connect to the console socket {}", path.display()),
    )?;
    Ok(OwnedFd::from(s))
}

/// The receiving side of a console socket: the pty master the container's init
/// sends (for `run` in the foreground, which is its own console socket).
pub fn receive_master(sock: BorrowedFd) -> Result<OwnedFd, SetupError> {
    let step = Step::Pipes;
    let mut buf = [0u8; 4096];
    match super::sync::recv_fd(sock, &mut buf).step(step, "receive the pty master")? {
        (_, Some(master)) => Ok(master),
        (_, None) => Err(SetupError::new(
            step,
            "the container sent no pty master on its console socket",
        )),
    }
}

/// Relays between this process's stdio and the container's pty (runc's
/// foreground `run` with `terminal: true`): stdin goes to the pty, the pty's
/// output to stdout. Puts a terminal stdin into raw mode (the container's pty
/// does the line discipline) and restores it when the returned guard drops.
/// The output thread ends once every holder of the pty slave is gone.
pub fn relay(master: OwnedFd) -> std::io::Result<Relay> {
    use std::io::{Read, Write};
    let stdin = std::io::stdin();
    let saved = nix::sys::termios::tcgetattr(&stdin).ok();
    if let Some(t) = &saved {
        let mut raw = t.clone();
        nix::sys::termios::cfmakeraw(&mut raw);
        let _ = nix::sys::termios::tcsetattr(&stdin, nix::sys::termios::SetArg::TCSANOW, &raw);
        let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
        // SAFETY: TIOCGWINSZ/TIOCSWINSZ with a valid winsize; failures leave the
        // pty's default size.
        unsafe {
            if libc::ioctl(0, libc::TIOCGWINSZ, &mut ws) == 0 {
                libc::ioctl(master.as_raw_fd(), libc::TIOCSWINSZ, &ws);
            }
        }
    }
    let mut to_pty = std::fs::File::from(master.try_clone()?);
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut input = std::io::stdin().lock();
        while let Ok(n) = input.read(&mut buf) {
            if n == 0 || to_pty.write_all(&buf[..n]).is_err() {
                break;
            }
        }
    });
    let mut from_pty = std::fs::File::from(master);
    let output = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        let mut out = std::io::stdout();
        // EIO, not EOF, is how a pty master reports that the slave is closed.
        while let Ok(n) = from_pty.read(&mut buf) {
            if n == 0 || out.write_all(&buf[..n]).is_err() {
                break;
            }
            let _ = out.flush();
        }
    });
    Ok(Relay {
        output: Some(output),
        saved,
    })
}

pub struct Relay {
    output: Option<std::thread::JoinHandle<()>>,
    saved: Option<nix::sys::termios::Termios>,
}

impl Relay {
    /// Waits until the container's output is drained.
    pub fn finish(mut self) {
        if let Some(h) = self.output.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        if let Some(t) = &self.saved {
            let _ = nix::sys::termios::tcsetattr(
                std::io::stdin(),
                nix::sys::termios::SetArg::TCSANOW,
                t,
            );
        }
    }
}

/// `process.consoleSize`: the pty's rows and columns, set before the process
/// or its caller's relay sees the terminal.
fn set_size(tty: &OwnedFd, rows: u16, cols: u16) -> std::io::Result<()> {
    let ws = libc::winsize {
        ws_row: rows,
        ws_col: cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: TIOCSWINSZ reads one winsize from a valid pointer.
    if unsafe { libc::ioctl(tty.as_raw_fd(), libc::TIOCSWINSZ, &ws) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
