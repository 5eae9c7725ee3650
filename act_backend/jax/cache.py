"""The compiled-kernel cache: one directory per kernel, keyed by its HLO text and the
backend's identity (a hash of the backend binary and of its oracle's ISA table, and the time
limit the backend was given, if any).

The cache lives in ``$ACT_BACKEND_JAX_CACHE`` (default ``~/.cache/act-backend/jax``). An entry
is ``<key>/`` holding ``kernel.hlo``, the assembly ``kernel.py``, the compile report
``report/`` (``report.json`` and every candidate's assembly) and ``entry.json``, which names
them by paths relative to the entry: the cache keeps working after it is moved or copied.
Entries are written into a staging directory and renamed into place, so a reader never sees
half of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "ACT_BACKEND_JAX_CACHE"
FORMAT = "act-backend-jax-cache/1"
HLO_FILE = "kernel.hlo"
ASSEMBLY_FILE = "kernel.py"
REPORT_DIR = "report"
ENTRY_FILE = "entry.json"


def cache_dir() -> Path:
    """Where compiled kernels are kept: ``$ACT_BACKEND_JAX_CACHE`` or
    ``~/.cache/act-backend/jax``."""
    configured = os.environ.get(ENV)
    if configured:
        return Path(configured).expanduser().resolve()
    return Path.home() / ".cache" / "act-backend" / "jax"


def key(hlo: str, identity: str) -> str:
    """The cache key of ``hlo`` compiled by the backend ``identity`` names."""
    digest = hashlib.sha256()
    digest.update(f"{FORMAT}\0{identity}\0".encode())
    digest.update(hlo.encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class Entry:
    """A compiled kernel on disk."""

    directory: Path
    record: dict[str, Any]

    def path(self, name: str) -> Path:
        return self.directory / self.record["files"][name]

    @property
    def assembly(self) -> Path:
        return self.path("assembly")

    @property
    def hlo(self) -> Path:
        return self.path("hlo")

    @property
    def report(self) -> Path:
        return self.path("report")

    @property
    def warnings(self) -> list[str]:
        return list(self.record.get("warnings", []))


def lookup(root: Path, entry_key: str) -> Entry | None:
    """The entry for ``entry_key``, or None when there is none (or only a damaged one)."""
    directory = root / entry_key
    try:
        record = json.loads((directory / ENTRY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    entry = Entry(directory, record)
    try:
        if not all(entry.path(name).is_file() for name in ("hlo", "assembly", "report")):
            return None
    except (KeyError, TypeError):
        return None
    return entry


def staging(root: Path) -> Path:
    """A fresh directory inside the cache to compile into before ``publish``."""
    root.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=".staging-", dir=root))


def publish(root: Path, entry_key: str, staged: Path, record: dict[str, Any]) -> Entry:
    """Records ``staged`` (holding ``kernel.hlo``, ``kernel.py`` and ``report/``) as the
    entry of ``entry_key``. When another process published the same key first, its entry is
    kept and ``staged`` removed: both compiled the same HLO with the same backend."""
    record = {"format": FORMAT, **record,
              "files": {"hlo": HLO_FILE, "assembly": ASSEMBLY_FILE,
                        "report": f"{REPORT_DIR}/report.json"}}
    (staged / ENTRY_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    final = root / entry_key
    try:
        staged.rename(final)
    except OSError:
        existing = lookup(root, entry_key)
        if existing is not None:
            shutil.rmtree(staged, ignore_errors=True)
            return existing
        # A damaged entry (an interrupted copy of the cache, say): replace it.
        shutil.rmtree(final, ignore_errors=True)
        staged.rename(final)
    entry = lookup(root, entry_key)
    assert entry is not None, f"a published cache entry reads back: {final}"
    return entry
