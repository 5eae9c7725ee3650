"""Compiling a program with a backend binary, through the compiled-kernel cache.

``compile_program(program, target)`` returns the cache entry of the program's HLO compiled by
the target's backend: found in the cache, or compiled now (``backends/<name> --input
kernel.hlo --output kernel.py --report-dir report`` in a staging directory, then published).
A refusal raises ``CompileError`` with the source line JAX recorded for the refused
instruction.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from act_backend.jax import cache, source_map
from act_backend.jax.errors import CompileError
from act_backend.jax.lowering import Program
from act_backend.jax.target import Target

# The backend's refusals: "error: kernel.hlo:5: message" or "error: kernel.hlo:9:18: message".
_ERROR = re.compile(rf"^error: {re.escape(cache.HLO_FILE)}:(\d+)(?::(\d+))?: (.*)$")


def compile_program(program: Program, target: Target, *, time_limit: float | None = None,
                    root: Path | None = None) -> tuple[cache.Entry, bool]:
    """The cache entry of ``program`` compiled for ``target``, and whether it was a hit."""
    root = cache.cache_dir() if root is None else root
    # A time limit may stop the backend before its best candidate: such a kernel is kept
    # apart from the one compiled without it.
    backend = target.identity if time_limit is None else f"{target.identity}/{time_limit!r}"
    entry_key = cache.key(program.hlo, backend)
    found = cache.lookup(root, entry_key)
    if found is not None:
        return found, True
    staged = cache.staging(root)
    try:
        warnings = _run_backend(program, target, staged, time_limit)
        record = {"target": target.name, "module": program.name, "warnings": warnings}
        return cache.publish(root, entry_key, staged, record), False
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise


def _run_backend(program: Program, target: Target, workdir: Path,
                 time_limit: float | None) -> list[str]:
    """Runs the backend in ``workdir``; returns the warnings it printed."""
    (workdir / cache.HLO_FILE).write_text(program.hlo, encoding="utf-8")
    (workdir / cache.REPORT_DIR).mkdir()
    command = [str(target.binary), "--input", cache.HLO_FILE, "--output", cache.ASSEMBLY_FILE,
               "--report-dir", cache.REPORT_DIR]
    if time_limit is not None:
        command += ["--time-limit", str(time_limit)]
    # Relative paths, so that the backend's messages and report name kernel.hlo, not the
    # staging directory.
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True,
                          errors="replace")
    if done.returncode != 0:
        raise refusal(program, target.name, done.stderr, done.returncode)
    return [line for line in done.stderr.splitlines() if line.strip()]


def refusal(program: Program, target: str, stderr: str, returncode: int) -> CompileError:
    """The ``CompileError`` for a backend's error output on ``program``."""
    for line in stderr.splitlines():
        match = _ERROR.match(line.strip())
        if match:
            hlo_line = int(match.group(1))
            name = source_map.instruction_at(program.hlo, hlo_line)
            source = source_map.locations(program.debug_hlo).get(name) if name else None
            lines = program.hlo.splitlines()
            text = lines[hlo_line - 1].strip() if 1 <= hlo_line <= len(lines) else None
            return CompileError(match.group(3), target=target, source=source,
                                hlo_line=hlo_line, hlo_text=text, stderr=stderr)
    errors = [line.strip().removeprefix("error: ") for line in stderr.splitlines()
              if line.strip().startswith("error:")]
    message = "; ".join(errors) or stderr.strip() or f"the backend exited with {returncode}"
    return CompileError(message, target=target, source=None, hlo_line=None, hlo_text=None,
                        stderr=stderr)
