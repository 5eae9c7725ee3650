"""The seed's acceptance: each example's attention kernel, compiled by its generated backend,
is the hand-written minimum, computes softmax(Q.K^T).V, and is reproducible bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from helpers.examples import (
    ATTENTION_EXAMPLES,
    EXAMPLES,
    compile_kernel,
    golden_paths,
    instruction_calls,
    parse_kernel_file,
    platform_record,
    read_golden_record,
)
from helpers.oracle_harness import bf16_tolerance, load_bf16, run_assembly

from act_backend.kernel import evaluate

pytestmark = pytest.mark.slow

CASES = [pytest.param(example, id=example.lower()) for example in ATTENTION_EXAMPLES]
SHAPE = (64, 64)


def inputs_of(build):
    return [load_bf16(build.data_dir / f"{m}.dat", SHAPE) for m in ("Q", "K", "V")]


@pytest.fixture(scope="module")
def compiled(example_build, tmp_path_factory):
    """example -> (build, assembly path), compiled once per module."""
    done = {}

    def get(example):
        if example not in done:
            build = example_build(example)
            out = tmp_path_factory.mktemp(f"asm_{example}") / "attention.py"
            run = compile_kernel(build.backend, build.kernel, out)
            assert run.returncode == 0, run.stderr
            done[example] = (build, out)
        return done[example]

    return get


@pytest.mark.parametrize("example", CASES)
def test_attention_compiles_to_the_hand_written_minimum(compiled, example):
    _, asm = compiled(example)
    calls = instruction_calls(asm)
    assert len(calls) == EXAMPLES[example][2], calls


@pytest.mark.parametrize("example", CASES)
def test_compiled_attention_matches_the_numpy_reference(compiled, example):
    build, asm = compiled(example)
    q, k, v = inputs_of(build)
    [out] = run_assembly(build.oracle_dir, asm, [q, k, v])
    reference = evaluate(parse_kernel_file(build.kernel), [q, k, v])
    assert out.shape == SHAPE and out.dtype == reference.dtype
    diff = np.max(np.abs(out.astype(np.float32) - reference.astype(np.float32)))
    assert diff <= bf16_tolerance(v), f"max |compiled - reference| = {diff}"


@pytest.mark.parametrize("example", CASES)
def test_compiled_attention_equals_its_golden(compiled, example):
    record = read_golden_record(example)
    if record is None:
        pytest.fail(f"no golden for {example}: run tests/regenerate.sh")
    here = platform_record()
    if (record["platform"], record["machine"]) != (here["platform"], here["machine"]):
        pytest.skip(f"golden recorded on {record['platform']}/{record['machine']}, "
                    f"running on {here['platform']}/{here['machine']}")
    build, asm = compiled(example)
    [out] = run_assembly(build.oracle_dir, asm, inputs_of(build))
    golden = golden_paths(example)[0].read_bytes()
    assert np.ascontiguousarray(out).view(np.uint16).astype("<u2").tobytes() == golden


@pytest.mark.parametrize("example", CASES)
def test_compiling_twice_gives_identical_assembly(compiled, example, tmp_path):
    build, asm = compiled(example)
    again = tmp_path / "again.py"
    run = compile_kernel(build.backend, build.kernel, again)
    assert run.returncode == 0, run.stderr
    assert again.read_bytes() == asm.read_bytes()
