"""Run child processes from the server's event loop, within limits: spec checks, spec
generation and kernel simulation.

A check must answer within a few hundred milliseconds, and starting Python and importing
``act_backend`` costs more than that. ``ForkChecker`` keeps one fork server
(``lsp.fork_server``) that has done the imports and forks a fresh process per check;
where forking is not available, ``SpawnChecker`` keeps one ``lsp.spec.child`` process
started ahead of need instead. Either way each process serves one check and exits, so no
state leaks from one run of a spec into the next.

Whatever the spec does, the server keeps answering: each run has its own session
(process group), is killed with everything it started when its wall-clock limit passes or
the check is cancelled, and its output is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import shutil
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from lsp.spec.child import RESULT_PREFIX

# How much longer than the spec's own time limit the server waits for the child before
# killing it: the child's timer interrupts Python code, this catches native code.
HARD_LIMIT_GRACE_S = 5.0
STDERR_TAIL_BYTES = 8192


@dataclass
class ChildResult:
    """What a child reported, or how it failed to."""

    payload: dict[str, Any] | None
    returncode: int | None
    stderr_tail: str = ""
    timed_out: bool = False
    problems: list[dict[str, Any]] = field(default_factory=list)


# The child programs, by mode: running a spec (check, generate) and simulating a kernel.
_CHILDREN = {
    "serve": ("lsp.fork_server",),
    "check": ("lsp.spec.child", "check"),
    "generate": ("lsp.spec.child", "generate"),
    "simulate": ("lsp.simulate_child",),
}


def child_command(mode: str) -> list[str]:
    return [sys.executable, "-m", *_CHILDREN[mode]]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The server's own package must be importable in the child wherever it runs from: the
    # directory that holds the ``lsp`` package (two levels above this module).
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = here + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env


async def start_child(mode: str, cwd: str | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *child_command(mode),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=_child_env(),
        start_new_session=True,  # its own process group: killed together with its children
        limit=64 * 1024 * 1024,  # the result line (problems + outline) may be long
    )


def kill_tree(process: asyncio.subprocess.Process) -> None:
    """Kill a child and everything it started (it leads its own process group, which
    outlives it while anything it started is still running)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()


class SpawnChecker:
    """Runs each check in a new ``check`` child, keeping one started ahead of need."""

    def __init__(self) -> None:
        self._warm: asyncio.Task[asyncio.subprocess.Process] | None = None
        self._closed = False

    def prestart(self) -> None:
        if self._closed or self._warm is not None:
            return
        self._warm = asyncio.ensure_future(start_child("check"))

    async def run(self, request: dict[str, Any], hard_limit_s: float) -> ChildResult:
        return await exchange(await self._take(), request, hard_limit_s)

    async def _take(self) -> asyncio.subprocess.Process:
        warm, self._warm = self._warm, None
        process = None
        if warm is not None:
            with contextlib.suppress(Exception):
                process = await warm
        if process is None or process.returncode is not None:
            process = await start_child("check")
        self.prestart()
        return process

    async def close(self) -> None:
        self._closed = True
        warm, self._warm = self._warm, None
        if warm is None:
            return
        with contextlib.suppress(Exception):
            process = await warm
            kill_tree(process)
            await process.wait()


