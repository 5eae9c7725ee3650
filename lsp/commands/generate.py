"""``act.generateBackend [specUri, accelerator?]``: generate and build a spec's backend.

The spec runs in a ``generate`` child (``lsp.spec.child``), which performs the
``generate_backend`` calls the spec makes (or generates every accelerator it creates, or
only the one named), with the build's output streamed to the editor as it comes.
"""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types

from lsp.commands.arguments import Arguments
from lsp.commands.running import CommandRun

NAME = "act.generateBackend"
ARGUMENTS = ("specUri", "accelerator")


def parse_arguments(values: list[Any] | None, root: str | None) -> tuple[str, str | None]:
    args = Arguments(NAME, values, root, ARGUMENTS)
    spec = args.existing_file("specUri", (".py",))
    accelerator = args.text("accelerator", required=False)
    assert spec is not None
    return spec, accelerator


def summarize(payload: dict[str, Any] | None, stderr_tail: str) -> dict[str, Any]:
    """The command's result from the child's report (plain data, shown and returned)."""
    if payload is None:
        return {"ok": False, "message": "The generator process stopped without a result"
                + (f":\n{stderr_tail.strip()}" if stderr_tail.strip() else "")}
    if payload.get("fatal"):
        return {"ok": False, "message": payload["fatal"]}
    error = payload.get("error")
    if error is not None:
        kind = error.get("kind", "failed")
        message = error.get("message", "")
        span = error.get("span")
        if span:
            message = f"{span['file']}:{span['line']}:{span['column']}: {message}"
        headline = {
            "refused": "The spec was refused",
            "build-failed": "The backend build failed",
            "spec-failed": "Running the spec failed",
            "no-accelerator": "Nothing to generate",
        }.get(kind, "Generation failed")
        return {"ok": False, "kind": kind, "message": f"{headline}: {message}"}
    built = payload.get("built", [])
    return {"ok": True, "backends": built,
            "message": "Generated " + ", ".join(
                f"{b['accelerator']} -> {b['backend'] or 'backends/' + b['accelerator']}"
                for b in built)}


async def run(server: Any, values: list[Any] | None, token: types.ProgressToken | None
              ) -> dict[str, Any]:
    spec, accelerator = parse_arguments(values, server.workspace_root())
    text = server.document_text(spec)
    title = f"Generating backend from {os.path.basename(spec)}"
    async with CommandRun(server, NAME, title, token) as running:
        result = await running.child(
            "generate", {"path": spec, "text": text, "accelerator": accelerator},
            cwd=os.path.dirname(spec))
    summary = summarize(result.payload, result.stderr_tail)
    server.show(summary["message"], ok=summary["ok"])
    return summary
