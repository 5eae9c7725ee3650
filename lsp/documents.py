"""Which documents the server serves, and what kind each is.

A ``.hlo`` file is a kernel. A ``.py`` file is a TAIDL spec when it builds an
``Accelerator``; other Python files get nothing from this server (another language server
covers Python itself).
"""

from __future__ import annotations

import os
import re

from pygls import uris

KERNEL = "kernel"
SPEC = "spec"

_SPEC_MARKER = re.compile(r"\bAccelerator\s*\(")


def path_of(uri: str) -> str | None:
    """The file system path of a ``file:`` URI (None for other schemes)."""
    return uris.to_fs_path(uri) if uri.startswith("file:") else None


def uri_of(path: str) -> str:
    return uris.from_fs_path(os.path.abspath(path)) or path


def kind_of(uri: str, text: str) -> str | None:
    lowered = uri.lower()
    if lowered.endswith(".hlo"):
        return KERNEL
    if lowered.endswith(".py") and _SPEC_MARKER.search(text):
        return SPEC
    return None
