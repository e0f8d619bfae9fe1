# maibox's zygote (`warm_mode: fork`): an interpreter that imports a level's preloaded
# modules once, then forks one interpreter per warm sandbox into that sandbox's fresh
# namespaces. It follows runner.py in the script the server gives it on stdin, so the
# fork goes on as the runner (`_maibox_run`) once it is inside and confined.
#
# The zygote itself runs outside any sandbox, with the server's user and no
# capabilities, and never runs a request's code: each fork enters a sandbox that the
# server's engine built (namespaces, root, cgroup, init), and confines itself there
# with what the engine computed (the seccomp program, the Landlock ruleset, the ids,
# the rlimits). Nothing here decides a rule; it only applies them, in the order the
# engine's chain does (src/engine/chain.rs, src/engine/mod.rs: confine_payload).
#
# Each fork goes through two processes. The first (the "parent") joins the sandbox's
# pid namespace for its children only and forks the interpreter, which is then a
# process of the sandbox; the parent stays outside, waits for it and writes its exit
# status and usage on init's status pipe (an orphan would be given to the reaper of
# its parent's namespace, never to the sandbox's init: see src/engine/adopt.rs).
#
# Protocol on fd 3 (a SOCK_SEQPACKET socket, one JSON message per datagram):
#   server -> zygote: the spec; zygote -> server: {"ready": true} after the preloads;
#   server -> zygote: {"fds": [names], "rlimits": [...]} with those descriptors
#   attached, one per fork;
#   zygote -> server: {"ok": true} once the interpreter is forked, or {"error", "step"}.
# The interpreter reports on its fd 4: {"pid", "seccomp", "landlock"} with the seccomp
# listener attached, or {"error", "step"}.
import _signal
import _socket
import ctypes
import gc
import json
import resource

# The namespaces the interpreter joins itself (its parent joined the user namespace,
# and the pid namespace for its children).
_MAIBOX_NS = ("mnt", "net", "ipc", "uts", "cgroup")
# Descriptors the zygote keeps on 4..9 (/dev/null): what a fork request brings lands
# above them, and the interpreter can place its own on 3..6 without a first copy.
_MAIBOX_RESERVED = range(4, 10)


class _MaiboxStepError(Exception):
    """A failure in one of the engine's named steps (see src/error.rs: Step)."""

    def __init__(self, step, message):
        super().__init__(message)
        self.step = step


class _MaiboxFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


class _MaiboxCaps(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int), ("data", ctypes.c_uint32 * 6)]


