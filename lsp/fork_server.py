"""A fork server for spec checks: import ``act_backend`` once, fork one process per check.

Started as ``python -m lsp.fork_server``. Importing ``act_backend`` costs more CPU than a
whole check, so this process does it once, never runs user code itself, and for each
request (a JSON line on stdin: ``{"id", "path", "text", "timeout_s", "memory_mb",
"result", "log"}``) forks a process that starts its own session (so it can be killed with
everything it starts), sends its output to the ``log`` file, runs the spec
(``lsp.spec.child.check``, limits included) and writes its result to the ``result`` file.
Each forked process serves one check and exits, so nothing leaks from one run to the next.

Events go back as JSON lines on stdout: ``{"id", "event": "started", "pid"}`` as soon as
the process exists (the server kills it by that pid on a timeout or a cancellation) and
``{"id", "event": "exited", "status"}`` when it has been reaped. Needs ``os.fork`` and
``os.pidfd_open`` (Linux); elsewhere the server starts one process per check instead.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import sys
import traceback
from typing import Any

from lsp.spec import child as spec_child

AVAILABLE = hasattr(os, "fork") and hasattr(os, "pidfd_open")


def _prime() -> None:
    """Warm what the first check would otherwise initialise (parsers, caches)."""
    from act_backend.spec import parse_semantics

    parse_semantics("ENTRY warm {\n  %In1 = bf16[4] parameter(0);\n"
                    "  ROOT %Out0 = bf16[4] copy(%In1);\n}\n")


def _run_forked(request: dict[str, Any]) -> None:
    """In the forked process: never returns."""
    status = 0
    try:
        os.setsid()
        log = os.open(request["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)  # the spec must not read the server's requests
        os.close(null)
        result = spec_child.check(request["path"], request["text"],
                                  float(request["timeout_s"]), int(request["memory_mb"]))
        partial = request["result"] + ".part"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(result, handle, default=str)
        os.replace(partial, request["result"])
    except BaseException:
        status = 70
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except BaseException:
            pass
    finally:
        os._exit(status)


def serve() -> int:
    events = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        spec_child.warm_up()
        _prime()
    except Exception as exc:  # a broken install: answer every request with the reason
        fatal = f"cannot import act_backend: {type(exc).__name__}: {exc}"
    else:
        fatal = None

    def emit(payload: dict[str, Any]) -> None:
        events.write(json.dumps(payload) + "\n")
        events.flush()

    selector = selectors.DefaultSelector()
    selector.register(0, selectors.EVENT_READ, None)
    running: dict[int, int] = {}  # pid -> pidfd
    pending = b""
    while True:
        for key, _ in selector.select():
            if key.data is None:
                chunk = os.read(0, 1 << 16)
                if not chunk:  # the server went away: so do the checks it started
                    for pid in running:
                        _kill(pid)
                    return 0
                pending += chunk
                while b"\n" in pending:
                    line, pending = pending.split(b"\n", 1)
                    request = json.loads(line)
                    if fatal is not None:
                        emit({"id": request["id"], "event": "fatal", "message": fatal})
                        continue
                    events.flush()
                    pid = os.fork()
                    if pid == 0:
                        selector.close()
                        _run_forked(request)
                    pidfd = os.pidfd_open(pid)
                    running[pid] = pidfd
                    selector.register(pidfd, selectors.EVENT_READ, (request["id"], pid))
                    emit({"id": request["id"], "event": "started", "pid": pid})
            else:
                request_id, pid = key.data
                _, status = os.waitpid(pid, 0)
                selector.unregister(key.fileobj)
                os.close(running.pop(pid))
                emit({"id": request_id, "event": "exited",
                      "status": os.waitstatus_to_exitcode(status)})


def _kill(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except OSError:
            pass


if __name__ == "__main__":
    sys.exit(serve())
