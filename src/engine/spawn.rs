//! The supervisor's side of creating a sandbox: clone into new namespaces (the child
//! then runs [`super::chain`]), write the id maps, and hand the channel back. Both
//! views of a policy, and every front door, come through here.

pub use super::chain::ChildStdio;

use super::chain::{self, Child};
use super::init::Payload;
use super::sync::{self, Channel, Msg};
use super::userns;
use crate::error::{SetupError, Step};
use crate::policy::{Layer, Policy, View};
use nix::sched::CloneFlags;
use nix::unistd::Pid;

/// Namespaces created together with the sandbox process. The child creates two
/// more itself: the network namespace first thing, and the cgroup namespace once it
/// is in the run's cgroup, so that its root is that group (see [`super::chain`]).
fn namespaces(policy: &Policy) -> CloneFlags {
    if let View::Oci(v) = &policy.view {
        return super::oci::clone_flags(v);
    }
    let mut f = CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    for (layer, flag) in [
        (Layer::IpcNs, CloneFlags::CLONE_NEWIPC),
        (Layer::UtsNs, CloneFlags::CLONE_NEWUTS),
    ] {
        if policy.has(layer) {
            f |= flag;
        }
    }
    f
}

/// An OCI spec's existing PID namespace (`linux.namespaces[].path`), which the
/// init is cloned into: joining one takes effect for children only.
fn joined_pid_ns(policy: &Policy) -> Option<std::os::fd::BorrowedFd<'_>> {
    let View::Oci(v) = &policy.view else {
        return None;
    };
    let fd = v
        .namespaces
        .join
        .iter()
        .find(|j| j.flag == libc::CLONE_NEWPID)?
        .fd?;
    // SAFETY: the namespace file the runtime opened for this create; it stays
    // open until the spawn returns (see `open_joined_namespaces`).
    Some(unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) })
}

pub struct Spawned {
    pub pid: Pid,
    pub chan: Channel,
}

const STACK_SIZE: usize = 1 << 20;

/// The cloned child's stack: a mapping of its own, never a heap allocation.
///
/// A zeroed `Vec` of this size is calloc's: fresh pages the first time, but once
/// one is freed glibc raises its mmap threshold above it, and the next comes from
/// the heap and is cleared with memset. In a server that clones while earlier
/// sandboxes (copies of its memory) are alive, every page of that memset is a
/// copy-on-write fault and a TLB shootdown to the server's other threads: about
/// half of a refill thread's page-fault time (perf, warm_mode fork under load).
/// A fresh anonymous mapping is never written by this process: only the child
/// touches the pages it uses.
struct Stack(std::ptr::NonNull<u8>);

impl Stack {
    fn new() -> Result<Stack, SetupError> {
        use nix::sys::mman::{mmap_anonymous, MapFlags, ProtFlags};
        let len = std::num::NonZeroUsize::new(STACK_SIZE).unwrap_or(std::num::NonZeroUsize::MIN);
        // SAFETY: a new private anonymous mapping at an address the kernel picks.
        let p = unsafe {
            mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_STACK | MapFlags::MAP_NORESERVE,
            )
        }
        .map_err(|e| SetupError::new(Step::Clone, format!("map the child's stack: {e}")))?;
        Ok(Stack(p.cast()))
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: STACK_SIZE bytes mapped read-write by `new`, owned by self.
        unsafe { std::slice::from_raw_parts_mut(self.0.as_ptr(), STACK_SIZE) }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`; the child has its own copy of it.
        let _ = unsafe { nix::sys::mman::munmap(self.0.cast(), STACK_SIZE) };
    }
}

pub fn spawn(
    policy: &Policy,
    script: &[u8],
    payload: Payload,
    stdio: ChildStdio,
    before_maps: &mut dyn FnMut(Pid) -> Result<(), SetupError>,
) -> Result<Spawned, SetupError> {
    let (parent_chan, mut child_chan) = sync::pair()?;
    if !stdio.extra.is_empty() {
        child_chan = child_chan.raised()?;
    }
    // Made here, in the host's mount namespace, before clone.
    let trees = super::trees::for_view(policy)?;
    let mut child = Child {
        policy,
        script,
        payload,
        stdio,
        trees,
        chan: child_chan,
        parent_end: parent_chan.raw_fd(),
    };
    let mut stack = Stack::new()?;
    let cb = Box::new(|| chain::main(&mut child) as isize);
    let pid = super::clone::clone_sandbox(
        cb,
        stack.as_mut_slice(),
        namespaces(policy),
        joined_pid_ns(policy),
    )
    .map_err(clone_error)?;
    drop(child);
    drop(stack);
    let kill_child = |e: SetupError| {
        super::clone::end(pid);
        e
    };
    before_maps(pid).map_err(kill_child)?;
    match &policy.view {
        View::Python => userns::write_maps(
            pid,
            policy.identity.mapping,
            policy.identity.uid,
            policy.identity.gid,
        ),
        View::Oci(v) => match &v.namespaces.user {
            Some(maps) => super::oci::write_maps(pid, maps),
            None => Ok(()),
        },
    }
    .map_err(kill_child)?;
    parent_chan.send(&Msg::MapsWritten).map_err(kill_child)?;
    Ok(Spawned {
        pid,
        chan: parent_chan,
    })
}

fn clone_error(e: nix::errno::Errno) -> SetupError {
    let hint = match e {
        nix::errno::Errno::EPERM | nix::errno::Errno::ENOSPC => {
            "; unprivileged user namespaces may be disabled (run `maibox doctor`)"
        }
        _ => "",
    };
    SetupError::new(
        Step::Clone,
        format!("clone with new user/pid/mount/ipc/uts namespaces (or into a joined pid namespace): {e}{hint}"),
    )
}
