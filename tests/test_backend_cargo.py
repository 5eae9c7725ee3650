"""Finding cargo: PATH first, then where rustup installs it."""

from __future__ import annotations

import os

from act_backend.backend.cargo import find_cargo


def fake_cargo(directory):
    directory.mkdir(parents=True)
    cargo = directory / "cargo"
    cargo.write_text("#!/bin/sh\n")
    cargo.chmod(0o755)
    return cargo


def test_cargo_on_path_wins(tmp_path, monkeypatch):
    on_path = fake_cargo(tmp_path / "path")
    fake_cargo(tmp_path / "home" / "bin")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "home"))
    assert find_cargo() == str(on_path)


def test_without_cargo_on_path_cargo_home_is_used(tmp_path, monkeypatch):
    in_home = fake_cargo(tmp_path / "home" / "bin")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "home"))
    assert find_cargo() == str(in_home)


def test_without_cargo_anywhere_the_plain_name_is_left_to_fail(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("CARGO_HOME", str(tmp_path / "nothing"))
    monkeypatch.setenv("HOME", str(tmp_path / "nobody"))
    assert find_cargo() == "cargo"
    assert not os.path.exists(tmp_path / "nobody")
