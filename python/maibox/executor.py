"""`maibox.SandboxExecutor`: the seeds' executor shape. An assistant calls
`execute_code(code, trust_level=...)` and gets the run's `Result`, with its security
metadata (assessment, violations, usage, audit run id)."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from .sandbox import Result, SampleCallback, Sandbox, Size, TextCallback


class SandboxExecutor:
    """Runs generated code with the limits of `config/sandbox.yaml`'s trust levels.

    `config_path` is the configuration of the `maibox` binary when no server answers
    (a server runs with its own); None: the binary's search order."""

    def __init__(self, config_path: Optional[str] = None, socket: Optional[str] = None,
                 mode: str = "auto", binary: Optional[str] = None) -> None:
        self.config_path = config_path
        self.socket = socket
        self.mode = mode
        self.binary = binary

    def execute_code(self, code: str, trust_level: str = "untrusted", *,
                     args: Sequence[str] = (), stdin: Union[str, bytes, None] = None,
                     timeout: Optional[float] = None, memory: Optional[Size] = None,
                     cpus: Optional[float] = None, network: Optional[str] = None,
                     override_reason: Optional[str] = None,
                     on_stdout: Optional[TextCallback] = None,
                     on_stderr: Optional[TextCallback] = None,
                     on_sample: Optional[SampleCallback] = None) -> Result:
        """Runs `code` at `trust_level` (untrusted, unknown or trusted) in a fresh
        sandbox. A refused script raises `maibox.Refused` with its findings."""
        sandbox = Sandbox(trust=trust_level, socket=self.socket, timeout=timeout,
                          memory=memory, cpus=cpus, network=network,
                          override_reason=override_reason, mode=self.mode,
                          binary=self.binary, config=self.config_path)
        return sandbox.run(code, args, stdin, on_stdout=on_stdout, on_stderr=on_stderr,
                           on_sample=on_sample)


__all__ = ["SandboxExecutor"]
