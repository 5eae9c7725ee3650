"""Running cargo on a generated crate: the environment it needs (shared caches, cost model,
OR-Tools), its output streamed as progress lines, and the compiler it produced.

Every generated crate builds into one shared ``CARGO_TARGET_DIR`` and one allocator cache
under the cache directory (env ``ACT_BACKEND_CACHE``, default ``~/.cache/act-backend``), so
dependencies and the allocator are compiled once. A lock file serialises builds that share
the cache, because cargo places every crate's binary at the same path there.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

BINARY = "act-backend-compiler"
# Cargo status words worth showing while a build runs.
PROGRESS = ("Compiling", "Finished", "Blocking", "Downloading", "Downloaded", "Updating",
            "Locking", "Adding")


@dataclass(frozen=True)
class Built:
    """A finished build: where cargo left the compiler, and what the build script chose."""

    executable: Path
    info: list[str]


def cache_dir() -> Path:
    configured = os.environ.get("ACT_BACKEND_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "act-backend"


def build_env(cache: Path, cost: Path | None) -> dict[str, str]:
    """The environment of a build: the caller's, plus the caches and the cost model."""
    env = dict(os.environ)
    env["CARGO_TARGET_DIR"] = str(cache / "target")
    env["ACT_ALLOC_BUILD_DIR"] = str(cache / "allocator")
    env["CARGO_TERM_COLOR"] = "never"
    if cost is None:
        env.pop("ACT_COST_LIB", None)
    else:
        env["ACT_COST_LIB"] = str(cost)
    wheel = _ortools_wheel_libdir()
    if wheel is not None and not env.get("ORTOOLS_WHEEL_LIBDIR"):
        # Where ORTOOLS_DIR does not exist, the allocator falls back to the wheel; name the
        # one this interpreter uses rather than whatever python3 comes first on PATH.
        env["ORTOOLS_WHEEL_LIBDIR"] = str(wheel)
    return env


def _ortools_wheel_libdir() -> Path | None:
    spec = importlib.util.find_spec("ortools")
    if spec is None or spec.origin is None:
        return None
    libs = Path(spec.origin).parent / ".libs"
    return libs if libs.is_dir() else None


@contextmanager
def _locked(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def find_cargo() -> str:
    """cargo from PATH, else where rustup installs it: an editor started from a desktop
    session often lacks ~/.cargo/bin on its PATH."""
    found = shutil.which("cargo")
    if found:
        return found
    homes = [Path(os.environ["CARGO_HOME"])] if os.environ.get("CARGO_HOME") else []
    homes.append(Path.home() / ".cargo")
    for home in homes:
        candidate = home / "bin" / "cargo"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return "cargo"  # let the launch fail with the usual error, reported below


def build(crate: Path, cost: Path | None, label: str, install_to: Path) -> Built:
    """Builds ``crate`` in release mode and copies its compiler to ``install_to``.

    Raises ``RuntimeError`` carrying cargo's whole output when the build fails.
    """
    cache = cache_dir()
    env = build_env(cache, cost)
    command = [find_cargo(), "build", "--release", "--locked",
               "--message-format=json-render-diagnostics",
               "--manifest-path", str(crate / "Cargo.toml")]
    with _locked(cache / "build.lock"):
        messages, log, code = _run(command, crate, env, label)
        if code != 0:
            raise RuntimeError(
                f"building the {label} backend failed (cargo exited with {code}):\n{log}")
        executable = _executable(messages, crate)
        if executable is None:
            raise RuntimeError(f"cargo built no {BINARY} for {crate}:\n{log}")
        info = _build_info(messages, crate)
        install_executable(executable, install_to)
    return Built(executable, info)


def _run(command: list[str], cwd: Path, env: dict[str, str], label: str
         ) -> tuple[list[dict], str, int]:
    try:
        proc = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, errors="replace")
    except FileNotFoundError as e:
        raise RuntimeError(f"building the {label} backend needs cargo (on PATH, or rustup's "
                           f"$CARGO_HOME/bin or ~/.cargo/bin): {e}") from e
    messages: list[dict] = []
    stray: list[str] = []

    def read_messages() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                messages.append(json.loads(line))
            except json.JSONDecodeError:
                stray.append(line)

    reader = threading.Thread(target=read_messages, daemon=True)
    reader.start()
    log: list[str] = []
    assert proc.stderr is not None
    for line in proc.stderr:
        log.append(line)
        words = line.split(maxsplit=1)
        if words and words[0] in PROGRESS:
            print(f"[{label} backend] {line.strip()}", file=sys.stderr, flush=True)
    code = proc.wait()
    reader.join()
    return messages, "".join(stray + log), code


def _ours(message: dict, crate: Path) -> bool:
    manifest = message.get("manifest_path")
    if manifest is not None:
        return Path(manifest).resolve() == (crate / "Cargo.toml").resolve()
    package = message.get("package_id", "")
    return package.split("#", 1)[0].endswith(str(crate.resolve()))


def _executable(messages: list[dict], crate: Path) -> Path | None:
    for m in messages:
        if (m.get("reason") == "compiler-artifact" and m.get("executable")
                and m.get("target", {}).get("name") == BINARY and _ours(m, crate)):
            return Path(m["executable"])
    return None


def _build_info(messages: list[dict], crate: Path) -> list[str]:
    """The build script's account of the OR-Tools, nlohmann/json and cost model it used."""
    for m in messages:
        if m.get("reason") == "build-script-executed" and _ours(m, crate):
            info = Path(m.get("out_dir", "")) / "build-info.txt"
            if info.is_file():
                return [line for line in info.read_text().splitlines() if line.strip()]
    return []


def install_executable(executable: Path, target: Path) -> None:
    """Copies the compiler to ``target`` whole or not at all."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.{os.getpid()}.tmp"
    try:
        shutil.copyfile(executable, tmp)
        os.chmod(tmp, 0o755)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
