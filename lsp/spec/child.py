"""The child process that runs a TAIDL spec on the server's behalf.

Running a spec executes user code, so the server never does it in its own process. This
module is started as ``python -m lsp.spec.child check|generate``; it reads one JSON
request line (``{"path", "text", "timeout_s", "memory_mb"}``) from stdin and writes one
JSON result line to what was its stdout. Anything the spec (or a build) prints goes to
stderr, which the server streams or keeps a tail of.

``check``: imports ``act_backend`` *before* reading the request (so a pre-started child
is warm), replaces the generators with validate-only stand-ins, caps the address space
(``resource.setrlimit``) and the run time (a timer that interrupts the spec where it is),
runs the spec in its own globals, then checks every ``Accelerator`` created with
``act_backend.validation.check`` and reports the problems, each with its quick fixes
(``lsp.fixes.spec``: they need the accelerator, which only this process holds).

``generate``: runs the spec the same way without limits, records the ``generate_backend``
calls it makes, then performs them for real, so a command in the editor builds exactly
what running the spec would.

This module must not import the server (pygls): it is the cold-start path of every check.
"""

from __future__ import annotations

import builtins
import json
import linecache
import os
import signal
import sys
import traceback
from typing import Any

from lsp.paths import same_file
from lsp.spec import describe as spec_describe
from lsp.text_map import lines_of

RESULT_PREFIX = "ACT-RESULT "


class SpecTimeout(BaseException):
    """Raised inside the spec when its time is up. A BaseException, so that a spec's own
    ``except Exception`` cannot swallow it."""


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[1] not in ("check", "generate"):
        print("usage: python -m lsp.spec.child check|generate", file=sys.stderr)
        return 2
    mode = argv[1]
    results = _claim_stdout()
    try:
        warm_up()
    except Exception as exc:  # the package itself is broken: say so, do not crash
        request = _read_request()
        _emit(results, {"fatal": f"cannot import act_backend: {type(exc).__name__}: {exc}",
                        "problems": [], "accelerators": []})
        return 0 if request is not None else 1
    request = _read_request()
    if request is None:
        return 1
    if mode == "check":
        result = check(request["path"], request["text"], float(request.get("timeout_s", 10)),
                       int(request.get("memory_mb", 2048)))
    else:
        result = generate(request["path"], request["text"], request.get("accelerator"))
    _emit(results, result)
    return 0


def _claim_stdout():
    """Keep the real stdout for the result line and send fd 1 to stderr, so prints from
    the spec or from a build tool it starts cannot corrupt the result."""
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return results


def _read_request() -> dict[str, Any] | None:
    line = sys.stdin.readline()
    if not line:
        return None
    return json.loads(line)


def _emit(results, payload: dict[str, Any]) -> None:
    results.write(RESULT_PREFIX + json.dumps(payload, default=str) + "\n")
    results.flush()


# ---- running the spec ----------------------------------------------------------------


class Recorder:
    """What the spec built and asked for while it ran."""

    def __init__(self) -> None:
        self.accelerators: list[Any] = []
        self.backend_requests: list[tuple[Any, Any]] = []  # (accelerator, cost)
        self.oracle_requests: list[Any] = []
        self.real: dict[str, Any] = {}

    def install(self) -> None:
        """Record every Accelerator created, and put validate-only stand-ins in place of
        the generators: in the modules that define them and in every act_backend module
        that exposes them (``act_backend`` itself first), so that the spec finds them
        whichever way it imports them."""
        import act_backend
        from act_backend.spec import Accelerator

        recorder = self
        original_init = Accelerator.__init__

        def recording_init(acc, *args, **kwargs):
            original_init(acc, *args, **kwargs)
            recorder.accelerators.append(acc)

        Accelerator.__init__ = recording_init  # type: ignore[method-assign]

        def generate_backend(acc, cost=None, *args, **kwargs):
            """Validate-only stand-in: records the request, writes and builds nothing."""
            recorder.backend_requests.append((acc, cost))

        def generate_oracle(acc, *args, **kwargs):
            """Validate-only stand-in: records the request, writes nothing."""
            recorder.oracle_requests.append(acc)

        stand_ins = {"generate_backend": generate_backend, "generate_oracle": generate_oracle}
        self.real = {name: _real_generator(name) for name in stand_ins}
        for attr, stand_in in stand_ins.items():
            setattr(act_backend, attr, stand_in)
        for name, module in list(sys.modules.items()):
            if module is None or not name.startswith("act_backend."):
                continue
            for attr, stand_in in stand_ins.items():
                real = self.real[attr]
                if real is not None and vars(module).get(attr) is real:
                    setattr(module, attr, stand_in)


# Where each generator is defined (``act_backend`` imports them lazily).
_GENERATOR_MODULES = {"generate_backend": "act_backend.backend.generator",
                      "generate_oracle": "act_backend.oracle"}