class _MaiboxSys:
    """What every fork applies, made ready once in the zygote: the C functions bound
    with their argument types (prctl and syscall are variadic: every argument goes as
    a long), the kernel's numbers from the engine, the seccomp program and an empty
    capability set, so that a fork only makes the calls."""

    def __init__(self, spec):
        libc = ctypes.CDLL(None, use_errno=True)
        L = ctypes.c_long
        self.spec, self.c, self.rlimits = spec, spec["consts"], []
        self.setns = libc.setns
        self.setns.argtypes = (ctypes.c_int, ctypes.c_int)
        self.prctl = libc.prctl
        self.prctl.argtypes = (ctypes.c_int, L, L, L, L)
        self.syscall = ctypes.CFUNCTYPE(L, L, L, L, L, use_errno=True)(("syscall", libc))
        self.capset = libc.capset
        # The parent's fork (see _maibox_fork): libc's own, called with the GIL held as
        # os.fork holds it.
        self.fork = ctypes.PyDLL(None, use_errno=True).fork
        self.fork.argtypes, self.fork.restype = (), ctypes.c_int
        # struct __user_cap_header_struct, then two empty __user_cap_data_struct.
        self.no_caps = _MaiboxCaps(self.c["_LINUX_CAPABILITY_VERSION_3"], 0)
        self.capset.argtypes = (ctypes.c_void_p, ctypes.c_void_p)
        with open("/proc/sys/kernel/cap_last_cap") as f:
            self.caps = range(int(f.read()) + 1)
        s = spec["seccomp"]
        self.filter = None
        if s is not None:
            program = bytes.fromhex(s["program"])
            self.program = ctypes.create_string_buffer(program, len(program))
            self.filter = _MaiboxFprog(len(program) // 8, ctypes.addressof(self.program))

    def check(self, rc, step, what):
        if rc == -1:
            errno = ctypes.get_errno()
            raise _MaiboxStepError(step, f"{what}: {os.strerror(errno)} (errno {errno})")
        return rc

    def close_from(self, first):
        rc = self.syscall(self.c["SYS_close_range"], first, 0xFFFFFFFF, 0)
        self.check(rc, "close-fds", "close_range")


def _maibox_zygote():
    ctl = _socket.socket(fileno=3)
    z = _MaiboxSys(json.loads(ctl.recv(1 << 20)))
    # The script came on stdin: the forks get their own stdin, the zygote none.
    null = os.open("/dev/null", os.O_RDWR | os.O_CLOEXEC)
    for fd in (0, *_MAIBOX_RESERVED):
        if fd != null:
            os.dup2(null, fd, inheritable=fd == 0)
    if null not in _MAIBOX_RESERVED:
        os.close(null)
    # `-c` put the zygote's working directory first on the path: nothing of the
    # host's may shadow a preload (the fork puts /sandbox there, as a script would).
    del sys.path[0]
    sys.path_importer_cache.clear()
    try:
        _maibox_preload(sys.argv[1:])
    except BaseException as e:
        ctl.send(_maibox_error("zygote", f"a preloaded module failed to import: {e!r}"))
        os._exit(1)
    # What exists now is shared by every fork: kept out of the collector's reach, it
    # is never written by a collection, so the forks do not copy its pages.
    gc.freeze()
    # The parents exit when their interpreter has: nobody waits for them.
    _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)
    ctl.send(b'{"ready": true}')
    while True:
        msg, fds = _maibox_recv(ctl)
        if not msg:
            os._exit(0)
        req = json.loads(msg)
        z.rlimits = req["rlimits"]
        try:
            reply = _maibox_fork(ctl, z, dict(zip(req["fds"], fds)))
        finally:
            for fd in fds:
                os.close(fd)
        ctl.send(reply)


def _maibox_recv(sock):
    space = _socket.CMSG_SPACE(64 * 4)
    msg, anc, _, _ = sock.recvmsg(1 << 16, space)
    fds = []
    for level, kind, data in anc:
        if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
            n = len(data) // 4
            fds.extend(int.from_bytes(data[i * 4:i * 4 + 4], sys.byteorder) for i in range(n))
    return msg, fds


def _maibox_fork(ctl, z, fds):
    """Forks an interpreter into the sandbox whose descriptors `fds` names; the reply."""
    if len(os.listdir("/proc/self/task")) != 1:
        # A thread would be lost in the fork, with whatever lock it held.
        return _maibox_error("zygote", "a preloaded module started a thread")
    r, w = os.pipe()
    # The parent runs a few fixed calls and never goes back to the interpreter's life,
    # so it is made by libc's fork, without CPython's after-fork work (random's reseed,
    # threading's and logging's state, the runtime's locks), which writes pages the
    # zygote shares: each a copy-on-write fault (measured: 236 before the parent's
    # first line, against 57). Its child, the interpreter, is made by os.fork and gets
    # all of that work.
    pid = z.fork()
    if pid == -1:
        errno = ctypes.get_errno()
        os.close(r)
        os.close(w)
        return _maibox_error("zygote", f"fork: {os.strerror(errno)} (errno {errno})")
    if pid == 0:
        # Never returns: a child that did would be a second zygote.
        try:
            os.close(r)
            ctl.detach()  # the interpreter's fd 3 is the script's pipe
            _maibox_parent(z, fds, w)
        except BaseException as e:
            try:
                os.write(w, _maibox_error(getattr(e, "step", "zygote"), str(e)))
            except BaseException:
                pass
        finally:
            os._exit(125)
    os.close(w)
    # Both the parent and the interpreter close their copies at once: end-of-file.
    return _maibox_read(r) or _maibox_error("zygote", "the fork ended without a word")


