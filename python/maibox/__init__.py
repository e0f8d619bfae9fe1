"""maibox: run untrusted Python code in maibox sandboxes.

Three shapes of one client:

- `Sandbox(trust=..., timeout=...).run(code) -> Result` (and `AsyncSandbox` for asyncio);
- `SandboxExecutor(config_path).execute_code(code, trust_level=...)`, the seeds' shape;
- `SandboxSession(lang="python").run(code) -> ConsoleOutput`, llm-sandbox's shape.

Each run goes to a `maibox serve` server (warm, single-use sandboxes) when one answers,
and otherwise to the `maibox` binary, with the same result either way.
"""

from typing import TYPE_CHECKING, Any

from .errors import Busy, InvalidRequest, MaiboxError, ProtocolError, Refused, Unavailable
from .executor import SandboxExecutor
from .sandbox import Result, Sandbox
from .session import ConsoleOutput, SandboxSession

if TYPE_CHECKING:
    from .aio import AsyncSandbox

__version__ = "0.1.0"

__all__ = ["Sandbox", "AsyncSandbox", "Result", "SandboxExecutor", "SandboxSession",
           "ConsoleOutput", "MaiboxError", "Refused", "Busy", "Unavailable",
           "ProtocolError", "InvalidRequest"]


def __getattr__(name: str) -> Any:
    """Imports `AsyncSandbox` on first use: `maibox.aio` pulls in asyncio, most of the
    package's import time, which a synchronous caller never needs."""
    if name == "AsyncSandbox":
        from .aio import AsyncSandbox
        return AsyncSandbox
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
