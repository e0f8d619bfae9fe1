//! The zygote of `warm_mode: fork`: one Python interpreter per refill thread that
//! imports a level's preloaded modules once and then forks an interpreter into each
//! warm sandbox the thread prepares (`zygote.py`, after `runner.py`).
//!
//! Why: starting an interpreter and importing the preloads takes 20 to 30 ms of CPU
//! per sandbox here, the largest part of a served run's cost; a fork of one that did
//! it takes about 2 ms. What it costs: the forks of one zygote share its hash secret
//! (which a running interpreter cannot change) and its memory layout, so a zygote
//! forks at most `server.zygote_forks` interpreters and is then replaced by a fresh
//! one; every other seed is renewed in the fork (docs/server.md, "Warm modes").
//!
//! The zygote runs outside any sandbox, as the server's user with no capabilities
//! (a root server's zygote keeps uid 0, which owns the sandboxes' user namespaces,
//! but no capability on the host), and never runs a request's code. Each fork joins
//! a sandbox that the engine built (`engine::adopt` hands over its namespaces, pipes
//! and Landlock ruleset) and confines itself with what this module computes from the
//! policy: the ids, the rlimits and the compiled seccomp program.

use crate::engine::sync;
use crate::error::{SetupError, Step, StepContext};
use crate::policy::{IdMapping, Layer, Policy};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::socket::MsgFlags;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The zygote's script: the runner, then the zygote's own part.
const SCRIPT: [&str; 2] = [include_str!("runner.py"), include_str!("zygote.py")];
/// Reads the script from stdin: the command line stays short and holds nothing but
/// the preloads' names (the forks' /proc/self/cmdline is the zygote's).
const BOOT: &str = "import os;_MAIBOX_ZYGOTE=1;exec(b''.join(iter(lambda:os.read(0,65536),b'')))";
/// How long the zygote may take to import its preloads.
const READY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a fork may take to join a sandbox.
const FORK_TIMEOUT: Duration = Duration::from_secs(10);

/// A running zygote and how many interpreters it has forked.
pub struct Zygote {
    child: Child,
    ctl: OwnedFd,
    forks: usize,
    limit: usize,
    /// Whether it said it imported its preloads ([`Zygote::start`] does not wait).
    ready: bool,
}

/// What every fork of a zygote applies to itself (zygote.py reads it).
#[derive(Serialize)]
struct Spec {
    uid: u32,
    gid: u32,
    /// Whether the fork may (and must) clear its supplementary groups: a root server
    /// maps a range and allows setgroups; a rootless one denies it.
    setgroups: bool,
    seccomp: Option<SeccompSpec>,
    cwd: &'static str,
    /// The kernel's numbers the fork needs, from libc: nothing in Python spells one.
    consts: BTreeMap<&'static str, i64>,
}

#[derive(Serialize)]
struct SeccompSpec {
    /// The engine's compiled filter, as the kernel's `sock_filter` array, in hex.
    program: String,
    flags: u64,
    listener: bool,
}

/// The zygote's answer to a fork, and a fork's report from inside its sandbox.
#[derive(Deserialize)]
struct Reply {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    step: Option<String>,
}

/// What a fork reports once it is confined in its sandbox.
#[derive(Debug, Deserialize)]
pub(crate) struct Report {
    /// Its pid in the sandbox's pid namespace.
    #[serde(default)]
    pub pid: i32,
    #[serde(default)]
    pub seccomp: bool,
    #[serde(default)]
    pub landlock: bool,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    step: Option<String>,
}

/// Why a policy cannot have forked interpreters, if it cannot.
pub fn unsupported(p: &Policy) -> Option<String> {
    if p.fs.rootfs.is_some() {
        return Some("the level runs on a root image (`rootfs`), whose interpreter is not the host's that a zygote runs".into());
    }
    for layer in [Layer::Capabilities, Layer::NoNewPrivs] {
        if !p.has(layer) {
            return Some(format!("the {layer:?} layer is off"));
        }
    }
    None
}

