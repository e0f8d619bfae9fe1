"""The maibox package against a real server and against the binary: every shape gives
the same results both ways, callbacks stream, refusals and limits come back as the
API says, and many runs at once stay correct."""

from __future__ import annotations

import asyncio
import http.server
import io
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

import maibox
from conftest import REPO, Server, binary, config_with

PROBE = "import sys\nprint('out', sys.argv[1:], sys.stdin.read())\nprint('err', file=sys.stderr)\nsys.exit(3)\n"


def test_every_shape_gives_the_same_result(transport):
    sb = maibox.Sandbox(trust="untrusted", timeout=20, **transport)
    r = sb.run(PROBE, args=["a b"], stdin="in")
    assert (r.exit_code, r.stdout, r.stderr) == (3, "out ['a b'] in\n", "err\n")
    assert r.served == (transport["mode"] == "server")
    assert r.assessment["verdict"] == "LOW" and r.run_id
    assert r.report["layers"]["seccomp"] and r.report["layers"]["landlock"]
    e = maibox.SandboxExecutor(**transport).execute_code(PROBE, trust_level="untrusted",
                                                         args=["a b"], stdin="in")
    assert isinstance(e, maibox.Result)
    assert (e.exit_code, e.stdout, e.stderr) == (r.exit_code, r.stdout, r.stderr)
    with maibox.SandboxSession(lang="python", **transport) as s:
        o = s.run("print('hello')")
    assert (o.exit_code, o.stdout, o.stderr, o.success()) == (0, "hello\n", "", True)


def test_server_and_binary_agree(server):
    code = "import json, sys\nprint(json.dumps({'x': 1}))\nraise SystemExit(sys.argv[1])\n"
    results = [maibox.Sandbox(mode=m, socket=server.socket).run(code, args=["7"])
               for m in ("server", "cli")]
    keys = lambda r: (r.exit_code, r.stdout, r.stderr, r.violations, r.assessment["verdict"],
                      sorted(r.report))
    assert keys(results[0]) == keys(results[1])


def test_output_streams_to_the_callbacks_as_it_comes(transport):
    got = []
    code = "import sys, time\nprint('first', flush=True)\nprint('e1', file=sys.stderr, flush=True)\ntime.sleep(2)\nprint('second')\n"
    t0 = time.monotonic()
    r = maibox.Sandbox(**transport).run(
        code, on_stdout=lambda t: got.append(("out", t, time.monotonic() - t0)),
        on_stderr=lambda t: got.append(("err", t, time.monotonic() - t0)))
    end = time.monotonic() - t0
    assert "".join(t for k, t, _ in got if k == "out") == r.stdout == "first\nsecond\n"
    assert "".join(t for k, t, _ in got if k == "err") == "e1\n"
    first = next(at for _, t, at in got if t.startswith("first"))
    # 2 s between the lines, 0.5 s asked of the stream: slack for a loaded machine.
    assert end - first > 0.5, f"the first line came only at the end: {got}"


def test_usage_samples_reach_the_callback(transport):
    samples = []
    r = maibox.Sandbox(**transport).run("import time\ntime.sleep(1.5)\n",
                                        on_sample=samples.append)
    assert r.exit_code == 0
    assert samples and "usage" in samples[0], samples


def test_blocked_code_raises_with_its_findings_and_runs_with_an_override(transport):
    bomb = "import os\nwhile True:\n    os.fork()\n"
    with pytest.raises(maibox.Refused) as e:
        maibox.Sandbox(**transport).run(bomb)
    assert e.value.verdict == "BLOCKED" and e.value.findings
    r = maibox.Sandbox(timeout=2, override_reason="reviewed: pids limit test",
                       **transport).run(bomb)
    # It ran (stopped at the pids limit or the timeout), and the override is recorded.
    assert r.run_id and r.exit_code != 125, r.report
    audit = (transport.get("socket") and str(Path(transport["socket"]).parent / "audit")) \
        or os.environ["MAIBOX_AUDIT_DIR"]
    shown = subprocess.run([binary(), "audit", "show", "--dir", audit, "--run", r.run_id,
                            "--json"], capture_output=True, text=True, check=True).stdout
    assert "reviewed: pids limit test" in shown


def test_limits_come_back_as_violations_not_exceptions(transport):
    sb = maibox.Sandbox(memory="64MiB", **transport)
    r = sb.run("import time\ntime.sleep(30)\n", timeout=1)
    assert r.timed_out and r.exit_code == 124 and not r.success()
    r = sb.run("x = bytearray(300 << 20)\nprint('survived')\n")
    assert any(v["kind"] == "memory" for v in r.violations), r.violations
    assert "survived" not in r.stdout


def test_a_full_queue_is_busy():
    from maibox import _wire
    s = Server(config_with({"queue": "0", "overcommit": "0.01"}))
    try:
        # The slow run holds the only slot until its stdin ends, which the test sends
        # only after the busy answer: no fixed sleep has to guess when it started or
        # how long it lasts, and a server that queued would never answer busy.
        with socket.socket(socket.AF_UNIX) as slow:
            slow.connect(s.socket)
            slow.sendall(_wire.request_frame({
                "v": _wire.VERSION, "stdin": "stream",
                "code": "import sys\nprint('started', flush=True)\nsys.stdin.read()\n"}))
            slow.settimeout(60)
            assert _wire.read_frame(slow) == (_wire.STDOUT, b"started\n")
            busy = []
            t = threading.Thread(target=lambda: busy.append(_busy_or_result(s.socket)),
                                 daemon=True)
            t0 = time.monotonic()
            t.start()
            t.join(5)  # generous for a loaded machine, yet far from waiting for the slot
            took = time.monotonic() - t0
            slow.sendall(_wire.frame(_wire.STDIN_END, b""))
            while True:
                kind, body = _wire.read_frame(slow)
                if kind == _wire.REPORT:
                    assert json.loads(body)["exit_code"] == 0, body
                    break
        assert busy and isinstance(busy[0], maibox.Busy), f"after {took:.1f} s: {busy}"
    finally:
        s.stop()


