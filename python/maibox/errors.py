"""The exceptions of the maibox client: a run that did not happen raises one of these.
A run that happened but failed (a timeout, a memory limit, an exit code) is a result,
not an exception: see `Result.violations` and `Result.exit_code`."""

from __future__ import annotations

from typing import List, Optional


class MaiboxError(Exception):
    """Base class of every error of this package."""


class Refused(MaiboxError):
    """The static assessment refused the code (its verdict reached the level's
    `refuse_at`). Review the findings; to run it anyway, pass `override_reason`."""

    def __init__(self, message: str, verdict: Optional[str] = None,
                 findings: Optional[List[str]] = None) -> None:
        super().__init__(message)
        self.verdict = verdict
        self.findings = list(findings or [])


class Busy(MaiboxError):
    """The server's queue is full: try again shortly."""


class Unavailable(MaiboxError):
    """Neither a server answers nor can the `maibox` binary be run."""


class ProtocolError(MaiboxError):
    """The server or the binary answered something this client cannot read."""


class InvalidRequest(MaiboxError):
    """The request itself is wrong (a bad limit, an unknown level, code too large)."""


def from_failure(failure: dict) -> MaiboxError:
    """The exception for a server's (or the binary's) error object."""
    kind = failure.get("kind", "")
    message = failure.get("message", "(no message)")
    if kind == "refused":
        return Refused(message, failure.get("verdict"), failure.get("findings"))
    if kind == "busy":
        return Busy(message)
    if kind in ("invalid", "forbidden", "audit"):
        return InvalidRequest(message)
    if kind == "protocol":
        return ProtocolError(message)
    return MaiboxError(message)
