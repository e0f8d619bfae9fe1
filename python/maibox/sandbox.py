"""`maibox.Sandbox`: run Python code in a fresh maibox sandbox, one run at a time or
many at once from threads. Each run goes to a `maibox serve` server (warm, single-use
sandboxes) when one answers, and otherwise to the `maibox` binary (`maibox exec`),
with identical results either way."""

from __future__ import annotations

import codecs
import json
import os
import shutil
import socket
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _wire
from .errors import MaiboxError, ProtocolError, Unavailable, from_failure

TextCallback = Callable[[str], None]
SampleCallback = Callable[[Dict[str, Any]], None]
Size = Union[int, str]

TRUST_LEVELS = ("untrusted", "unknown", "trusted")


@dataclass
class Result:
    """How a run ended and what it printed, with the security metadata of its report."""

    exit_code: int
    stdout: str
    stderr: str
    #: Wall-clock time of the code, in seconds.
    duration_s: float
    #: CPU time, peak memory, processes (the report's `usage`).
    usage: Dict[str, Any]
    #: Limits the run crossed (`{"kind": "timeout", ...}`, `memory`, `output`, ...).
    violations: List[Dict[str, Any]]
    #: The static assessment: verdict, findings (rule ids), time.
    assessment: Dict[str, Any]
    run_id: str
    #: The whole report, as `maibox exec --json` prints it.
    report: Dict[str, Any]
    #: What maibox noted (an override used, a limit adjusted), as "level: message".
    notices: List[str] = field(default_factory=list)
    #: Whether a server ran it (False: the `maibox` binary did).
    served: bool = False
    #: The server's part (warm or cold, queue and pool waits, its own time), if served.
    server: Optional[Dict[str, Any]] = None

    def success(self) -> bool:
        """Exit code 0 and no limit crossed."""
        return self.exit_code == 0 and not self.violations

    @property
    def timed_out(self) -> bool:
        return any(v.get("kind") == "timeout" for v in self.violations)

    @classmethod
    def from_report(cls, report: Dict[str, Any], stdout: str, stderr: str,
                    notices: List[str], served: bool) -> "Result":
        return cls(
            exit_code=int(report.get("exit_code", 125)),
            stdout=stdout,
            stderr=stderr,
            duration_s=float(report.get("usage", {}).get("wall_time_s", 0.0)),
            usage=report.get("usage", {}),
            violations=report.get("violations", []),
            assessment=report.get("assessment") or {},
            run_id=report.get("run_id", ""),
            report=report,
            notices=notices,
            served=served,
        )


@dataclass
class Options:
    """What a run asks for, besides its code."""

    trust: str = "untrusted"
    timeout: Optional[float] = None
    memory: Optional[Size] = None
    cpus: Optional[float] = None
    pids: Optional[int] = None
    network: Optional[str] = None
    output_limit: Optional[Size] = None
    allow_raise: bool = False
    override_reason: Optional[str] = None

    def check(self) -> None:
        if self.trust not in TRUST_LEVELS:
            raise ValueError(f"trust {self.trust!r}: use one of {', '.join(TRUST_LEVELS)}")
        if self.network not in (None, "none", "allowlist"):
            raise ValueError(f"network {self.network!r}: use 'none' or 'allowlist'")

    def request(self) -> Dict[str, Any]:
        """The protocol's request fields."""
        req: Dict[str, Any] = {"trust": self.trust, "allow_raise": self.allow_raise}
        for key, value in (("timeout_s", self.timeout), ("memory", self.memory),
                           ("cpus", self.cpus), ("pids", self.pids),
                           ("network", self.network), ("output_limit", self.output_limit),
                           ("override_reason", self.override_reason)):
            if value is not None:
                req[key] = value
        return req

    def flags(self) -> List[str]:
        """The same, as `maibox exec` flags."""
        out = ["--trust", self.trust]
        for flag, value in (("--timeout", _secs(self.timeout)), ("--memory", self.memory),
                            ("--cpus", self.cpus), ("--pids", self.pids),
                            ("--network", self.network), ("--output-limit", self.output_limit),
                            ("--override", self.override_reason)):
            if value is not None:
                out += [flag, str(value)]
        if self.allow_raise:
            out.append("--allow-raise")
        return out


def _secs(t: Optional[float]) -> Optional[str]:
    return None if t is None else f"{t}s"


def default_socket() -> Optional[str]:
    """$MAIBOX_SOCKET, else maibox serve's default for this user."""
    if os.environ.get("MAIBOX_SOCKET"):
        return os.environ["MAIBOX_SOCKET"]
    if os.geteuid() == 0:
        return "/run/maibox/maibox.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return os.path.join(runtime, "maibox.sock") if runtime else None