async def exchange(process: asyncio.subprocess.Process, request: dict[str, Any],
                   hard_limit_s: float | None,
                   on_stderr_line: Callable[[str], Awaitable[None] | None] | None = None,
                   ) -> ChildResult:
    """Send one request to a child and wait for its result line, killing it when
    ``hard_limit_s`` passes or when the caller is cancelled."""
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    tail = bytearray()

    async def read_stderr() -> None:
        assert process.stderr is not None
        while True:
            line = await process.stderr.readline()
            if not line:
                return
            tail.extend(line)
            del tail[:-STDERR_TAIL_BYTES]
            if on_stderr_line is not None:
                outcome = on_stderr_line(line.decode("utf-8", errors="replace").rstrip("\n"))
                if asyncio.iscoroutine(outcome):
                    await outcome

    async def read_result() -> dict[str, Any] | None:
        assert process.stdout is not None
        while True:
            line = await process.stdout.readline()
            if not line:
                return None
            text = line.decode("utf-8", errors="replace")
            if text.startswith(RESULT_PREFIX):
                return json.loads(text[len(RESULT_PREFIX):])

    stderr_task = asyncio.ensure_future(read_stderr())
    try:
        process.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            await process.stdin.drain()
            process.stdin.close()
        try:
            payload = await asyncio.wait_for(read_result(), hard_limit_s)
        except TimeoutError:
            kill_tree(process)
            await process.wait()
            return ChildResult(None, process.returncode, _decode(tail), timed_out=True)
        except (json.JSONDecodeError, ValueError) as exc:
            kill_tree(process)
            await process.wait()
            return ChildResult(None, process.returncode,
                               _decode(tail) + f"\nunreadable result from the child: {exc}")
        returncode = await process.wait()
        # Let the stderr reader drain what the child wrote before it exited.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(stderr_task), 1.0)
        return ChildResult(payload, returncode, _decode(tail))
    finally:
        # Also reached on cancellation: a child is never left running (nor unreaped).
        kill_tree(process)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(process.wait(), 5)
        stderr_task.cancel()
        with contextlib.suppress(BaseException):
            await stderr_task


def _decode(tail: bytearray) -> str:
    return bytes(tail).decode("utf-8", errors="replace")


class _ChildGone(Exception):
    """The fork server stopped (or never started) while a check was waiting on it."""


class _Pending:
    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.started: asyncio.Future[int] = loop.create_future()
        self.exited: asyncio.Future[int] = loop.create_future()


class ForkChecker:
    """Runs each check in a process forked by one long-lived ``lsp.fork_server``."""

    # How long the fork server may take to fork (it is otherwise idle: only when it is
    # still importing, right after it was started, can this take a moment).
    START_LIMIT_S = 60.0

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None
        self._starting: asyncio.Task[asyncio.subprocess.Process] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._pending: dict[int, _Pending] = {}
        self._ids = itertools.count(1)
        self._directory: str | None = None
        self._stderr = bytearray()
        self._closed = False

    def prestart(self) -> None:
        if self._closed or self._starting is not None:
            return
        if self._process is not None and self._process.returncode is None:
            return
        self._starting = asyncio.ensure_future(self._start())

    async def _start(self) -> asyncio.subprocess.Process:
        if self._directory is None:
            self._directory = tempfile.mkdtemp(prefix="act-lsp-checks-")
        process = await start_child("serve")
        self._process = process
        self._tasks = [asyncio.ensure_future(self._read_events(process)),
                       asyncio.ensure_future(self._read_stderr(process))]
        return process

    async def _server(self) -> asyncio.subprocess.Process:
        if self._process is None or self._process.returncode is not None:
            if self._starting is None or self._starting.done():
                self._starting = None
                self.prestart()
            assert self._starting is not None
            await self._starting
        assert self._process is not None
        return self._process

    async def _read_events(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while True:
            line = await process.stdout.readline()
            if not line:
                break
            event = json.loads(line)
            pending = self._pending.get(event.get("id"))
            if pending is None:
                continue  # a check that was cancelled: nobody waits for it any more
            kind = event.get("event")
            if kind == "started" and not pending.started.done():
                pending.started.set_result(int(event["pid"]))
            elif kind == "exited" and not pending.exited.done():
                pending.exited.set_result(int(event["status"]))
            elif kind == "fatal" and not pending.started.done():
                pending.started.set_exception(_ChildGone(event.get("message", "")))
        gone = _ChildGone("the fork server stopped" + _last_lines(_decode(self._stderr)))
        for pending in self._pending.values():
            for future in (pending.started, pending.exited):
                if not future.done():
                    future.set_exception(gone)

    async def _read_stderr(self, process: asyncio.subprocess.Process) -> None:
        assert process.stderr is not None
        while True:
            chunk = await process.stderr.read(4096)
            if not chunk:
                return
            self._stderr.extend(chunk)
            del self._stderr[:-STDERR_TAIL_BYTES]

    async def run(self, request: dict[str, Any], hard_limit_s: float) -> ChildResult:
        request_id = next(self._ids)
        pending = _Pending()
        self._pending[request_id] = pending
        pid: int | None = None
        result_path = log_path = ""
        try:
            process = await self._server()
            assert process.stdin is not None and self._directory is not None
            result_path = os.path.join(self._directory, f"{request_id}.json")
            log_path = os.path.join(self._directory, f"{request_id}.log")
            line = json.dumps({**request, "id": request_id, "result": result_path,
                               "log": log_path})
            process.stdin.write(line.encode("utf-8") + b"\n")
            await process.stdin.drain()
            pid = await asyncio.wait_for(asyncio.shield(pending.started), self.START_LIMIT_S)
            timed_out = False
            try:
                status = await asyncio.wait_for(asyncio.shield(pending.exited), hard_limit_s)
            except TimeoutError:
                timed_out = True
                _kill_group(pid)
                status = await asyncio.wait_for(asyncio.shield(pending.exited), 10.0)
            payload = _read_json(result_path)
            return ChildResult(payload, status, _tail(log_path), timed_out)
        except (_ChildGone, BrokenPipeError, ConnectionResetError) as exc:
            message = str(exc) or "the fork server stopped"
            if message.startswith("cannot import act_backend"):
                return ChildResult({"fatal": message}, None)
            return ChildResult(None, None, message)
        finally:
            if pid is not None and not pending.exited.done():
                _kill_group(pid)  # cancelled, or the wait itself failed
            self._pending.pop(request_id, None)
            for path in (result_path, log_path, result_path + ".part"):
                if path:
                    with contextlib.suppress(OSError):
                        os.remove(path)

    async def close(self) -> None:
        self._closed = True
        starting, self._starting = self._starting, None
        if starting is not None:
            with contextlib.suppress(BaseException):
                await starting
        if self._process is not None:
            kill_tree(self._process)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._process.wait(), 5)
        for task in self._tasks:
            task.cancel()
        if self._directory is not None:
            shutil.rmtree(self._directory, ignore_errors=True)