impl Zygote {
    /// Starts a zygote for `policy`'s level that imports `preload`, and waits until
    /// it has; it forks at most `limit` interpreters.
    pub fn spawn(policy: &Policy, preload: &[String], limit: usize) -> Result<Zygote, SetupError> {
        let mut z = Zygote::start(policy, preload, limit)?;
        z.wait_ready()?;
        Ok(z)
    }

    /// Starts a zygote as [`Zygote::spawn`] does, but returns while it imports its
    /// preloads: its first fork waits for them (and fails with their error). A pool
    /// starts the next zygote this way before the current one is spent, so that its
    /// tens of milliseconds of start never stall the refill.
    pub fn start(policy: &Policy, preload: &[String], limit: usize) -> Result<Zygote, SetupError> {
        if let Some(why) = unsupported(policy) {
            return Err(SetupError::new(
                Step::Zygote,
                format!("warm_mode fork: {why}"),
            ));
        }
        let spec = spec(policy)?;
        let (ctl, theirs) = sync::seqpacket_pair().step(Step::Zygote, "socketpair")?;
        let child = start(policy, preload, &theirs)?;
        drop(theirs);
        let mut z = Zygote {
            child,
            ctl,
            forks: 0,
            limit,
            ready: false,
        };
        z.feed()?;
        let text = serde_json::to_vec(&spec).step(Step::Zygote, "encode the zygote's spec")?;
        nix::sys::socket::send(z.ctl.as_raw_fd(), &text, MsgFlags::empty())
            .step(Step::Zygote, "send the zygote its spec")?;
        Ok(z)
    }

    /// Waits (once) until the zygote has imported its preloads.
    fn wait_ready(&mut self) -> Result<(), SetupError> {
        if !self.ready {
            self.answer(READY_TIMEOUT, "import the preloads")?;
            self.ready = true;
        }
        Ok(())
    }

    /// Writes the script to the zygote's stdin and closes it.
    fn feed(&mut self) -> Result<(), SetupError> {
        let mut stdin = self
            .child
            .stdin
            .take()
            .ok_or_else(|| SetupError::new(Step::Zygote, "the zygote has no stdin"))?;
        SCRIPT
            .iter()
            .try_for_each(|part| stdin.write_all(part.as_bytes()))
            .step(Step::Zygote, "write the zygote's script")
    }

    /// Whether it has forked as many interpreters as it may.
    pub fn spent(&self) -> bool {
        self.forks >= self.limit
    }

    /// How many interpreters it has forked.
    pub fn forks(&self) -> usize {
        self.forks
    }

    /// How many more interpreters it may fork.
    pub fn left(&self) -> usize {
        self.limit.saturating_sub(self.forks)
    }

    /// Forks an interpreter into the sandbox whose descriptors `fds` names (see
    /// `engine::adopt`), with `rlimits`; returns once the fork is in the sandbox's
    /// namespaces and cgroup. The fork reports its confinement on the sandbox's
    /// ready socket ([`read_report`]).
    pub fn fork_into(
        &mut self,
        fds: &[(String, BorrowedFd)],
        rlimits: &[crate::engine::rlimit::Setting],
    ) -> Result<(), SetupError> {
        if self.spent() {
            return Err(SetupError::new(
                Step::Zygote,
                format!(
                    "this zygote has forked its {} interpreters: start a fresh one",
                    self.limit
                ),
            ));
        }
        self.wait_ready()?;
        self.forks += 1;
        let names: Vec<&str> = fds.iter().map(|(n, _)| n.as_str()).collect();
        let msg = serde_json::json!({ "fds": names, "rlimits": rlimits });
        let text = serde_json::to_vec(&msg).step(Step::Zygote, "encode a fork request")?;
        let attached: Vec<BorrowedFd> = fds.iter().map(|(_, fd)| *fd).collect();
        sync::send_fds(self.ctl.as_fd(), &text, &attached)
            .step(Step::Zygote, "send a fork request")?;
        self.answer(FORK_TIMEOUT, "fork an interpreter into the sandbox")
    }