def _maibox_error(step, message):
    return json.dumps({"error": message, "step": step}).encode()


def _maibox_parent(z, fds, w):
    """The zygote's child: joins the sandbox's user namespace and, for its children,
    its pid namespace; forks the interpreter, then waits for it from outside the
    sandbox's pid namespace and reports how it ended on init's status pipe."""
    # The user namespace first: the capabilities to join its pid namespace are there.
    for kind in ("user", "pid"):
        z.check(z.setns(fds["ns:" + kind], 0), "namespaces", f"setns {kind}")
    _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
    # No death signal: this process must outlive a zygote that is replaced while its
    # sandboxes wait in the pool. It ends with its interpreter, which ends with the
    # sandbox's init, which ends with the server (its PR_SET_PDEATHSIG).
    child = os.fork()
    if child == 0:
        os.close(w)
        _maibox_interpreter(z, fds)
        os._exit(125)
    # Only the status pipe and the zygote's stdio stay: the run's pipes must reach
    # end-of-file when the code is gone.
    os.dup2(fds["status"], 3)
    os.dup2(w, 4)
    z.close_from(5)
    os.write(4, b'{"ok": true}')
    os.close(4)
    _, status, usage = os.wait4(child, 0)
    # Formatted rather than json.dumps'd: the encoder's objects cost this process about
    # sixty copy-on-write faults (measured), the bytes below about twenty.
    line = b'{"code": %s, "signal": %s, "user_us": %d, "system_us": %d, "maxrss_kb": %d}' % (
        b"%d" % os.WEXITSTATUS(status) if os.WIFEXITED(status) else b"null",
        b"%d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else b"null",
        int(usage.ru_utime * 1e6),
        int(usage.ru_stime * 1e6),
        usage.ru_maxrss,
    )
    try:
        os.write(3, line)
    except OSError:
        pass  # init is gone: the sandbox was ended
    os._exit(0)


def _maibox_interpreter(z, fds):
    """In the sandbox's user and pid namespaces: joins the run's cgroup (while still
    outside its cgroup namespace), the other namespaces, confines itself, reports,
    and runs the script. Never returns."""
    try:
        for name, fd in fds.items():
            if name.startswith("cgroup:"):
                # Moving itself costs no RCU grace period (engine::chain::join_cgroup).
                try:
                    os.write(fd, b"0")
                except OSError as e:
                    raise _MaiboxStepError("cgroup", f"join the run's cgroup: {e}")
        for kind in _MAIBOX_NS:
            z.check(z.setns(fds["ns:" + kind], 0), "namespaces", f"setns {kind}")
        # The run's descriptors as 0..5 (3 the script, 4 the report and ready socket,
        # 5 the status pipe), the Landlock ruleset as 6, nothing else.
        for i in range(6):
            os.dup2(fds[f"fd:{i}"], i, inheritable=i != 5)
        landlock = "landlock" in fds
        if landlock:
            os.dup2(fds["landlock"], 6, inheritable=False)
        z.close_from(7 if landlock else 6)
    except BaseException as e:
        os.write(fds["fd:4"], _maibox_error(getattr(e, "step", "namespaces"), str(e)))
        os._exit(125)
    try:
        report, listener = _maibox_confine(z, landlock)
    except BaseException as e:
        os.write(4, _maibox_error(getattr(e, "step", "exec"), str(e)))
        os._exit(125)
    sock = _socket.socket(fileno=4)
    text = json.dumps(report).encode()
    if listener is None:
        sock.send(text)
    else:
        rights = listener.to_bytes(4, sys.byteorder)
        sock.sendmsg([text], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, rights)])
        os.close(listener)
    sock.detach()  # fd 4 stays open: its hang-up says this runner is gone
    _maibox_run()


