"""Building the examples as a user would, in a scratch directory, for the end-to-end tests.

``build_example(name, work_root)`` copies ``examples/<name>/`` and runs its spec with the
interpreter running the tests (``python QKV.py``), which generates the oracle and the backend
there; ``compile_kernel`` runs the backend binary; ``golden_paths`` and ``platform_record``
describe the recorded goldens of ``tests/goldens/``.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from act_backend.hlo.ir import Module
from act_backend.kernel import parse_hlo

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES_DIR = ROOT / "examples"
GOLDENS_DIR = ROOT / "tests" / "goldens"

# example directory -> (accelerator name, spec file, instructions of the hand-written minimum
# attention; None for an example without the attention kernel)
EXAMPLES = {
    "QKV": ("QKV", "QKV.py", 9),
    "QKV_new": ("QKV_new", "QKV_new.py", 10),
    "Gemmini": ("Gemmini", "Gemmini.py", None),
}
ATTENTION_EXAMPLES = [example for example, (_, _, count) in EXAMPLES.items()
                      if count is not None]
# Test accelerators under tests/specs/, built the same way (name -> spec file).
TEST_SPECS = {"Vec": "Vec.py", "RowReduce": "RowReduce.py", "Contiguous": "Contiguous.py",
              "TallQKV": "TallQKV.py", "Lanes": "Lanes.py",
              "OnChipTranspose": "OnChipTranspose.py", "FixedArray": "FixedArray.py",
              "WeightStationary": "WeightStationary.py", "Registers": "Registers.py",
              "ByteTiles": "ByteTiles.py", "StridedTiles": "StridedTiles.py"}
SPECS_DIR = ROOT / "tests" / "specs"


@dataclass(frozen=True)
class ExampleBuild:
    example: str
    name: str
    workdir: Path

    @property
    def backend(self) -> Path:
        return self.workdir / "backends" / self.name

    @property
    def oracle_dir(self) -> Path:
        return self.workdir / "targets" / self.name / "oracle"

    @property
    def kernel(self) -> Path:
        return self.workdir / "kernels" / "attention.hlo"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"


def build_example(example: str, work_root: Path) -> ExampleBuild:
    """Copies the example (or test accelerator) and runs its spec there; raises with the
    spec's output on failure."""
    if example in TEST_SPECS:
        name, spec, source = example, TEST_SPECS[example], SPECS_DIR / example
    else:
        name, spec, _ = EXAMPLES[example]
        source = EXAMPLES_DIR / example
    workdir = work_root / example
    skip = shutil.ignore_patterns("targets", "backends", "*.py[co]", "attention.py")
    shutil.copytree(source, workdir, ignore=skip)
    run_spec(workdir, spec)
    return ExampleBuild(example, name, workdir)


def build_spec_file(spec: Path, work_root: Path) -> ExampleBuild:
    """Copies a spec file of any accelerator (one that generates its oracle and backend when
    run) into ``work_root/<file stem>`` and runs it there; the accelerator's name is read
    from the backend it wrote."""
    workdir = work_root / spec.stem
    workdir.mkdir(parents=True)
    shutil.copy(spec, workdir / spec.name)
    run_spec(workdir, spec.name)
    backends = sorted(p.name for p in (workdir / "backends").iterdir()) \
        if (workdir / "backends").is_dir() else []
    if len(backends) != 1:
        raise RuntimeError(f"python {spec.name} wrote backends {backends}; expected one: "
                           "does it call generate_oracle and generate_backend?")
    return ExampleBuild(spec.stem, backends[0], workdir)


def run_spec(workdir: Path, spec: str) -> None:
    """Runs ``spec`` in ``workdir``; raises with its output on failure."""
    # The spec imports act_backend from this tree, not from wherever it is installed.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    run = subprocess.run([sys.executable, spec], cwd=workdir, capture_output=True, text=True,
                         env=env)
    if run.returncode != 0:
        raise RuntimeError(f"python {spec} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")


def compile_kernel(backend: Path, kernel: Path, output: Path,
                   *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(backend), "--input", str(kernel), "--output", str(output), *extra],
                          capture_output=True, text=True)


def parse_kernel_file(path: Path) -> Module:
    return parse_hlo(path.read_text(), str(path))


def instruction_calls(asm_path: Path) -> list[str]:
    """The instruction names an assembly file calls, in order."""
    calls = []
    for line in asm_path.read_text().splitlines():
        text = line.strip()
        if text.startswith("api."):
            calls.append(text[len("api."):text.index("(")])
    return calls


def platform_record() -> dict[str, str]:
    """What a golden depends on: the oracle, JAX and the machine that ran it."""
    import jax
    import jaxlib

    import act_backend

    return {
        "oracle": f"act-backend {act_backend.__version__}",
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platform": jax.default_backend(),
        "machine": platform.machine(),
    }


def golden_paths(example: str, kernel: str = "attention") -> tuple[Path, Path]:
    base = GOLDENS_DIR / example
    return base / f"{kernel}.dat", base / f"{kernel}.json"


def read_golden_record(example: str, kernel: str = "attention") -> dict | None:
    _, meta = golden_paths(example, kernel)
    return json.loads(meta.read_text()) if meta.exists() else None
