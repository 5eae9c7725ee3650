"""The files of a generated crate and how they are written: unchanged files keep their
modification time (so cargo rebuilds only what changed), stale files go, cost paths resolve."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from act_backend.backend.cost_model import resolve_cost
from act_backend.backend.sources import backend_files, sync_tree


def test_a_generated_crate_holds_the_crate_allocator_cost_model_and_table():
    files = backend_files('{"format": "act-isa-table/1"}\n')
    assert files["isa.json"] == b'{"format": "act-isa-table/1"}\n'
    for needed in ("Cargo.toml", "Cargo.lock", "build.rs", "src/main.rs", "src/lib.rs",
                   "allocator/CMakeLists.txt", "allocator/include/act_alloc.h",
                   "cost/default_cost.c"):
        assert needed in files, needed
    assert not any(p.startswith(("target/", "allocator/build/")) for p in files)


def test_sync_rewrites_only_what_changed_and_removes_what_is_gone(tmp_path):
    sync_tree(tmp_path, {"a.txt": b"one", "src/b.rs": b"two", "old/c.txt": b"three"})
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "cache").write_text("build output")
    past = 1_000_000_000
    os.utime(tmp_path / "a.txt", (past, past))
    written = sync_tree(tmp_path, {"a.txt": b"one", "src/b.rs": b"changed"})
    assert written == ["src/b.rs"]
    assert (tmp_path / "a.txt").stat().st_mtime == past, "unchanged file untouched"
    assert (tmp_path / "src" / "b.rs").read_bytes() == b"changed"
    assert not (tmp_path / "old").exists(), "stale files and emptied folders removed"
    assert (tmp_path / "target" / "cache").exists(), "the build folder is kept"


def test_cost_paths_resolve_from_the_working_directory_then_the_spec(tmp_path, monkeypatch):
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    (spec_dir / "model.o").write_bytes(b"")
    cwd = tmp_path / "work"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    assert resolve_cost(None, spec_dir) is None
    assert resolve_cost("model.o", spec_dir) == (spec_dir / "model.o").resolve()
    (cwd / "model.o").write_bytes(b"")
    assert resolve_cost("model.o", spec_dir) == (cwd / "model.o").resolve()
    assert resolve_cost(Path(spec_dir / "model.o"), cwd) == (spec_dir / "model.o").resolve()
    with pytest.raises(ValueError, match=r"no such static library .*libx\.a"):
        resolve_cost("libx.a", spec_dir)