class _Decoder:
    """Output bytes to text for callbacks, whole characters only."""

    def __init__(self, callback: Optional[TextCallback]) -> None:
        self.callback = callback
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.data = bytearray()

    def feed(self, data: bytes) -> None:
        self.data += data
        if self.callback:
            text = self.decoder.decode(data)
            if text:
                self.callback(text)

    def text(self) -> str:
        if self.callback:
            rest = self.decoder.decode(b"", final=True)
            if rest:
                self.callback(rest)
        return bytes(self.data).decode("utf-8", errors="replace")


def _notice(n: Dict[str, Any]) -> str:
    return f"{n.get('level', 'note')}: {n.get('message', '')}"


class Sandbox:
    """A maibox sandbox configuration: each `run` gets a fresh sandbox, used once.

    >>> with maibox.Sandbox(trust="untrusted", timeout=5) as sb:
    ...     print(sb.run("print(6 * 7)").stdout)
    42
    """

    def __init__(self, trust: str = "untrusted", socket: Optional[str] = None,
                 timeout: Optional[float] = None, memory: Optional[Size] = None,
                 cpus: Optional[float] = None, network: Optional[str] = None,
                 pids: Optional[int] = None, output_limit: Optional[Size] = None,
                 allow_raise: bool = False, override_reason: Optional[str] = None,
                 mode: str = "auto", binary: Optional[str] = None,
                 config: Optional[str] = None) -> None:
        """`socket`: the server's (default: $MAIBOX_SOCKET or the server's default).
        `mode`: "auto" (the server, else the binary), "server" or "cli". `binary`: the
        `maibox` binary for the fallback (default: $MAIBOX_BIN, then PATH). `config`:
        a configuration file for the fallback (a server has its own)."""
        if mode not in ("auto", "server", "cli"):
            raise ValueError(f"mode {mode!r}: use 'auto', 'server' or 'cli'")
        self.options = Options(trust, timeout, memory, cpus, pids, network, output_limit,
                               allow_raise, override_reason)
        self.options.check()
        self.socket = socket or default_socket()
        self.mode = mode
        self.binary = binary or os.environ.get("MAIBOX_BIN") or shutil.which("maibox")
        self.config = config

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Nothing to release: every run's sandbox is destroyed when the run ends."""

    def _options(self, **overrides: Any) -> Options:
        opts = Options(**{**self.options.__dict__,
                          **{k: v for k, v in overrides.items() if v is not None}})
        opts.check()
        return opts

    def run(self, code: str, args: Sequence[str] = (), stdin: Union[str, bytes, None] = None,
            *, timeout: Optional[float] = None, override_reason: Optional[str] = None,
            on_stdout: Optional[TextCallback] = None, on_stderr: Optional[TextCallback] = None,
            on_sample: Optional[SampleCallback] = None) -> Result:
        """Runs `code` with `args` as sys.argv[1:] and `stdin` as its input. The
        callbacks get output and usage samples as they come."""
        opts = self._options(timeout=timeout, override_reason=override_reason)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        out, err = _Decoder(on_stdout), _Decoder(on_stderr)
        sock = self._connect()
        if sock is not None:
            return _run_served(sock, code, list(args), data, opts, out, err, on_sample)
        return self._run_cli(code, list(args), data, opts, out, err, on_sample)

    def _connect(self) -> Optional[socket.socket]:
        if self.mode == "cli":
            return None
        try:
            if not self.socket:
                raise FileNotFoundError("no socket: set MAIBOX_SOCKET or pass socket=")
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(self.socket)
            return s
        except OSError as e:
            if self.mode == "server":
                raise Unavailable(f"no maibox server answers on {self.socket}: {e}") from e
            return None

    def command(self, code: str, args: List[str], opts: Options, report_fd: int,
                samples: bool = False) -> List[str]:
        """The `maibox exec` command line of the fallback."""
        if not self.binary:
            raise Unavailable(
                f"no maibox server answers on {self.socket} and no maibox binary was found "
                "(start `maibox serve`, put maibox on PATH, or set MAIBOX_BIN)")
        cmd = [self.binary, "exec", "--report-fd", str(report_fd)]
        if samples:
            # Sampled into the report, to the callback at the end.
            cmd += ["--stats", "/dev/null"]
        if self.config:
            cmd += ["--config", self.config]
        return cmd + opts.flags() + ["-c", code, "--", *args]

    def _run_cli(self, code: str, args: List[str], stdin: Optional[bytes], opts: Options,
                 out: _Decoder, err: _Decoder, on_sample: Optional[SampleCallback]) -> Result:
        r, w = os.pipe()
        cmd = self.command(code, args, opts, w, samples=on_sample is not None)
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    pass_fds=(w,))
        except OSError as e:
            os.close(r)
            raise Unavailable(f"cannot run {self.binary}: {e}") from e
        finally:
            os.close(w)
        threads = [threading.Thread(target=_pump, args=(proc.stdout, out)),
                   threading.Thread(target=_pump, args=(proc.stderr, err))]
        for t in threads:
            t.start()
        if stdin:
            _feed(proc, stdin)
        with os.fdopen(r, "rb") as f:
            line = f.read()
        for t in threads:
            t.join()
        proc.wait()
        return _cli_result(line, out, err, on_sample)