    /// Waits for the zygote's answer to the last request.
    fn answer(&mut self, timeout: Duration, what: &str) -> Result<(), SetupError> {
        let buf = recv_within(self.ctl.as_fd(), timeout, what)?;
        if buf.is_empty() {
            let status = self.child.try_wait().ok().flatten();
            return Err(SetupError::new(
                Step::Zygote,
                format!("{what}: the zygote ended ({status:?}; its stderr is the server's)"),
            ));
        }
        let reply: Reply =
            serde_json::from_slice(&buf).step(Step::Zygote, format!("{what}: a garbled answer"))?;
        match reply.error {
            None => Ok(()),
            Some(e) => Err(step_error(reply.step.as_deref(), format!("{what}: {e}"))),
        }
    }
}

impl Drop for Zygote {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A fork's report from its sandbox's ready socket, with the seccomp filter's
/// listener when the filter notifies.
pub(crate) fn read_report(ready: BorrowedFd) -> Result<(Report, Option<OwnedFd>), SetupError> {
    wait_readable(ready, FORK_TIMEOUT, "the forked interpreter's report")?;
    let (buf, fds) = sync::recv_message::<1>(ready)
        .step(Step::Zygote, "read the forked interpreter's report")?;
    let listener = fds.into_iter().next();
    if buf.is_empty() {
        return Err(SetupError::new(
            Step::Zygote,
            "the forked interpreter ended before it was confined",
        ));
    }
    let report: Report = serde_json::from_slice(&buf)
        .step(Step::Zygote, "the forked interpreter's report is garbled")?;
    if let Some(e) = &report.error {
        return Err(step_error(
            report.step.as_deref(),
            format!("the forked interpreter: {e}"),
        ));
    }
    Ok((report, listener))
}

/// A step named by the zygote (src/error.rs's names), else `zygote`.
fn step_error(step: Option<&str>, message: String) -> SetupError {
    let step = step
        .and_then(|s| serde_json::from_value(serde_json::Value::String(s.into())).ok())
        .unwrap_or(Step::Zygote);
    SetupError::new(step, message)
}

fn wait_readable(fd: BorrowedFd, timeout: Duration, what: &str) -> Result<(), SetupError> {
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    let ms = PollTimeout::try_from(timeout.as_millis() as i32).unwrap_or(PollTimeout::MAX);
    match poll(&mut fds, ms).step(Step::Zygote, format!("wait for {what}"))? {
        0 => Err(SetupError::new(
            Step::Zygote,
            format!("no answer after {}s: {what}", timeout.as_secs()),
        )),
        _ => Ok(()),
    }
}

/// The next message on `fd`, in a buffer of its size, once one arrives.
fn recv_within(fd: BorrowedFd, timeout: Duration, what: &str) -> Result<Vec<u8>, SetupError> {
    wait_readable(fd, timeout, what)?;
    // The zygote's answers carry no descriptors.
    let (buf, _) = sync::recv_message::<1>(fd).map_err(|e| {
        SetupError::new(
            Step::Zygote,
            format!("read the zygote's answer: {what}: {e}"),
        )
    })?;
    Ok(buf)
}

fn spec(p: &Policy) -> Result<Spec, SetupError> {
    let seccomp = crate::engine::seccomp_filter(p)?.map(|prog| {
        let listener = crate::confine::notify::needs_listener(&prog);
        let mut program = String::with_capacity(prog.len() * 16);
        for i in &prog {
            // The kernel's struct sock_filter, in this machine's byte order.
            for b in i
                .code
                .to_ne_bytes()
                .iter()
                .chain(&[i.jt, i.jf])
                .chain(&i.k.to_ne_bytes())
            {
                program.push_str(&format!("{b:02x}"));
            }
        }
        let flags = if listener {
            libc::SECCOMP_FILTER_FLAG_NEW_LISTENER
        } else {
            0
        };
        SeccompSpec {
            program,
            flags,
            listener,
        }
    });
    Ok(Spec {
        uid: p.identity.uid,
        gid: p.identity.gid,
        setgroups: matches!(p.identity.mapping, IdMapping::Range { .. }),
        seccomp,
        cwd: crate::engine::rootfs::SCRIPT_DIR,
        consts: consts(),
    })
}

fn consts() -> BTreeMap<&'static str, i64> {
    BTreeMap::from([
        (
            "SYS_landlock_restrict_self",
            libc::SYS_landlock_restrict_self,
        ),
        ("SYS_seccomp", libc::SYS_seccomp),
        ("SYS_close_range", libc::SYS_close_range),
        ("PR_CAPBSET_DROP", libc::PR_CAPBSET_DROP as i64),
        ("PR_CAP_AMBIENT", libc::PR_CAP_AMBIENT as i64),
        (
            "PR_CAP_AMBIENT_CLEAR_ALL",
            libc::PR_CAP_AMBIENT_CLEAR_ALL as i64,
        ),
        ("PR_SET_NO_NEW_PRIVS", libc::PR_SET_NO_NEW_PRIVS as i64),
        ("PR_SET_DUMPABLE", libc::PR_SET_DUMPABLE as i64),
        (
            "SECCOMP_SET_MODE_FILTER",
            libc::SECCOMP_SET_MODE_FILTER as i64,
        ),
        ("_LINUX_CAPABILITY_VERSION_3", 0x2008_0522),
    ])
}

