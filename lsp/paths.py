"""File identity: whether two names given for a file (relative, symlinked) are the same."""

from __future__ import annotations

import os


def same_file(a: str | None, b: str | None) -> bool:
    if not a or not b:
        return False
    return a == b or os.path.realpath(a) == os.path.realpath(b)