def _pump(pipe, decoder: _Decoder) -> None:
    for chunk in iter(lambda: pipe.read1(65536), b""):
        decoder.feed(chunk)
    pipe.close()


def _feed(proc: subprocess.Popen, data: bytes) -> None:
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except BrokenPipeError:
        pass


def _cli_result(line: bytes, out: _Decoder, err: _Decoder,
                on_sample: Optional[SampleCallback]) -> Result:
    try:
        report = json.loads(line)
    except ValueError as e:
        raise ProtocolError(f"maibox exec gave no report: {line[:200]!r}") from e
    if "error" in report:
        raise from_failure(report["error"])
    if on_sample:
        for s in report.get("samples", []):
            on_sample(s)
    notices = [_notice(n) for n in report.pop("notices", [])]
    report.pop("samples", None)
    report.pop("stdout_ended_with_newline", None)
    return Result.from_report(report, out.text(), err.text(), notices, served=False)


def _run_served(sock: socket.socket, code: str, args: List[str], stdin: Optional[bytes],
                opts: Options, out: _Decoder, err: _Decoder,
                on_sample: Optional[SampleCallback]) -> Result:
    reply = _Reply(out, err, on_sample)
    with sock:
        sock.sendall(_request_message(code, args, stdin, opts, on_sample is not None))
        while True:
            try:
                got = _wire.read_frame(sock)
            except (OSError, ValueError) as e:
                raise ProtocolError(f"reading from the server: {e}") from e
            result = reply.take(got)
            if result is not None:
                return result


def _request_message(code: str, args: List[str], stdin: Optional[bytes], opts: Options,
                     samples: bool) -> bytes:
    """The request frame of one run, followed by its standard input when it has one."""
    req = {"v": _wire.VERSION, "code": code, "origin": "-c", "args": args, "stream": True,
           "samples": samples, **opts.request()}
    if stdin:
        req["stdin"] = "stream"
    msg = _wire.request_frame(req)
    if stdin:
        msg += _wire.frame(_wire.STDIN, stdin) + _wire.frame(_wire.STDIN_END, b"")
    return msg


class _Reply:
    """The frames of one served run, taken one by one until the report ends it.

    Shared by the blocking and the asyncio clients: only how a frame is read differs."""

    def __init__(self, out: _Decoder, err: _Decoder, on_sample: Optional[SampleCallback]):
        self.out, self.err, self.on_sample = out, err, on_sample
        self.notices: List[str] = []

    def take(self, got) -> Optional[Result]:
        """Passes output and events on; returns the Result once the report arrives."""
        if got is None:
            raise ProtocolError("the server closed the connection without a report")
        report = _handle(got, self.out, self.err, self.notices, self.on_sample)
        if report is None:
            return None
        server = report.pop("server", None)
        result = Result.from_report(report, self.out.text(), self.err.text(), self.notices,
                                    served=True)
        result.server = server
        return result


def _handle(got, out: _Decoder, err: _Decoder, notices: List[str],
            on_sample: Optional[SampleCallback]) -> Optional[Dict[str, Any]]:
    """One frame: output and events are passed on; the report is returned."""
    kind, payload = got
    if kind == _wire.STDOUT:
        out.feed(payload)
    elif kind == _wire.STDERR:
        err.feed(payload)
    elif kind == _wire.NOTICE:
        notices.append(_notice(json.loads(payload)))
    elif kind == _wire.SAMPLE:
        if on_sample:
            on_sample(json.loads(payload))
    elif kind == _wire.REPORT:
        report = json.loads(payload)
        report.pop("stdout_ended_with_newline", None)
        return report
    elif kind == _wire.ERROR:
        raise from_failure(json.loads(payload))
    else:
        raise ProtocolError(f"unknown frame {kind!r}")
    return None


__all__ = ["Sandbox", "Result", "Options", "MaiboxError"]
