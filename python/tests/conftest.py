"""Fixtures: the maibox binary of this checkout, and `maibox serve` servers of the tests'
own (socket, configuration and audit log in a temporary directory)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILTIN = (REPO / "config" / "sandbox.yaml").read_text()


def binary() -> str:
    b = os.environ.get("MAIBOX_BIN") or str(REPO / "target" / "debug" / "maibox")
    if not os.access(b, os.X_OK):
        pytest.fail(f"no maibox binary at {b}: build it (cargo build) or set MAIBOX_BIN")
    return b


def config_with(server: Dict[str, str] = None, extra: str = "", replace: Dict[str, str] = None) -> str:
    """The built-in configuration with `server:` keys set, text replaced, `extra` appended."""
    text = BUILTIN
    for key, value in (server or {}).items():
        lines = text.split("\n")
        for i, line in enumerate(lines):
            if line.startswith(f"  {key}:"):
                lines[i] = f"  {key}: {value}"
                break
        else:
            raise KeyError(key)
        text = "\n".join(lines)
    for old, new in (replace or {}).items():
        assert old in text, old
        text = text.replace(old, new, 1)
    return text + extra


class Server:
    """A running `maibox serve`."""

    def __init__(self, config: str) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="maibox-py-")
        d = Path(self.dir.name)
        os.chmod(d, 0o755)
        self.config = str(d / "sandbox.yaml")
        Path(self.config).write_text(config)
        self.socket = str(d / "s.sock")
        self.audit = str(d / "audit")
        self.log = open(d / "server.log", "wb")
        env = {**os.environ, "MAIBOX_AUDIT_DIR": self.audit}
        self.proc = subprocess.Popen([binary(), "serve", "--socket", self.socket,
                                      "--config", self.config], env=env,
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.connect(self.socket)
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"maibox serve did not start: {self.read_log()}")
                time.sleep(0.02)

    def read_log(self) -> str:
        return (Path(self.dir.name) / "server.log").read_text(errors="replace")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        self.log.close()
        self.dir.cleanup()


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    s = Server(config_with({"pool_min": "2"}))
    yield s
    s.stop()


@pytest.fixture(scope="session")
def audit_dir() -> Iterator[str]:
    """The fallback's audit log (the binary's runs)."""
    with tempfile.TemporaryDirectory(prefix="maibox-py-audit-") as d:
        path = os.path.join(d, "log")
        os.environ["MAIBOX_AUDIT_DIR"] = path
        yield path


@pytest.fixture(params=["server", "cli"])
def transport(request, server: Server, audit_dir: str) -> Dict[str, str]:
    """How a test's sandboxes run: through the server, or the binary."""
    os.environ["MAIBOX_BIN"] = binary()
    if request.param == "server":
        return {"mode": "server", "socket": server.socket}
    return {"mode": "cli"}