/// Starts the interpreter: the script on stdin, the control socket as fd 3, the
/// level's environment, `/` as its directory, no capabilities, and death with the
/// thread that starts it (a refill thread lives as long as the server).
fn start(policy: &Policy, preload: &[String], theirs: &OwnedFd) -> Result<Child, SetupError> {
    let fd = theirs.as_raw_fd();
    let cap_last = cap_last();
    let root = nix::unistd::geteuid().is_root();
    let ppid = std::process::id() as i32;
    let mut cmd = Command::new(&policy.interpreter.path);
    cmd.args(["-s", "-c", BOOT])
        .args(preload)
        .env_clear()
        .envs(crate::engine::environment(policy))
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    // SAFETY: only async-signal-safe calls (sigaction, sigprocmask, dup2, fcntl,
    // setsid, prctl, capset, getppid) between fork and exec.
    unsafe {
        cmd.pre_exec(move || prepare_child(fd, root, cap_last, ppid));
    }
    cmd.spawn().step(
        Step::Zygote,
        format!("start the zygote ({})", policy.interpreter.path.display()),
    )
}

/// In the forked child, before exec (see [`start`]).
fn prepare_child(fd: i32, root: bool, cap_last: u32, ppid: i32) -> std::io::Result<()> {
    let check = |rc: libc::c_int| {
        if rc == -1 {
            Err(std::io::Error::last_os_error())
        } else {
            Ok(())
        }
    };
    // As an executed payload gets them (`engine::init`): the server blocks the
    // signals it waits for, and its own caller may have left some ignored.
    crate::engine::init::reset_signals().map_err(std::io::Error::from)?;
    // SAFETY: plain syscalls on integers and a stack struct.
    unsafe {
        if fd == 3 {
            check(libc::fcntl(3, libc::F_SETFD, 0))?;
        } else {
            check(libc::dup2(fd, 3))?;
        }
        // Its own session: a terminal's ^C goes to the server, which drains.
        check(libc::setsid())?;
        check(libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        if libc::getppid() != ppid {
            return Err(std::io::Error::other("the server ended"));
        }
        if root {
            // uid 0 execs with every capability in its bounding set: none is left.
            for cap in 0..=cap_last {
                check(libc::prctl(
                    libc::PR_CAPBSET_DROP,
                    cap as libc::c_ulong,
                    0,
                    0,
                    0,
                ))?;
            }
        }
        check(libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ))?;
        let header = CapHeader {
            version: 0x2008_0522,
            pid: 0,
        };
        let data = [CapData::default(); 2];
        check(libc::syscall(libc::SYS_capset, &header, data.as_ptr()) as libc::c_int)?;
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// The highest capability number of this kernel.
fn cap_last() -> u32 {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(40)
}
