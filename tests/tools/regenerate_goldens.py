"""Rewrite the goldens of tests/goldens/ from the compiled kernels (tests/regenerate.sh).

For each example: generate its oracle and backend in a scratch directory, compile its attention
kernel, simulate it on the example's data with the generated oracle, check it against the NumPy
reference (a golden is never written from a kernel that fails it), then write
``tests/goldens/<example>/attention.dat`` (raw little-endian bf16) and ``attention.json``
(the oracle, jax, platform and machine it comes from, and the assembly it was simulated from).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from helpers.examples import (  # noqa: E402
    ATTENTION_EXAMPLES,
    build_example,
    compile_kernel,
    golden_paths,
    instruction_calls,
    parse_kernel_file,
    platform_record,
)
from helpers.oracle_harness import bf16_tolerance, load_bf16, run_assembly  # noqa: E402

from act_backend.kernel import evaluate  # noqa: E402


def regenerate(example: str, scratch: Path) -> None:
    build = build_example(example, scratch)
    asm = scratch / f"{example}_attention.py"
    run = compile_kernel(build.backend, build.kernel, asm)
    if run.returncode != 0:
        raise SystemExit(f"{example}: the backend failed:\n{run.stderr}")
    inputs = [load_bf16(build.data_dir / f"{m}.dat", (64, 64)) for m in ("Q", "K", "V")]
    [out] = run_assembly(build.oracle_dir, asm, inputs)
    reference = evaluate(parse_kernel_file(build.kernel), inputs)
    diff = float(np.max(np.abs(out.astype(np.float32) - reference.astype(np.float32))))
    if diff > bf16_tolerance(inputs[2]):
        raise SystemExit(f"{example}: compiled attention is {diff} away from the reference; "
                         "no golden written")
    dat, meta = golden_paths(example)
    dat.parent.mkdir(parents=True, exist_ok=True)
    dat.write_bytes(np.ascontiguousarray(out).view(np.uint16).astype("<u2").tobytes())
    record = platform_record() | {
        "kernel": "examples/" + example + "/kernels/attention.hlo",
        "instructions": instruction_calls(asm),
        "assembly_sha256": hashlib.sha256(asm.read_bytes()).hexdigest(),
        "max_abs_diff_from_reference": diff,
    }
    meta.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
    print(f"{example}: wrote {dat} ({len(record['instructions'])} instructions, "
          f"max |out - reference| = {diff})")


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="act-goldens-") as scratch:
        for example in ATTENTION_EXAMPLES:
            regenerate(example, Path(scratch))


if __name__ == "__main__":
    main()
