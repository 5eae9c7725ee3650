"""``act.describeDocument [documentUri]``: what the server makes of a file, so that clients
need no detection of their own: its kind (a TAIDL spec, an HLO kernel, or neither) and, for a
kernel, the parameters of its entry computation as the kernel parser reads them.

Answers ``{"ok": true, "message": str, "kind": "spec" | "kernel" | null, "parameters":
[{"index": int, "name": str, "type": str}, ...]}`` (parameters in index order; empty for a
spec, or a kernel with no entry computation that parses). The text is the editor's when
the file is open, else what is on disk.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from lsp import documents
from lsp.commands.arguments import Arguments
from lsp.hlo_outline import kernel_outline
from lsp.text_map import lines_of

NAME = "act.describeDocument"
ARGUMENTS = ("documentUri",)


def describe(path: str, text: str) -> dict[str, Any]:
    """The answer for the file at ``path`` holding ``text``."""
    kind = documents.kind_of(path, text)
    parameters = entry_parameters(text) if kind == documents.KERNEL else []
    what = {documents.SPEC: "a TAIDL spec", documents.KERNEL: "an HLO kernel"}.get(
        kind or "", "neither a TAIDL spec nor an HLO kernel")
    return {"ok": True, "message": f"{path} is {what}", "kind": kind,
            "parameters": parameters}


def entry_parameters(text: str) -> list[dict[str, Any]]:
    """The ``parameter(i)`` values of the entry computation, by index, with their types."""
    outline = kernel_outline(lines_of(text))
    entry = next((c for c in outline.computations if c.is_entry), None)
    if entry is None:
        return []
    found = [{"index": value.parameter, "name": value.name, "type": value.type}
             for value in entry.values if value.parameter is not None]
    return sorted(found, key=lambda p: p["index"])


async def run(server: Any, values: list[Any] | None, token: types.ProgressToken | None
              ) -> dict[str, Any]:
    args = Arguments(NAME, values, server.workspace_root(), ARGUMENTS)
    path = args.path("documentUri")
    assert path is not None
    try:
        text = server.document_text(path)
    except OSError as exc:
        raise args.fail("documentUri", f"names no readable file: {path} ({exc})") from exc
    return describe(path, text)
