//! What the sandbox's init shows of itself in /proc. Init is a fork of the supervisor
//! (clone without exec), so `/proc/1/cmdline` would be the supervisor's command line
//! (the maibox binary's host path and every flag, the code inline, an override's
//! reason; a server's socket path) and `/proc/1/comm` its name. Unlike the rest of
//! init's /proc entries, which its non-dumpable state keeps from the code, those two
//! are readable by every process.
//!
//! The name is set with PR_SET_NAME. The command line is moved to a buffer of its own
//! with PR_SET_MM_MAP (the form of PR_SET_MM that needs no privilege in the initial
//! user namespace: it restates every field of the memory map, so the others are read
//! back from /proc/self/stat and given unchanged). Rewriting the original argv area
//! instead would keep its length, and the kernel would show the rest as empty
//! arguments.

use crate::error::{SetupError, Step};

/// What the code sees as init's command line and name.
pub const INIT_NAME: &str = "maibox-init";

/// `struct prctl_mm_map` from <linux/prctl.h>; the libc crate does not define it.
#[repr(C)]
struct PrctlMmMap {
    start_code: u64,
    end_code: u64,
    start_data: u64,
    end_data: u64,
    start_brk: u64,
    brk: u64,
    start_stack: u64,
    arg_start: u64,
    arg_end: u64,
    env_start: u64,
    env_end: u64,
    auxv: u64,
    auxv_size: u32,
    exe_fd: u32,
}

/// Gives this process [`INIT_NAME`] as its name and command line.
pub fn neutral() -> Result<(), SetupError> {
    let step = Step::Proc;
    let comm =
        std::ffi::CString::new(INIT_NAME).map_err(|e| SetupError::new(step, e.to_string()))?;
    nix::sys::prctl::set_name(&comm)
        .map_err(|e| SetupError::new(step, format!("prctl(PR_SET_NAME): {e}")))?;
    let f = stat_fields()?;
    // The kernel reads a command line only from anonymous memory: a heap buffer,
    // kept for the life of the process.
    let line: &'static mut [u8] = Box::leak(comm.into_bytes_with_nul().into_boxed_slice());
    let arg_start = line.as_ptr() as u64;
    // SAFETY: sbrk(0) only reads the current program break.
    let brk = unsafe { libc::sbrk(0) } as u64;
    let map = PrctlMmMap {
        start_code: f(26)?,
        end_code: f(27)?,
        start_data: f(45)?,
        end_data: f(46)?,
        start_brk: f(47)?,
        brk,
        start_stack: f(28)?,
        arg_start,
        arg_end: arg_start + line.len() as u64,
        env_start: f(50)?,
        env_end: f(51)?,
        auxv: 0,
        auxv_size: 0,
        exe_fd: u32::MAX, // -1: the executable stays as it is
    };
    // SAFETY: a valid, initialized prctl_mm_map and its size; every address in it is
    // this process's own.
    let rc = unsafe {
        libc::prctl(
            libc::PR_SET_MM,
            libc::PR_SET_MM_MAP as libc::c_ulong,
            &map as *const PrctlMmMap as libc::c_ulong,
            std::mem::size_of::<PrctlMmMap>() as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if rc != 0 {
        return Err(SetupError::new(
            step,
            format!(
                "prctl(PR_SET_MM_MAP) for init's command line: {}",
                std::io::Error::last_os_error()
            ),
        ));
    }
    Ok(())
}

/// Field `n` (as proc(5) numbers them) of /proc/self/stat, through the returned
/// function.
fn stat_fields() -> Result<impl Fn(usize) -> Result<u64, SetupError>, SetupError> {
    let step = Step::Proc;
    let stat = std::fs::read_to_string("/proc/self/stat")
        .map_err(|e| SetupError::new(step, format!("read /proc/self/stat: {e}")))?;
    // The name (field 2) may hold spaces and parentheses: count from its end.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r.to_string())
        .unwrap_or_default();
    let fields: Vec<String> = rest.split_whitespace().map(str::to_string).collect();
    Ok(move |n: usize| {
        fields
            .get(n - 3)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| SetupError::new(step, format!("/proc/self/stat has no field {n}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_shows_the_neutral_name() {
        // SAFETY: the child only makes the calls under test and _exits.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let ok = neutral().is_ok()
                    && std::fs::read("/proc/self/cmdline").ok().as_deref()
                        == Some(b"maibox-init\0".as_slice())
                    && std::fs::read_to_string("/proc/self/comm").ok().as_deref()
                        == Some("maibox-init\n");
                unsafe { libc::_exit(if ok { 0 } else { 1 }) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let st = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(st, nix::sys::wait::WaitStatus::Exited(child, 0));
            }
        }
    }
}
