"""Which documents the server serves, and what kind each is.

A ``.hlo`` file is a kernel. A ``.py`` file is a TAIDL spec when it builds an
``Accelerator`` or adds to one (``add_data_model``, ``add_instruction``, ``add_semantics``
calls: a spec may extend an accelerator made in another file); other Python files get
nothing from this server (another language server covers Python itself). The text is
matched, not parsed, so that a spec being typed stays a spec. Clients ask
(``act.describeDocument``) rather than deciding this themselves.
"""

from __future__ import annotations

import os
import re

from pygls import uris

KERNEL = "kernel"
SPEC = "spec"

_SPEC_MARKER = re.compile(
    r"\bAccelerator\s*\(|\.\s*(?:add_instruction|add_data_model|add_semantics)\s*\(")


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
