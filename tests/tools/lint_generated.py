"""Lint what the generator writes (tests/lint.sh): for each example, generate its backend the way
a user does, run cargo clippy over the crate with warnings denied and build its C++ allocator
with -Wall -Wextra -Werror; then generate a crate with a cost library (an object file built from
tests/cost_models/penalise.c) and run clippy over that one too.

Generating a backend never runs these checks; this script is the only place they run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.examples import EXAMPLES, ROOT, build_example  # noqa: E402

from act_backend.backend.cargo import build_env, cache_dir  # noqa: E402

COST_DRIVER = """\
import runpy
import act_backend
from act_backend.backend.generator import generate_backend

act_backend.generate_backend = lambda acc, cost=None: generate_backend(acc, cost={cost!r})
runpy.run_path({spec!r}, run_name="__main__")
"""


def run(command: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=cwd, env=env, check=True)


def clippy(crate: Path, cost: Path | None) -> None:
    env = build_env(cache_dir(), cost)
    run(["cargo", "clippy", "--release", "--locked", "--all-targets", "--", "-D", "warnings"],
        crate, env)


def allocator_werror(crate: Path, build_dir: Path) -> None:
    env = build_env(cache_dir(), None)
    args = ["cmake", "-S", str(crate / "allocator"), "-B", str(build_dir), "-DACT_WERROR=ON",
            "-DCMAKE_BUILD_TYPE=Release"]
    if env.get("ORTOOLS_WHEEL_LIBDIR"):
        args.append(f"-DORTOOLS_WHEEL_LIBDIR={env['ORTOOLS_WHEEL_LIBDIR']}")
    run(args, crate, env)
    run(["cmake", "--build", str(build_dir), "--parallel", str(os.cpu_count() or 2)], crate, env)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="act-lint-") as scratch_dir:
        scratch = Path(scratch_dir)
        for example in EXAMPLES:
            build = build_example(example, scratch)
            crate = build.workdir / "targets" / build.name / "backend"
            print(f"\n-- {example}: clippy", flush=True)
            clippy(crate, None)
            print(f"\n-- {example}: allocator with -Werror", flush=True)
            allocator_werror(crate, scratch / f"allocator-{example}")

        print("\n-- QKV with a cost library: clippy", flush=True)
        cost_dir = scratch / "cost"
        cost_dir.mkdir()
        model = cost_dir / "model.o"
        run(["cc", "-c", "-fPIC", "-Wall", "-Wextra", "-Werror", "-DPENALISED=\"gemm\"",
             str(ROOT / "tests" / "cost_models" / "penalise.c"), "-o", str(model)], cost_dir)
        build = build_example("QKV", cost_dir)
        driver = build.workdir / "generate_with_cost.py"
        driver.write_text(COST_DRIVER.format(cost=str(model), spec="QKV.py"))
        run([sys.executable, driver.name], build.workdir)
        clippy(build.workdir / "targets" / build.name / "backend", model)
    print("\nlint: generated backends are clean")


if __name__ == "__main__":
    try:
        main()
    except subprocess.CalledProcessError as failed:
        sys.exit(f"lint: `{' '.join(failed.cmd)}` failed with exit status {failed.returncode}")