def _busy_or_result(sock: str):
    try:
        return maibox.Sandbox(mode="server", socket=sock).run("print(1)")
    except maibox.Busy as e:
        return e


def test_unavailable_without_server_or_binary(tmp_path):
    sb = maibox.Sandbox(socket=str(tmp_path / "none.sock"), binary=str(tmp_path / "no-maibox"))
    with pytest.raises(maibox.Unavailable):
        sb.run("print(1)")
    with pytest.raises(maibox.Unavailable):
        maibox.Sandbox(mode="server", socket=str(tmp_path / "none.sock")).run("print(1)")


def test_importing_the_package_leaves_asyncio_for_asyncsandbox():
    """A synchronous caller never pays for asyncio (most of the package's import
    time); `maibox.AsyncSandbox` still resolves, from the package as from `maibox.aio`."""
    probe = ("import sys, maibox; print('asyncio' in sys.modules); "
             "from maibox import AsyncSandbox; import maibox.aio; "
             "print(AsyncSandbox is maibox.aio.AsyncSandbox, 'asyncio' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=str(Path(maibox.__file__).parent.parent))
    assert out.stdout.split() == ["False", "True", "True"], out.stderr


def test_other_languages_and_libraries_without_network_are_refused():
    with pytest.raises(ValueError, match="Python only"):
        maibox.SandboxSession(lang="javascript")
    with pytest.raises(ValueError, match="network"):
        maibox.SandboxSession(lang="python").run("print(1)", libraries=["six"])


def test_a_hundred_runs_from_eight_threads(transport):
    sb = maibox.Sandbox(**transport)
    results = {}

    def worker(w):
        for i in range(w, 100, 8):
            results[i] = sb.run(f"print({i} * {i})")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(results) == list(range(100))
    for i, r in results.items():
        assert (r.exit_code, r.stdout) == (0, f"{i * i}\n"), r.stderr


def test_a_hundred_runs_from_asyncio_tasks(transport):
    async def main():
        sb = maibox.AsyncSandbox(**transport)
        sem = asyncio.Semaphore(8)

        async def one(i):
            async with sem:
                return i, await sb.run(f"print({i} + 1)")

        return await asyncio.gather(*(one(i) for i in range(100)))

    for i, r in asyncio.run(main()):
        assert (r.exit_code, r.stdout) == (0, f"{i + 1}\n"), r.stderr


def test_the_readme_example_works_as_written(server, monkeypatch, capsys):
    readme = (REPO / "python" / "README.md").read_text()
    example = re.search(r"```python\n(import maibox.*?)```", readme, re.S).group(1)
    monkeypatch.setenv("MAIBOX_SOCKET", server.socket)
    exec(compile(example, "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "0 2.5\n LOW"


def _wheel(name: str) -> bytes:
    """A wheel of one module `name` that defines ANSWER = 42."""
    buf = io.BytesIO()
    dist = f"{name}-1.0.dist-info"
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(f"{name}.py", "ANSWER = 42\n")
        z.writestr(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        z.writestr(f"{dist}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{dist}/RECORD", "")
    return buf.getvalue()


def test_libraries_are_installed_into_the_run_through_the_allowlist(tmp_path):
    name = "maibox_probe_pkg"
    files = {f"/simple/{name.replace('_', '-')}/":
             f'<a href="/{name}-1.0-py3-none-any.whl">{name}-1.0-py3-none-any.whl</a>'.encode(),
             f"/{name}-1.0-py3-none-any.whl": _wheel(name)}

    class Index(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = files.get(self.path)
            self.send_response(200 if body else 404)
            kind = "text/html" if self.path.endswith("/") else "application/octet-stream"
            self.send_header("Content-Type", kind)
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *a):
            pass

    httpd = http.server.HTTPServer(("127.0.0.1", 0), Index)
    port = httpd.server_address[1]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    cfg = config_with(
        replace={"  PYTHONDONTWRITEBYTECODE: \"1\"\n":
                 f"  PYTHONDONTWRITEBYTECODE: \"1\"\n  PIP_INDEX_URL: http://pypi.test:{port}/simple\n"
                 "  PIP_TRUSTED_HOST: pypi.test\n"},
        extra=f"\nnetwork:\n  allow: [\"pypi.test:{port}\"]\n  test_resolve: {{pypi.test: 127.0.0.1}}\n")
    path = tmp_path / "cfg.yaml"
    path.write_text(cfg)
    try:
        with maibox.SandboxSession(lang="python", network="allowlist", mode="cli",
                                   config=str(path), timeout=30) as s:
            out = s.run(f"import {name}\nprint({name}.ANSWER)", libraries=[name])
        assert (out.exit_code, out.stdout) == (0, "42\n"), out.stderr
        # Control: the same code without the library fails to import it.
        with maibox.SandboxSession(lang="python", network="allowlist", mode="cli",
                                   config=str(path)) as s:
            out = s.run(f"import {name}")
        assert out.exit_code == 1 and "ModuleNotFoundError" in out.stderr
    finally:
        httpd.shutdown()
