"""`maibox.SandboxSession`: llm-sandbox's session shape, so that its users switch by
changing an import. `run(code)` returns a `ConsoleOutput` with `exit_code`, `stdout`,
`stderr` and `success()`. Unlike a container session, every run gets a fresh sandbox:
nothing (files, installed libraries, variables) carries over between runs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, List, Optional

from .sandbox import Result, Sandbox, TextCallback

#: llm-sandbox's options that mean nothing here (there is no container or image).
IGNORED = {"image", "dockerfile", "keep_template", "commit_container", "verbose",
           "runtime_configs", "session_timeout", "backend", "client", "container_id",
           "workdir", "default_timeout", "execution_timeout", "security_policy",
           "skip_environment_setup", "mounts", "stream"}

LIB_DIR = "/tmp/.maibox-libs"


@dataclass
class ConsoleOutput:
    """llm-sandbox's result type."""

    exit_code: int
    stdout: str
    stderr: str
    #: maibox's whole result (report, violations, assessment).
    result: Optional[Result] = field(default=None, repr=False)

    def success(self) -> bool:
        return self.exit_code == 0

    @property
    def text(self) -> str:
        return self.stdout

    def to_json(self) -> str:
        return json.dumps({"exit_code": self.exit_code, "stdout": self.stdout,
                           "stderr": self.stderr})


class SandboxSession:
    """A context manager that runs Python code in maibox sandboxes.

    `lang` must be "python". `network="allowlist"` lets `libraries` be installed
    through maibox's filtering proxy (the package index must be on the allowlist)."""

    def __init__(self, lang: str = "python", *, trust: str = "untrusted",
                 socket: Optional[str] = None, network: Optional[str] = None,
                 timeout: Optional[float] = None, memory: Any = None,
                 cpus: Optional[float] = None, mode: str = "auto",
                 binary: Optional[str] = None, config: Optional[str] = None,
                 **llm_sandbox_options: Any) -> None:
        if str(lang).lower() not in ("python", "python3"):
            raise ValueError(f"maibox runs Python only: lang={lang!r} is not supported")
        unknown = set(llm_sandbox_options) - IGNORED
        if unknown:
            raise TypeError(f"SandboxSession got unexpected options {sorted(unknown)}")
        self.network = network
        self.sandbox = Sandbox(trust=trust, socket=socket, network=network, timeout=timeout,
                               memory=memory, cpus=cpus, mode=mode, binary=binary,
                               config=config)
        self.is_open = False

    def open(self) -> None:
        self.is_open = True

    def close(self) -> None:
        self.is_open = False

    def __enter__(self) -> "SandboxSession":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def run(self, code: str, libraries: Optional[List[str]] = None,
            timeout: Optional[float] = None, on_stdout: Optional[TextCallback] = None,
            on_stderr: Optional[TextCallback] = None) -> ConsoleOutput:
        """Runs `code` in a fresh sandbox, first installing `libraries` into it."""
        if libraries:
            code = self._with_libraries(code, list(libraries))
        r = self.sandbox.run(code, timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr)
        return ConsoleOutput(r.exit_code, r.stdout, r.stderr, r)

    def install(self, libraries: List[str]) -> ConsoleOutput:
        """Installs and imports nothing else: each run's sandbox is fresh, so libraries
        are installed with the run that needs them (`run(code, libraries=[...])`)."""
        return self.run("pass", libraries=libraries)

    def _with_libraries(self, code: str, libraries: List[str]) -> str:
        if (self.network or "none") == "none":
            raise ValueError(
                "libraries need the network: this session's network is 'none'; create the "
                "session with network='allowlist' (the package index must be on the config's "
                "network.allow list)")
        for lib in libraries:
            if not lib or lib.startswith("-") or any(c.isspace() for c in lib):
                raise ValueError(f"{lib!r} is not a package requirement")
        # One line ahead of the code: pip into the run's /tmp, then the code itself
        # compiled under its own name so that its line numbers stay its own.
        prelude = (
            "import subprocess as _m, sys as _s; "
            f"_r = _m.run([_s.executable, '-m', 'pip', 'install', '--quiet', "
            f"'--disable-pip-version-check', '--no-input', '--target', {LIB_DIR!r}, "
            f"*{libraries!r}], capture_output=True, text=True); "
            "_s.stderr.write(_r.stdout + _r.stderr) if _r.returncode else None; "
            "_s.exit(_r.returncode) if _r.returncode else None; "
            f"_s.path.insert(0, {LIB_DIR!r}); del _m, _s, _r\n"
        )
        return prelude + f"exec(compile({code!r}, '<session>', 'exec'))\n"


__all__ = ["SandboxSession", "ConsoleOutput"]
