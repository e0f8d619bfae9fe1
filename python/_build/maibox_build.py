"""A PEP 517 build backend for the maibox package, in the standard library only.

pip builds a wheel from a source tree in an isolated environment into which it
installs the backend's requirements first; with a backend from PyPI (setuptools,
flit) that needs the network. This one needs nothing: the package is pure Python
and its wheel is a zip file with three metadata files.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "maibox"
VERSION = "0.1.0"
SUMMARY = (
    "Run untrusted Python code in maibox sandboxes: a client for maibox serve, "
    "with the CLI as fallback"
)
TAG = "py3-none-any"
DIST_INFO = f"{NAME}-{VERSION}.dist-info"


def _metadata() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\nVersion: {VERSION}\nSummary: {SUMMARY}\n"
        "License: Apache-2.0\nRequires-Python: >=3.9\n"
        "Description-Content-Type: text/markdown\n\n" + readme
    )


def _wheel_file() -> str:
    return f"Wheel-Version: 1.0\nGenerator: maibox_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"{name},sha256={digest.decode()},{len(data)}"


def _package_files() -> list[tuple[str, bytes]]:
    files = []
    for path in sorted((ROOT / NAME).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            files.append((path.relative_to(ROOT).as_posix(), path.read_bytes()))
    return files


def _write_wheel(directory: str, files: list[tuple[str, bytes]]) -> str:
    files = files + [
        (f"{DIST_INFO}/METADATA", _metadata().encode()),
        (f"{DIST_INFO}/WHEEL", _wheel_file().encode()),
    ]
    record = [_record_line(n, d) for n, d in files] + [f"{DIST_INFO}/RECORD,,"]
    files.append((f"{DIST_INFO}/RECORD", ("\n".join(record) + "\n").encode()))
    name = f"{NAME}-{VERSION}-{TAG}.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for n, d in files:
            z.writestr(zipfile.ZipInfo(n, date_time=(2026, 1, 1, 0, 0, 0)), d)
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file that puts the source tree on sys.path.
    return _write_wheel(wheel_directory, [(f"{NAME}.pth", f"{ROOT}\n".encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = f"{NAME}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for rel in ["pyproject.toml", "README.md", "_build/maibox_build.py"]:
            tar.add(ROOT / rel, arcname=f"{base}/{rel}")
        for n, d in _package_files():
            info = tarfile.TarInfo(f"{base}/{n}")
            info.size = len(d)
            tar.addfile(info, io.BytesIO(d))
        pkg = _metadata().encode()
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size = len(pkg)
        tar.addfile(info, io.BytesIO(pkg))
    return name
