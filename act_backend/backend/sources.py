"""The files of a generated backend crate, and writing them into place.

A generated crate is the generic crate with the allocator, the default cost model and the
accelerator's ISA table beside its ``Cargo.toml``. Writing leaves unchanged files untouched,
so their modification times stay and cargo recompiles only what a spec edit changed (the
ISA table, which only the small binary target embeds).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from act_backend.backend import allocator_dir, crate_dir, default_cost_source

# Build outputs a developer may have left in the source trees; never part of a crate.
SKIPPED_DIRS = frozenset({"target", "build", "__pycache__"})


def backend_files(isa_json: str) -> dict[str, bytes]:
    """Relative path -> contents of every file of a generated crate."""
    files: dict[str, bytes] = {}
    _add_tree(files, crate_dir(), "")
    _add_tree(files, allocator_dir(), "allocator/")
    files["cost/default_cost.c"] = default_cost_source().read_bytes()
    files["isa.json"] = isa_json.encode("utf-8")
    return files


def _add_tree(files: dict[str, bytes], root: Path, prefix: str) -> None:
    if not root.is_dir():
        raise FileNotFoundError(f"backend sources missing: {root} is not a directory")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            path = Path(dirpath) / name
            files[prefix + path.relative_to(root).as_posix()] = path.read_bytes()


def sync_tree(root: Path, files: dict[str, bytes], keep: frozenset[str] = frozenset({"target"})
              ) -> list[str]:
    """Makes ``root`` hold exactly ``files`` (top-level entries named in ``keep`` aside).

    Files whose contents are already right are not rewritten; others are replaced whole.
    Returns the relative paths that were written.
    """
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for rel, data in sorted(files.items()):
        path = root / rel
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        _replace_file(path, data)
        written.append(rel)
    for dirpath, _dirnames, filenames in os.walk(root, topdown=False):
        here = Path(dirpath)
        rel_dir = here.relative_to(root)
        if rel_dir.parts and rel_dir.parts[0] in keep:
            continue
        for name in filenames:
            rel = (rel_dir / name).as_posix()
            if rel not in files:
                (here / name).unlink()
        if here != root and not any(here.iterdir()):
            here.rmdir()
    return written


def _replace_file(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
