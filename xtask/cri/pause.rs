//! The CRI lane's pause program, the init of every pod sandbox (containerd's
//! `sandbox_image`): it holds the pod's namespaces for the containers that join them,
//! lets the kernel reap what is reparented to it (shared pid namespaces), and exits on
//! SIGINT or SIGTERM, as Kubernetes' pause does. Built with `rustc` as a static binary by
//! containerd-cri.sh, so that the pause image is made on the machine from no registry.

use std::os::raw::c_int;

extern "C" {
    fn signal(signum: c_int, handler: usize) -> usize;
    fn pause() -> c_int;
    fn _exit(status: c_int) -> !;
}

const SIGINT: c_int = 2;
const SIGTERM: c_int = 15;
const SIGCHLD: c_int = 17;
const SIG_IGN: usize = 1;

extern "C" fn stop(_: c_int) {
    // SAFETY: _exit is async-signal-safe.
    unsafe { _exit(0) }
}

fn main() {
    // SAFETY: plain libc calls; the handler only calls _exit.
    unsafe {
        signal(SIGINT, stop as extern "C" fn(c_int) as usize);
        signal(SIGTERM, stop as extern "C" fn(c_int) as usize);
        // An ignored SIGCHLD makes the kernel reap the children itself: no zombies
        // pile up under a shared pid namespace's init.
        signal(SIGCHLD, SIG_IGN);
        loop {
            pause();
        }
    }
}
