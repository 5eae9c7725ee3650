"""The compiled-kernel cache on its own: keys, entries written whole, and a cache directory
that keeps working after it is moved."""

from __future__ import annotations

import json
import shutil

from act_backend.jax import cache


def stage(root, assembly="print('kernel')\n"):
    staged = cache.staging(root)
    (staged / cache.HLO_FILE).write_text("HloModule m\n")
    (staged / cache.ASSEMBLY_FILE).write_text(assembly)
    (staged / cache.REPORT_DIR).mkdir()
    (staged / cache.REPORT_DIR / "report.json").write_text('{"status": "ok"}\n')
    return staged


def test_the_key_depends_on_the_hlo_and_the_backend():
    keys = {cache.key(hlo, backend) for hlo in ("a", "b") for backend in ("x", "y")}
    assert len(keys) == 4
    assert cache.key("a", "x") == cache.key("a", "x")


def test_the_directory_is_the_environment_variable(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "here"))
    assert cache.cache_dir() == tmp_path / "here"
    monkeypatch.delenv(cache.ENV)
    assert cache.cache_dir().parts[-3:] == (".cache", "act-backend", "jax")


def test_a_missing_entry_is_none(tmp_path):
    assert cache.lookup(tmp_path, cache.key("a", "x")) is None


def test_a_published_entry_is_found_and_names_its_files_relatively(tmp_path):
    key = cache.key("a", "x")
    entry = cache.publish(tmp_path, key, stage(tmp_path), {"target": "QKV", "warnings": []})
    assert entry.directory == tmp_path / key
    assert cache.lookup(tmp_path, key) == entry
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging-")]
    record = (entry.directory / cache.ENTRY_FILE).read_text()
    assert str(tmp_path) not in record
    assert all(not value.startswith("/") for value in json.loads(record)["files"].values())


def test_a_moved_cache_still_works(tmp_path):
    key = cache.key("a", "x")
    cache.publish(tmp_path / "old", key, stage(tmp_path / "old"), {"target": "QKV"})
    shutil.move(tmp_path / "old", tmp_path / "new")
    entry = cache.lookup(tmp_path / "new", key)
    assert entry is not None
    assert entry.assembly.read_text() == "print('kernel')\n"


def test_publishing_a_key_twice_keeps_the_first_entry(tmp_path):
    key = cache.key("a", "x")
    first = cache.publish(tmp_path, key, stage(tmp_path, "first\n"), {})
    second = cache.publish(tmp_path, key, stage(tmp_path, "second\n"), {})
    assert second.assembly.read_text() == "first\n" == first.assembly.read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".staging-")]


def test_a_damaged_entry_is_a_miss_and_is_replaced(tmp_path):
    key = cache.key("a", "x")
    cache.publish(tmp_path, key, stage(tmp_path), {})
    (tmp_path / key / cache.ASSEMBLY_FILE).unlink()
    assert cache.lookup(tmp_path, key) is None
    entry = cache.publish(tmp_path, key, stage(tmp_path, "again\n"), {})
    assert entry.assembly.read_text() == "again\n"
