"""When documents are checked and how their diagnostics are published.

One task per document: a change (re)starts it after a quiet delay (debounce), open and
save start it at once, and a newer request cancels the older one, killing its child
process if it was running a spec. Closing a document cancels its task and clears its
diagnostics. Checks run off the event loop (a worker thread or a child process), so the
server keeps answering while they run.

Commands may attach findings to a document (a compile error); they are shown with the
document's own diagnostics until the document changes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types

from lsp import documents
from lsp.convert import Converter
from lsp.findings import Finding
from lsp.spec import check as spec_check
from lsp.spec.model import SpecModel
from lsp.text_map import lines_of

log = logging.getLogger(__name__)


@dataclass
class Snapshot:
    uri: str
    version: int | None
    text: str
    kind: str | None
    path: str


class DiagnosticsScheduler:
    def __init__(self, server: Any):
        self.server = server
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._findings: dict[str, list[Finding]] = {}
        self._command_findings: dict[str, dict[str, list[Finding]]] = {}
        # The model of each spec as of its last check: (document version, model).
        self.models: dict[str, tuple[int | None, SpecModel]] = {}

    def schedule(self, uri: str, delay_s: float = 0.0) -> None:
        previous = self._tasks.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self._tasks[uri] = asyncio.ensure_future(self._check(uri, delay_s))

    def changed(self, uri: str) -> None:
        """The text changed: command findings no longer match it."""
        self._command_findings.pop(uri, None)

    def close(self, uri: str) -> None:
        task = self._tasks.pop(uri, None)
        if task is not None:
            task.cancel()
        self._findings.pop(uri, None)
        self._command_findings.pop(uri, None)
        self.models.pop(uri, None)
        self.server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def open_uris(self) -> list[str]:
        return list(self.server.workspace.text_documents.keys())

    def set_command_findings(self, uri: str, command: str, findings: list[Finding]) -> None:
        self._command_findings.setdefault(uri, {})[command] = findings
        self.publish(uri)

    async def shutdown(self) -> None:
        tasks = list(self._tasks.values())
        self._tasks.clear()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    def snapshot(self, uri: str) -> Snapshot | None:
        document = self.server.workspace.text_documents.get(uri)
        if document is None:
            return None
        text = document.source
        return Snapshot(uri, document.version, text, documents.kind_of(uri, text),
                        documents.path_of(uri) or uri)

    async def _check(self, uri: str, delay_s: float) -> None:
        try:
            if delay_s > 0:
                await asyncio.sleep(delay_s)
            snap = self.snapshot(uri)
            if snap is None:
                return
            findings = await self._run_checks(snap)
            current = self.server.workspace.text_documents.get(uri)
            if current is None or current.version != snap.version:
                return  # a newer check of this document is (or will be) on its way
            self._findings[uri] = findings
            self.publish(uri, snap)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a failing check must not stop the others
            log.exception("checking %s failed", uri)
            self.server.window_log_message(types.LogMessageParams(
                types.MessageType.Error, f"checking {uri} failed: {type(exc).__name__}: {exc}"))
        finally:
            if self._tasks.get(uri) is asyncio.current_task():
                del self._tasks[uri]

    async def _run_checks(self, snap: Snapshot) -> list[Finding]:
        if snap.kind == documents.KERNEL:
            from lsp.kernel_check import check_kernel

            return await asyncio.to_thread(check_kernel, snap.text, snap.path)
        if snap.kind != documents.SPEC:
            return []
        settings = self.server.settings
        if settings.execute_specs:
            result = await spec_check.check_running(
                snap.text, snap.path, self.server.checker, settings.spec_timeout_s,
                settings.spec_memory_mb)
        else:
            result = await asyncio.to_thread(spec_check.check_static, snap.text, snap.path)
        if result.model is not None:
            self.models[snap.uri] = (snap.version, result.model)
        return result.findings

    def publish(self, uri: str, snap: Snapshot | None = None) -> None:
        snap = snap or self.snapshot(uri)
        if snap is None:
            return
        findings = list(self._findings.get(uri, []))
        for extra in self._command_findings.get(uri, {}).values():
            findings.extend(extra)
        converter = Converter(self.server.workspace.position_codec, lines_of(snap.text))
        self.server.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=snap.version,
            diagnostics=[converter.diagnostic(f, snap.version) for f in findings]))
