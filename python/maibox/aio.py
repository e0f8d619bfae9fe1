"""`maibox.AsyncSandbox`: the same runs as `maibox.Sandbox`, for asyncio: the server's
protocol over an asyncio unix connection, or `maibox exec` as an asyncio subprocess."""

from __future__ import annotations

import asyncio
import json
import os

from typing import Any, List, Optional, Sequence, Union

from . import _wire
from .errors import ProtocolError, Unavailable
from .sandbox import (Options, Result, SampleCallback, Sandbox, TextCallback, _cli_result,
                      _Decoder, _Reply, _request_message)


class AsyncSandbox(Sandbox):
    """As `Sandbox`, with `await sandbox.run(...)`; usable with `async with`."""

    async def __aenter__(self) -> "AsyncSandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    async def run(self, code: str, args: Sequence[str] = (),  # type: ignore[override]
                  stdin: Union[str, bytes, None] = None, *, timeout: Optional[float] = None,
                  override_reason: Optional[str] = None,
                  on_stdout: Optional[TextCallback] = None,
                  on_stderr: Optional[TextCallback] = None,
                  on_sample: Optional[SampleCallback] = None) -> Result:
        """Runs `code` once in a fresh sandbox; see `Sandbox.run`."""
        opts = self._options(timeout=timeout, override_reason=override_reason)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        out, err = _Decoder(on_stdout), _Decoder(on_stderr)
        conn = await self._connect_async()
        if conn is not None:
            return await _served(conn, code, list(args), data, opts, out, err, on_sample)
        return await self._cli(code, list(args), data, opts, out, err, on_sample)

    async def _connect_async(self):
        if self.mode == "cli":
            return None
        try:
            if not self.socket:
                raise FileNotFoundError("no socket: set MAIBOX_SOCKET or pass socket=")
            return await asyncio.open_unix_connection(self.socket, limit=_wire.MAX_FRAME)
        except OSError as e:
            if self.mode == "server":
                raise Unavailable(f"no maibox server answers on {self.socket}: {e}") from e
            return None

    async def _cli(self, code: str, args: List[str], stdin: Optional[bytes], opts: Options,
                   out: _Decoder, err: _Decoder, on_sample: Optional[SampleCallback]) -> Result:
        r, w = os.pipe()
        cmd = self.command(code, args, opts, w, samples=on_sample is not None)
        try:
            proc = await asyncio.create_subprocess_exec(
                *cmd, stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, pass_fds=(w,))
        except OSError as e:
            os.close(r)
            raise Unavailable(f"cannot run {self.binary}: {e}") from e
        finally:
            os.close(w)
        loop = asyncio.get_running_loop()
        report = loop.run_in_executor(None, _read_all, r)
        if stdin:
            proc.stdin.write(stdin)
            await proc.stdin.drain()
            proc.stdin.close()
        await asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err))
        line = await report
        await proc.wait()
        return _cli_result(line, out, err, on_sample)


def _read_all(fd: int) -> bytes:
    with os.fdopen(fd, "rb") as f:
        return f.read()


async def _pump(reader: asyncio.StreamReader, decoder: _Decoder) -> None:
    while True:
        chunk = await reader.read(65536)
        if not chunk:
            return
        decoder.feed(chunk)


async def _served(conn, code: str, args: List[str], stdin: Optional[bytes], opts: Options,
                  out: _Decoder, err: _Decoder, on_sample: Optional[SampleCallback]) -> Result:
    reader, writer = conn
    reply = _Reply(out, err, on_sample)
    try:
        writer.write(_request_message(code, args, stdin, opts, on_sample is not None))
        await writer.drain()
        while True:
            try:
                got = await _wire.read_frame_async(reader)
            except (OSError, ValueError) as e:
                raise ProtocolError(f"reading from the server: {e}") from e
            result = reply.take(got)
            if result is not None:
                return result
    finally:
        writer.close()


__all__ = ["AsyncSandbox"]
