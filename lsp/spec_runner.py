"""Run ``lsp.spec_child`` processes from the server's event loop, within limits.

A check must answer within a few hundred milliseconds, and starting Python and importing
``act_backend`` costs more than that, so ``ChildPool`` keeps one ``check`` child started
ahead of time, its imports done, waiting for a request on stdin; each child serves one
request and exits, so no state leaks from one run of a spec into the next.

Whatever the spec does, the server keeps answering: the child runs in its own session
(process group), is killed with everything it started when its wall-clock limit passes or
the check is cancelled, and its output is bounded.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from lsp.spec_child import RESULT_PREFIX

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
    "check": ("lsp.spec_child", "check"),
    "generate": ("lsp.spec_child", "generate"),
    "simulate": ("lsp.simulate_child",),
}


def child_command(mode: str) -> list[str]:
    return [sys.executable, "-m", *_CHILDREN[mode]]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    # The server's own package must be importable in the child wherever it runs from.
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


class ChildPool:
    """Hands out ``check`` children, keeping one started ahead of need."""

    def __init__(self) -> None:
        self._warm: asyncio.Task[asyncio.subprocess.Process] | None = None
        self._closed = False

    def prestart(self) -> None:
        if self._closed or self._warm is not None:
            return
        self._warm = asyncio.ensure_future(start_child("check"))

    async def take(self) -> asyncio.subprocess.Process:
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
        with contextlib.suppress(asyncio.TimeoutError):
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


async def check_spec(pool: ChildPool, path: str, text: str, timeout_s: float,
                     memory_mb: int) -> ChildResult:
    """Run a spec validate-only in a child and return its problems (as dicts) and the
    description of what it built, or problems saying how the run failed."""
    process = await pool.take()
    request = {"path": path, "text": text, "timeout_s": timeout_s, "memory_mb": memory_mb}
    result = await exchange(process, request, timeout_s + HARD_LIMIT_GRACE_S)
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
                       + (f": {_last_lines(result.stderr_tail)}" if result.stderr_tail else ""),
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
    return "\n".join(lines[-count:])