def _real_generator(name: str) -> Any:
    """The real generator, or None when its module cannot be imported (checking a spec
    does not need it; generating reports the import error when it calls it)."""
    import importlib

    try:
        return getattr(importlib.import_module(_GENERATOR_MODULES[name]), name)
    except Exception:
        return None


def warm_up() -> None:
    """Import what a run needs before the request arrives, so a pre-started child is fast."""
    import act_backend  # noqa: F401
    import act_backend.validation  # noqa: F401

    for name in _GENERATOR_MODULES:
        _real_generator(name)


def run_spec(path: str, text: str, timeout_s: float | None,
             memory_mb: int | None) -> dict[str, Any] | None:
    """Run the spec text as ``__main__`` of ``path``; return a problem dict describing
    how it failed, or None when it ran to the end."""
    directory = os.path.dirname(path) or "."
    # Tracebacks and anything that reads the source by file name see the editor's text.
    linecache.cache[path] = (len(text), None, lines_of(text), path)
    try:
        code = compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as exc:
        return syntax_problem(exc, path)
    sys.argv = [path]
    sys.path.insert(0, directory)
    if os.path.isdir(directory):
        os.chdir(directory)
    spec_globals = {"__name__": "__main__", "__file__": path, "__builtins__": builtins,
                    "__cached__": None, "__package__": None, "__spec__": None,
                    "__loader__": None}
    previous_limit = _limit_memory(memory_mb) if memory_mb else None
    if timeout_s:
        signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        exec(code, spec_globals)
    except SpecTimeout as exc:
        return _exception_problem(exc, path, "spec-timeout",
                                  f"Running the spec timed out after {timeout_s:g} s")
    except MemoryError as exc:
        return _exception_problem(exc, path, "spec-memory",
                                  f"Running the spec ran out of memory (limit {memory_mb} MiB)")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            return _exception_problem(exc, path, "spec-exit",
                                      f"The spec exited with status {exc.code}",
                                      severity="warning")
    except RecursionError as exc:
        return _exception_problem(exc, path, "spec-exception", f"RecursionError: {exc}")
    except BaseException as exc:  # the spec's own failure is a result, not a crash
        message = f"{type(exc).__name__}: {exc}".rstrip(": ")
        return _exception_problem(exc, path, "spec-exception", message)
    finally:
        if timeout_s:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if previous_limit is not None:
            _restore_memory(previous_limit)
    return None


def _on_alarm(signum, frame):
    raise SpecTimeout()


def _limit_memory(memory_mb: int):
    """Cap the address space at what the interpreter already maps plus ``memory_mb``, so
    the budget means the same whatever the imports cost."""
    import resource

    kind = resource.RLIMIT_AS if hasattr(resource, "RLIMIT_AS") else resource.RLIMIT_DATA
    soft, hard = resource.getrlimit(kind)
    limit = _mapped_bytes() + memory_mb * 1024 * 1024
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(kind, (limit, hard))
    return kind, soft, hard


def _restore_memory(previous) -> None:
    import resource

    kind, soft, hard = previous
    resource.setrlimit(kind, (soft, hard))


def _mapped_bytes() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def syntax_problem(exc: SyntaxError, path: str) -> dict[str, Any]:
    """A SyntaxError as a problem dict, covering at least one character."""
    line = exc.lineno or 1
    column = exc.offset or 1
    end_line = exc.end_lineno or line
    end_column = exc.end_offset or column + 1
    if (end_line, end_column) <= (line, column):
        end_line, end_column = line, column + 1
    return {"severity": "error", "code": "python-syntax",
            "message": f"SyntaxError: {exc.msg}",
            "span": _span(path, line, column, end_line, end_column)}


def _exception_problem(exc: BaseException, path: str, code: str, message: str,
                       severity: str = "error") -> dict[str, Any]:
    """Place an exception on the innermost line of the spec that it went through."""
    if isinstance(exc, SyntaxError) and exc.filename == path:
        return syntax_problem(exc, path)
    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if same_file(frame.filename, path):
            where = frame
    span = None
    if where is not None and where.lineno:
        span = _frame_span(path, where)
    return {"severity": severity, "code": code, "message": message, "span": span}


def _frame_span(path: str, frame: traceback.FrameSummary) -> dict[str, Any]:
    line = frame.lineno or 1
    end_line = getattr(frame, "end_lineno", None) or line
    colno = getattr(frame, "colno", None)
    end_colno = getattr(frame, "end_colno", None)
    if colno is None or end_colno is None:
        text = linecache.getline(path, line)
        start = len(text) - len(text.lstrip())
        return _span(path, line, start + 1, line, len(text.rstrip()) + 1)
    # Frame columns are UTF-8 byte offsets into their lines.
    first = linecache.getline(path, line)
    last = linecache.getline(path, end_line)
    column = len(first.encode("utf-8")[:colno].decode("utf-8", errors="ignore")) + 1
    end_column = len(last.encode("utf-8")[:end_colno].decode("utf-8", errors="ignore")) + 1
    return _span(path, line, column, end_line, end_column)