def _kill_group(pid: int) -> None:
    """Kill a forked check and what it started (it leads its own session)."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _read_json(path: str) -> dict[str, Any] | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - STDERR_TAIL_BYTES))
            return handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


Checker = ForkChecker | SpawnChecker


def new_checker() -> Checker:
    from lsp import fork_server

    return ForkChecker() if fork_server.AVAILABLE else SpawnChecker()


async def check_spec(checker: Checker, path: str, text: str, timeout_s: float,
                     memory_mb: int) -> ChildResult:
    """Run a spec validate-only in a child and return its problems (as dicts) and the
    description of what it built, or problems saying how the run failed."""
    request = {"path": path, "text": text, "timeout_s": timeout_s, "memory_mb": memory_mb}
    result = await checker.run(request, timeout_s + HARD_LIMIT_GRACE_S)
    if result.timed_out:
        result.problems = [{
            "severity": "error", "code": "spec-timeout", "span": None,
            "message": f"Running the spec timed out after {timeout_s:g} s "
                       "(stuck outside Python code; the process was stopped)",
        }]
    elif result.payload is None:
        result.problems = [{
            "severity": "error", "code": "spec-crashed", "span": None,
            "message": "Running the spec stopped the process "
                       f"({_describe_exit(result.returncode)})"
                       + (f":{_last_lines(result.stderr_tail)}" if result.stderr_tail.strip()
                          else ""),
        }]
    elif result.payload.get("fatal"):
        result.problems = [{"severity": "error", "code": "spec-environment", "span": None,
                            "message": result.payload["fatal"]}]
    else:
        result.problems = list(result.payload.get("problems", []))
    return result


def _describe_exit(returncode: int | None) -> str:
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-returncode).name}"
        return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


def _last_lines(text: str, count: int = 5) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return ("\n" + "\n".join(lines[-count:])) if lines else ""
