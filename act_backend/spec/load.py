"""Running a spec file for the accelerator it builds: ``load_spec(path)`` runs the file as
``python path`` would, with its own calls to ``generate_oracle`` and ``generate_backend`` held
back, and returns the one ``Accelerator`` it leaves in its namespace.
"""

from __future__ import annotations

import contextlib
import os
import runpy
from collections.abc import Iterator

from act_backend.spec.accelerator import Accelerator

_GENERATORS = ("generate_oracle", "generate_backend")


def load_spec(path: str | os.PathLike) -> Accelerator:
    """The accelerator the spec file at ``path`` builds (its ``base_dir`` is the file's
    directory unless the spec says otherwise). Raises ``ValueError`` when the file builds
    no accelerator or more than one."""
    with _generators_held_back():
        namespace = runpy.run_path(str(path), run_name="__main__")
    accs = [v for v in namespace.values() if isinstance(v, Accelerator)]
    if len(accs) != 1:
        raise ValueError(f"{path}: expected a spec building one Accelerator, found {len(accs)}")
    return accs[0]


@contextlib.contextmanager
def _generators_held_back() -> Iterator[None]:
    """Makes ``act_backend.generate_oracle`` and ``generate_backend`` do nothing while a spec
    file runs.

    ``act_backend`` imports its generators lazily (module ``__getattr__``), so only a name set
    on the module itself is put back afterwards; the lazy import then works again.
    """
    import act_backend

    namespace = vars(act_backend)
    saved = {name: namespace.get(name) for name in _GENERATORS}
    for name in saved:
        setattr(act_backend, name, lambda *args, **kwargs: None)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                delattr(act_backend, name)
            else:
                setattr(act_backend, name, value)
