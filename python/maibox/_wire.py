"""The server's protocol, version 1 (docs/server.md): frames of a 4-byte big-endian
length, a type byte and the payload, over a unix stream socket; one request per
connection."""

from __future__ import annotations

import json
import socket
import struct
from typing import Any, Dict, Optional, Tuple

VERSION = 1
MAX_FRAME = 64 << 20

REQUEST, STDIN, STDIN_END = b"Q", b"I", b"Z"
STDOUT, STDERR, NOTICE, SAMPLE, REPORT, ERROR = b"O", b"E", b"N", b"S", b"R", b"X"


def frame(kind: bytes, payload: bytes) -> bytes:
    """One frame of `kind` carrying `payload`."""
    return struct.pack(">I", len(payload) + 1) + kind + payload


def request_frame(req: Dict[str, Any]) -> bytes:
    return frame(REQUEST, json.dumps(req).encode())


def _read_exact(sock: socket.socket, n: int) -> Optional[bytes]:
    chunks = []
    while n:
        b = sock.recv(min(n, 1 << 20))
        if not b:
            return None
        chunks.append(b)
        n -= len(b)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> Optional[Tuple[bytes, bytes]]:
    """The next frame as (kind, payload), or None at the end of the stream."""
    head = _read_exact(sock, 4)
    if head is None:
        return None
    (n,) = struct.unpack(">I", head)
    if n == 0 or n > MAX_FRAME:
        raise ValueError(f"a frame of {n} bytes (1 to {MAX_FRAME} allowed)")
    body = _read_exact(sock, n)
    if body is None:
        return None
    return body[:1], body[1:]


async def read_frame_async(reader) -> Optional[Tuple[bytes, bytes]]:
    """As read_frame, from an asyncio StreamReader."""
    import asyncio

    try:
        head = await reader.readexactly(4)
        (n,) = struct.unpack(">I", head)
        if n == 0 or n > MAX_FRAME:
            raise ValueError(f"a frame of {n} bytes (1 to {MAX_FRAME} allowed)")
        body = await reader.readexactly(n)
    except asyncio.IncompleteReadError:
        return None
    return body[:1], body[1:]
