"""Checking a command's arguments, so that a bad one is refused with a message naming it.

Arguments are positional (as ``workspace/executeCommand`` sends them). A file may be given
as a ``file:`` URI or a path; a relative path is taken from the workspace root.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from lsp.documents import path_of


class ArgumentError(ValueError):
    """A command argument is missing or wrong; the server answers InvalidParams."""

    def __init__(self, command: str, argument: str, message: str):
        super().__init__(f"{command}: argument '{argument}' {message}")
        self.command = command
        self.argument = argument


class Arguments:
    """The arguments of one command invocation, read by position and name."""

    def __init__(self, command: str, values: Sequence[Any] | None, root: str | None,
                 names: Sequence[str]):
        self.command = command
        self.values = list(values or [])
        self.root = root
        if len(self.values) > len(names):
            raise ArgumentError(command, names[-1] if names else "?",
                                f"is followed by {len(self.values) - len(names)} unexpected "
                                f"argument(s); {command} takes {', '.join(names)}")
        self.names = list(names)

    def fail(self, name: str, message: str) -> ArgumentError:
        return ArgumentError(self.command, name, message)

    def raw(self, name: str, required: bool = True) -> Any:
        index = self.names.index(name)
        value = self.values[index] if index < len(self.values) else None
        if value is None and required:
            raise self.fail(name, f"is missing (argument {index + 1} of {self.command})")
        return value

    def text(self, name: str, required: bool = True) -> str | None:
        value = self.raw(name, required)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise self.fail(name, f"must be a non-empty string, got {value!r}")
        return value

    def path(self, name: str, required: bool = True) -> str | None:
        """A file system path from a ``file:`` URI or a path (not checked for existence)."""
        value = self.text(name, required)
        if value is None:
            return None
        if "://" in value or value.startswith("file:"):
            path = path_of(value)
            if path is None:
                raise self.fail(name, f"must be a file: URI or a path, got {value!r}")
            return path
        if not os.path.isabs(value) and self.root:
            value = os.path.join(self.root, value)
        return os.path.abspath(value)

    def existing_file(self, name: str, suffixes: Sequence[str] = (), required: bool = True,
                      default: str | None = None) -> str | None:
        path = self.path(name, required and default is None) or default
        if path is None:
            return None
        if not os.path.isfile(path):
            raise self.fail(name, f"names no file: {path}")
        if suffixes and not path.endswith(tuple(suffixes)):
            raise self.fail(name, f"must be a {' or '.join(suffixes)} file, got {path}")
        return path

    def executable(self, name: str) -> str:
        path = self.path(name)
        assert path is not None
        if not os.path.isfile(path):
            raise self.fail(name, f"names no file: {path} (generate the backend first)")
        if not os.access(path, os.X_OK):
            raise self.fail(name, f"is not executable: {path}")
        return path

    def directory(self, name: str) -> str:
        path = self.path(name)
        assert path is not None
        if not os.path.isdir(path):
            raise self.fail(name, f"names no directory: {path}")
        return path

    def existing_files(self, name: str) -> list[str]:
        value = self.raw(name)
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not value:
            raise self.fail(name, f"must be a non-empty list of files, got {value!r}")
        paths = []
        for index, item in enumerate(value):
            if not isinstance(item, str) or not item:
                raise self.fail(name, f"item {index} must be a file path or URI, got {item!r}")
            inner = Arguments(self.command, [item], self.root, [f"{name}[{index}]"])
            path = inner.existing_file(f"{name}[{index}]")
            assert path is not None
            paths.append(path)
        return paths