def _maibox_confine(z, landlock):
    """The engine's last steps, in its order (the descriptors are placed): rlimits,
    identity without capabilities, session, no_new_privs, Landlock, seccomp (last).
    Then the fresh seeds and the script's directory."""
    c = z.c
    for r in z.rlimits:
        try:
            resource.setrlimit(r["resource"], (r["soft"], r["hard"]))
        except (OSError, ValueError) as e:
            raise _MaiboxStepError("rlimits", f"setrlimit {r}: {e}")
    _maibox_identity(z)
    try:
        os.setsid()
    except OSError as e:
        raise _MaiboxStepError("session", f"setsid: {e}")
    z.check(z.prctl(c["PR_SET_NO_NEW_PRIVS"], 1, 0, 0, 0), "no-new-privs", "prctl(PR_SET_NO_NEW_PRIVS)")
    # An executed payload is dumpable (execve sets it); the switch of ids cleared it.
    z.check(z.prctl(c["PR_SET_DUMPABLE"], 1, 0, 0, 0), "capabilities", "prctl(PR_SET_DUMPABLE)")
    if landlock:
        rc = z.syscall(c["SYS_landlock_restrict_self"], 6, 0, 0)
        z.check(rc, "landlock", "landlock_restrict_self")
        os.close(6)
    listener = None
    if z.filter is not None:
        s = z.spec["seccomp"]
        prog = ctypes.addressof(z.filter)
        rc = z.syscall(c["SYS_seccomp"], c["SECCOMP_SET_MODE_FILTER"], s["flags"], prog)
        rc = z.check(rc, "seccomp", "install the seccomp filter")
        listener = rc if s["listener"] else None
    _maibox_reseed()
    cwd = z.spec["cwd"]
    os.chdir(cwd)
    sys.path.insert(0, cwd)
    report = {"pid": os.getpid(), "seccomp": z.filter is not None, "landlock": landlock}
    return report, listener


def _maibox_identity(z):
    """The sandbox's user, no supplementary groups, no capabilities in any set (as
    engine::privs::drop_privileges)."""
    spec, c = z.spec, z.c
    if spec["setgroups"]:
        try:
            os.setgroups([])
        except OSError as e:
            raise _MaiboxStepError("identity", f"clear supplementary groups: {e}")
    # The bounding set can only be cleared while CAP_SETPCAP is still held.
    prctl, drop = z.prctl, c["PR_CAPBSET_DROP"]
    for cap in z.caps:
        z.check(prctl(drop, cap, 0, 0, 0), "capabilities", f"drop capability {cap} from the bounding set")
    clear = prctl(c["PR_CAP_AMBIENT"], c["PR_CAP_AMBIENT_CLEAR_ALL"], 0, 0, 0)
    z.check(clear, "capabilities", "clear the ambient set")
    uid, gid = spec["uid"], spec["gid"]
    try:
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)
    except OSError as e:
        raise _MaiboxStepError("identity", f"setresuid/setresgid({uid}, {gid}): {e}")
    # The switch clears them only where the old ids were the namespace's root's.
    caps = ctypes.addressof(z.no_caps)
    rc = z.capset(caps, caps + _MaiboxCaps.data.offset)
    z.check(rc, "capabilities", "clear every capability set")


def _maibox_reseed():
    """Fresh seeds for what the fork copied. `random` reseeds itself at os.fork (its
    at-fork hook); the rest has no such hook. The hash secret cannot change in a
    running interpreter: forks of one zygote share it (docs/server.md)."""
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile._name_sequence = None
    ssl = sys.modules.get("_ssl")
    if ssl is not None:
        ssl.RAND_add(os.urandom(32), 32.0)
    mp = sys.modules.get("multiprocessing.process")
    if mp is not None:
        mp._current_process._config["authkey"] = mp.AuthenticationString(os.urandom(32))
    nprandom = sys.modules.get("numpy.random")
    if nprandom is not None:
        nprandom.seed()


_maibox_zygote()