def _span(path, line, column, end_line, end_column) -> dict[str, Any]:
    return {"file": path, "line": line, "column": column, "end_line": end_line,
            "end_column": end_column}


# ---- the two modes -------------------------------------------------------------------


def check(path: str, text: str, timeout_s: float, memory_mb: int) -> dict[str, Any]:
    """Run the spec validate-only and check every accelerator it created."""
    from act_backend.validation import check as check_accelerator

    recorder = Recorder()
    recorder.install()
    problems: list[dict[str, Any]] = []
    failure = run_spec(path, text, timeout_s, memory_mb)
    if failure is not None:
        problems.append(failure)
    for acc in recorder.accelerators:
        creation = spec_describe.creation_span(acc)
        try:
            found = check_accelerator(acc)
        except Exception as exc:  # a half-built accelerator may confuse a checker
            problems.append({
                "severity": "error", "code": "check-failed",
                "message": f"Checking accelerator {spec_describe.name_of(acc)!r} failed: "
                           f"{type(exc).__name__}: {exc}",
                "span": creation if creation and same_file(creation["file"], path) else None,
            })
            continue
        fixes = _fixes(acc, found, text, path)
        for problem, fixed in zip(found, fixes, strict=True):
            entry = spec_describe.problem_dict(problem, path, creation)
            if fixed and entry["span"] == spec_describe.span_dict(problem.span):
                entry["fixes"] = [fix.as_dict() for fix in fixed]
            problems.append(entry)
    return {"problems": problems,
            "accelerators": [spec_describe.describe(acc) for acc in recorder.accelerators]}


def _fixes(acc: Any, problems: list[Any], text: str, path: str) -> list[tuple[Any, ...]]:
    """The quick fixes of each problem (none when they cannot be worked out)."""
    try:
        from lsp.fixes.spec import spec_fixes

        return spec_fixes(acc, problems, text, path)
    except Exception:  # noqa: BLE001 - fixes are a help; the problems stand without them
        return [() for _ in problems]


def generate(path: str, text: str, only: str | None = None) -> dict[str, Any]:
    """Run the spec, then generate the backends it asks for (all it built if none), or
    only that of the accelerator named ``only``."""
    import logging

    # Whatever the build logs is streamed by the server to the editor, line by line.
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(message)s")
    recorder = Recorder()
    recorder.install()
    failure = run_spec(path, text, None, None)
    if failure is not None:
        return {"error": {"kind": "spec-failed", **failure}}
    requests = recorder.backend_requests or [(acc, None) for acc in recorder.accelerators]
    if only is not None:
        named = [(acc, cost) for acc, cost in requests if spec_describe.name_of(acc) == only]
        if not named:
            named = [(acc, None) for acc in recorder.accelerators
                     if spec_describe.name_of(acc) == only]
        if not named:
            return {"error": {"kind": "no-accelerator",
                              "message": f"{path} creates no Accelerator named {only!r}"}}
        requests = named[:1]
    if not requests:
        return {"error": {"kind": "no-accelerator",
                          "message": f"{path} creates no Accelerator: nothing to generate"}}
    generate_backend = recorder.real["generate_backend"]
    if generate_backend is None:
        import importlib

        try:  # again, to report why it cannot be imported
            module = importlib.import_module(_GENERATOR_MODULES["generate_backend"])
            generate_backend = module.generate_backend
        except Exception as exc:
            return {"error": {"kind": "build-failed",
                              "message": f"cannot import the backend generator: "
                                         f"{type(exc).__name__}: {exc}"}}
    generate_oracle = recorder.real["generate_oracle"]
    built = []
    for acc, cost in requests:
        name = spec_describe.name_of(acc)
        try:
            # The spec's own generate_oracle calls are part of the pipeline it asks for: carry
            # them out too, so that a kernel compiled with this backend can be simulated.
            if generate_oracle is not None and any(a is acc for a in recorder.oracle_requests):
                print(f"Generating the oracle of {name}...", file=sys.stderr, flush=True)
                generate_oracle(acc)
            print(f"Generating the backend of {name}...", file=sys.stderr, flush=True)
            result = generate_backend(acc, cost) if cost is not None else generate_backend(acc)
        except ValueError as exc:
            return {"error": {"kind": "refused", "accelerator": name, "message": str(exc)}}
        except RuntimeError as exc:
            return {"error": {"kind": "build-failed", "accelerator": name, "message": str(exc)}}
        built.append({"accelerator": name,
                      "backend": str(result) if result is not None else None,
                      "base_dir": str(getattr(acc, "base_dir", "") or "")})
    return {"built": built}


if __name__ == "__main__":
    sys.exit(main(sys.argv))
