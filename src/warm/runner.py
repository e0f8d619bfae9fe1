# maibox's warm runner: the /sandbox/main.py of a sandbox prepared before its code is
# known. It imports the level's preloaded modules (its arguments), says it is ready
# (fd 4), waits for its one script on fd 3, and runs it as `python3 -s /sandbox/main.py
# ARGS` would: a fresh __main__, sys.argv and sys.path[0] as for the script, tracebacks
# that show the script's lines and none of this runner's. It runs once: the sandbox is
# destroyed after. Nothing here is secret; it is only kept short.
#
# With `warm_mode: fork` the same functions run in a fork of a zygote (zygote.py, which
# follows this text in the zygote's script and sets _MAIBOX_ZYGOTE): the fork enters
# the sandbox, and from `_maibox_run` on it is this runner.
import sys, os, time


class _MaiboxSource:
    """Hands linecache the script's source when something first imports it.

    Tracebacks, warnings and inspect read the script's lines through linecache, which
    would otherwise read this runner (the file at the script's path). Importing
    linecache up front cost 1.5 ms of CPU per sandbox with the default preloads and 7 ms
    without (tokenize compiles its regular expressions), and most runs never show a
    line. The finder removes itself at its one use."""

    def __init__(self, entry):
        self.entry = entry

    def find_spec(self, name, path=None, target=None):
        if name != "linecache":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        load, entry = spec.loader.exec_module, self.entry

        def exec_module(module):
            load(module)
            module.cache[entry[3]] = entry

        spec.loader.exec_module = exec_module
        return spec


def _maibox_read(fd):
    chunks = []
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        chunks.append(b)
    os.close(fd)
    return b"".join(chunks)


def _maibox_main():
    # fd 5 says when the code has ended; programs the code runs never inherit it.
    try:
        os.set_inheritable(5, False)
    except OSError:
        pass
    _maibox_preload(sys.argv[1:])
    # Held open while waiting: its hang-up tells the server this runner is gone.
    os.write(4, b"R")
    _maibox_run()


def _maibox_preload(names):
    for name in names:
        __import__(name)
    # The first compile() of a process builds the interpreter's AST types (about 1.5
    # ms, measured): done here, before the code is known, not after.
    compile("pass", "<maibox-warm>", "exec")


def _maibox_run():
    """Waits for the script on fd 3 and runs it; never returns."""
    global _MAIBOX_PID
    blob = _maibox_read(3)
    os.close(4)
    # Only this process says the code has ended: a child the code forks returns
    # from the script too, and ends as its interpreter would (see _maibox_exit).
    _MAIBOX_PID = os.getpid()
    # argc NUL arg NUL ... NUL code: arguments never hold a NUL (they are argv).
    argc, _, rest = blob.partition(b"\0")
    fields = rest.split(b"\0", int(argc))
    args, code = [a.decode("utf-8", "surrogateescape") for a in fields[:-1]], fields[-1]
    path = "/sandbox/main.py"
    main = type(sys)("__main__")
    main.__file__, main.__cached__, main.__builtins__ = path, None, __builtins__
    sys.modules["__main__"] = main
    sys.argv[:] = [path, *args]
    sys.orig_argv[2:] = [path, *args]
    sys.path[0] = "/sandbox"
    source = code.decode("utf-8")
    entry = (len(source), None, source.splitlines(True), path)
    if "linecache" in sys.modules:
        sys.modules["linecache"].cache[path] = entry
    else:
        sys.meta_path.insert(0, _MaiboxSource(entry))
    try:
        exec(compile(source, path, "exec"), main.__dict__)
    except SystemExit as e:
        _maibox_exit(_maibox_status(e))
    except BaseException as e:
        # The first frame is this runner's own.
        tb = e.__traceback__.tb_next
        if isinstance(e, SyntaxError) and e.filename == path and e.lineno:
            # The parser read the line from the file on disk, which is this runner.
            e.text = (source.splitlines(True)[e.lineno - 1:e.lineno] or [None])[0]
        if sys.excepthook is sys.__excepthook__:
            import traceback
            traceback.print_exception(type(e), e, tb)
        else:
            sys.excepthook(type(e), e, tb)
        if isinstance(e, KeyboardInterrupt):
            import signal
            _maibox_flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        _maibox_exit(1)
    _maibox_exit(0)


def _maibox_status(e):
    """The exit status the interpreter gives for an uncaught SystemExit."""
    code = e.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        print(code, file=sys.stderr)
    except Exception:
        pass
    return 1


def _maibox_flush():
    for f in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            f.flush()
        except Exception:
            pass


def _maibox_exit(status):
    # What the interpreter's own exit does that can be seen from outside the sandbox:
    # the non-daemon threads joined, the atexit callbacks run, the standard streams
    # flushed. The rest of its finalisation (tearing down every module and object) has
    # no effect outside a sandbox that is destroyed next, and costs milliseconds.
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    import atexit
    atexit._run_exitfuncs()
    _maibox_flush()
    if os.getpid() != _MAIBOX_PID:
        os._exit(status)
    # Then the status on fd 5, the output closed first so that it ends now: the server
    # reads the usage and kills the sandbox, and this interpreter's exit (a millisecond
    # or more of the kernel freeing its memory) happens off the request's path. Where
    # the server does not listen (no cgroup), the write fails and the exit is as before.
    try:
        os.close(1)
        os.close(2)
        os.write(5, bytes([status & 0xFF]))
        time.sleep(30)
    except OSError:
        pass
    os._exit(status)


if "_MAIBOX_ZYGOTE" not in globals():
    _maibox_main()
