"""The user's cost model: a library defining ``int act_cost(const char *, double *)``, linked
into the backend in place of the default model."""

from __future__ import annotations

import os
from pathlib import Path

KINDS = {".o": "object file", ".a": "static library", ".so": "shared library"}


def resolve_cost(cost: str | os.PathLike | None, base_dir: str | os.PathLike) -> Path | None:
    """The absolute path of ``cost``, or ``None`` for the default model.

    A relative path is looked up in the current directory, then in ``base_dir`` (the spec's
    directory). Raises ``ValueError`` when the file is missing or is not ``.o``, ``.a`` or
    ``.so``.
    """
    if cost is None:
        return None
    given = Path(cost)
    if given.suffix not in KINDS:
        raise ValueError(
            f"cost={str(cost)!r}: expected an object file (.o), a static library (.a) or a "
            f"shared library (.so) that defines act_cost, found a {given.suffix or 'name'} "
            "without one of these extensions")
    places = [given] if given.is_absolute() else [Path.cwd() / given, Path(base_dir) / given]
    for place in places:
        if place.is_file():
            return place.resolve()
    where = " or ".join(str(p) for p in places)
    raise ValueError(f"cost={str(cost)!r}: no such {KINDS[given.suffix]} ({where})")
