"""Code lenses: "Generate backend" on each ``Accelerator(...)`` line of a spec, and
"Compile kernel" at the top of a ``.hlo`` file, with the backend(s) found for it."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from lsp.spec.model import SpecModel
from lsp.text_map import TextRange

GENERATE_BACKEND = "act.generateBackend"
COMPILE_KERNEL = "act.compileKernel"
SIMULATE_KERNEL = "act.simulateKernel"

# How far up from a kernel to look for a ``backends/`` folder (kernels/ is one level down
# from the spec's folder in the examples' layout).
SEARCH_LEVELS = 3


@dataclass(frozen=True)
class Lens:
    range: TextRange
    title: str
    command: str | None = None
    arguments: list[Any] = field(default_factory=list)


def spec_lenses(model: SpecModel, uri: str) -> list[Lens]:
    lenses = []
    for acc in model.accelerators:
        line = acc.range.start[0]
        where = TextRange((line, 0), (line, 0))
        lenses.append(Lens(where, f"Generate backend {acc.name}", GENERATE_BACKEND,
                           [uri, acc.name]))
    return lenses


def kernel_lenses(uri: str, path: str | None) -> list[Lens]:
    top = TextRange((0, 0), (0, 0))
    backends = find_backends(path) if path else []
    if not backends:
        return [Lens(top, "Compile kernel: no backend found (generate one from its spec)")]
    if len(backends) == 1:
        return [Lens(top, "Compile kernel", COMPILE_KERNEL, [uri, backends[0]])]
    return [Lens(top, f"Compile kernel with {os.path.basename(b)}", COMPILE_KERNEL, [uri, b])
            for b in backends]


def find_backends(kernel_path: str) -> list[str]:
    """Executable files in the nearest ``backends/`` folder above a kernel."""
    directory = os.path.dirname(os.path.abspath(kernel_path))
    for _ in range(SEARCH_LEVELS):
        folder = os.path.join(directory, "backends")
        if os.path.isdir(folder):
            found = sorted(
                os.path.join(folder, name) for name in os.listdir(folder)
                if os.path.isfile(os.path.join(folder, name))
                and os.access(os.path.join(folder, name), os.X_OK))
            if found:
                return found
        parent = os.path.dirname(directory)
        if parent == directory:
            break
        directory = parent
    return []
