"""Running one long command: work-done progress, cancellation, and its child process.

A command reports progress on the token the client gave with the request, or on one the
server creates when the client supports ``window/workDoneProgress``. Cancelling that
progress (``window/workDoneProgress/cancel``) or the request itself (``$/cancelRequest``)
kills the child process and everything it started; the request then fails with
RequestCancelled. Every line the child prints is forwarded as ``window/logMessage`` and
the latest one shown as the progress message.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from lsp.spec import runner as spec_runner

PROGRESS_MESSAGE_CHARS = 120


class CommandRun:
    def __init__(self, server: Any, command: str, title: str,
                 token: types.ProgressToken | None):
        self.server = server
        self.command = command
        self.title = title
        self.token = token
        self.cancelled = asyncio.Event()
        self.lines: list[str] = []

    async def __aenter__(self) -> CommandRun:
        if self.token is None and _client_supports_progress(self.server):
            token = f"act-{uuid.uuid4()}"
            try:
                await self.server.work_done_progress.create_async(token)
                self.token = token
            except Exception as exc:  # the client refused: run without a progress bar
                self.server.window_log_message(types.LogMessageParams(
                    types.MessageType.Warning, f"{self.command}: no progress bar ({exc})"))
        if self.token is not None:
            self.server.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(
                title=self.title, cancellable=True, message="starting"))
            future = self.server.work_done_progress.tokens.get(self.token)
            if future is not None:
                loop = asyncio.get_running_loop()
                future.add_done_callback(
                    lambda f: loop.call_soon_threadsafe(self.cancelled.set)
                    if f.cancelled() else None)
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        if self.token is None:
            return
        if exc_type is None:
            message = "done"
        elif self.cancelled.is_set() or issubclass(exc_type, asyncio.CancelledError):
            message = "cancelled"
        else:
            message = "failed"
        self.server.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.server.work_done_progress.tokens.pop(self.token, None)

    def report(self, message: str) -> None:
        if self.token is not None:
            self.server.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=message[:PROGRESS_MESSAGE_CHARS]))

    def log(self, line: str) -> None:
        self.lines.append(line)
        self.server.window_log_message(types.LogMessageParams(types.MessageType.Log, line))
        if line.strip():
            self.report(line.strip())

    async def until_done(self, work: asyncio.Future[Any]) -> Any:
        """Wait for ``work`` unless the user cancels first; then cancel it (its cleanup
        kills the child) and fail the request as cancelled."""
        cancelled = asyncio.ensure_future(self.cancelled.wait())
        try:
            await asyncio.wait({work, cancelled}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not work.done():
                work.cancel()
                with contextlib.suppress(BaseException):
                    await work
            cancelled.cancel()
        if self.cancelled.is_set() and (work.cancelled() or not work.done()):
            raise JsonRpcRequestCancelled(f"{self.command} was cancelled")
        return work.result()

    async def child(self, mode: str, request: dict[str, Any], cwd: str | None
                    ) -> spec_runner.ChildResult:
        """Run an ``lsp.spec.child``-style child, streaming its output."""
        process = await spec_runner.start_child(mode, cwd=cwd)
        work = asyncio.ensure_future(
            spec_runner.exchange(process, request, None, on_stderr_line=self.log))
        return await self.until_done(work)

    async def process(self, argv: list[str], cwd: str | None) -> int:
        """Run a program, streaming its merged output; its exit status."""
        work = asyncio.ensure_future(_stream(argv, cwd, self.log))
        return await self.until_done(work)


async def _stream(argv: list[str], cwd: str | None, on_line: Callable[[str], None]) -> int:
    process = await asyncio.create_subprocess_exec(
        *argv, cwd=cwd, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    try:
        assert process.stdout is not None
        while True:
            line = await process.stdout.readline()
            if not line:
                break
            on_line(line.decode("utf-8", errors="replace").rstrip("\n"))
        return await process.wait()
    finally:
        spec_runner.kill_tree(process)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(process.wait(), 5)


def _client_supports_progress(server: Any) -> bool:
    try:
        window = server.client_capabilities.window
    except AttributeError:
        return False
    return bool(window and window.work_done_progress)
