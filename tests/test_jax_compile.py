"""act_backend.jax end to end on the QKV example: a JAX function compiled for QKV by each way
of naming the backend (a built backend, a spec file, an Accelerator generated on first use),
the decorator, the kernel cache (hit, miss, moved), a refusal at the JAX source line,
StableHLO input, ``check``, and attention with scaled scores."""

from __future__ import annotations

import inspect
import runpy
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers.examples import compile_kernel
from helpers.oracle_harness import bf16_tolerance, load_bf16, run_assembly

import act_backend
import act_backend.jax as ajax
from act_backend.jax import cache, compiler

pytestmark = pytest.mark.slow

SHAPE = (64, 64)


def attention(q, k, v):
    scores = q @ k.T
    e = jnp.exp(scores)
    return (e / jnp.sum(e, axis=1, keepdims=True)) @ v


def attention_with_tanh(q, k, v):
    scores = q @ k.T
    squashed = jnp.tanh(scores)
    return squashed @ v


TANH_LINE = inspect.getsourcelines(attention_with_tanh)[1] + 2


@pytest.fixture(scope="module")
def qkv(example_build):
    return example_build("QKV")


@pytest.fixture(scope="module")
def inputs(qkv):
    return [jnp.asarray(load_bf16(qkv.data_dir / f"{m}.dat", SHAPE)) for m in ("Q", "K", "V")]


@pytest.fixture(scope="module")
def reference(qkv, inputs, tmp_path_factory):
    """The example's hand-written attention.hlo compiled by the command line and simulated."""
    out = tmp_path_factory.mktemp("cli") / "attention.py"
    done = compile_kernel(qkv.backend, qkv.kernel, out)
    assert done.returncode == 0, done.stderr
    [result] = run_assembly(qkv.oracle_dir, out, [np.asarray(x) for x in inputs])
    return result


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENV, str(tmp_path / "kernels"))
    return tmp_path / "kernels"


def assert_attention(kernel, inputs, reference):
    out = kernel(*inputs)
    assert isinstance(out, jax.Array)
    assert (out.shape, out.dtype) == (SHAPE, jnp.bfloat16)
    # JAX sums the softmax rows in f32 and QKV's softmax instruction in bf16: the same
    # instructions as the hand-written kernel, within two bf16 ulps of the largest value.
    diff = np.max(np.abs(np.asarray(out, np.float32) - reference.astype(np.float32)))
    assert diff <= bf16_tolerance(reference), diff


def test_a_built_backend(qkv, inputs, reference):
    kernel = ajax.compile(attention, *inputs, backend=qkv.backend)
    assert not kernel.cached
    assert len(kernel.instructions) == 9 and kernel.cost == 9
    assert kernel.instructions[0].startswith("load_rm(")
    assert kernel.assembly.path.is_file()
    assert kernel.assembly.text == kernel.assembly.path.read_text()
    assert "def jit_attention(kernel, api)" in kernel.assembly.text
    assert kernel.report["status"] == "ok" and kernel.report["isa"] == "QKV"
    # One search: the emitted program is the chosen candidate.
    assert kernel.report["chosen_cost"] == kernel.report["program_cost"] == kernel.cost
    assert_attention(kernel, inputs, reference)
    out, run_ms = kernel.simulate(*inputs)
    assert run_ms > 0 and np.array_equal(np.asarray(out), np.asarray(kernel(*inputs)))


def test_example_arguments_may_be_shapes_only(qkv, inputs, reference):
    spec = jax.ShapeDtypeStruct(SHAPE, jnp.bfloat16)
    kernel = ajax.compile(attention, spec, spec, spec, backend=str(qkv.backend))
    assert_attention(kernel, inputs, reference)


def test_a_spec_file_already_built_is_not_generated_again(qkv, inputs, reference, capfd):
    before = qkv.backend.stat().st_mtime_ns
    kernel = ajax.compile(attention, *inputs, backend=qkv.workdir / "QKV.py")
    assert qkv.backend.stat().st_mtime_ns == before
    assert "generating" not in capfd.readouterr().err
    assert kernel.target.binary == qkv.backend.resolve()
    assert_attention(kernel, inputs, reference)


def test_an_accelerator_is_generated_on_first_use(qkv, inputs, reference, tmp_path,
                                                  monkeypatch, capfd):
    shutil.copyfile(qkv.workdir / "QKV.py", tmp_path / "QKV.py")
    with monkeypatch.context() as held:
        held.setattr(act_backend, "generate_oracle", lambda acc: None, raising=False)
        held.setattr(act_backend, "generate_backend", lambda acc: None, raising=False)
        acc = runpy.run_path(str(tmp_path / "QKV.py"))["qkv"]
    assert acc.base_dir == str(tmp_path)
    assert not (tmp_path / "backends").exists()

    kernel = ajax.compile(attention, *inputs, backend=acc)
    err = capfd.readouterr()
    assert "generating the QKV oracle and backend" in err.err
    assert "backend for QKV written to" in err.out
    assert (tmp_path / "backends" / "QKV").is_file()
    assert (tmp_path / "targets" / "QKV" / "oracle" / "isa.json").is_file()
    assert_attention(kernel, inputs, reference)

    built = (tmp_path / "backends" / "QKV").stat().st_mtime_ns
    again = ajax.compile(attention, *inputs, backend=acc)
    assert "generating" not in capfd.readouterr().err
    assert (tmp_path / "backends" / "QKV").stat().st_mtime_ns == built
    assert again.cached


def test_the_decorator_compiles_once_per_argument_types(qkv, inputs, reference, monkeypatch):
    @ajax.jit(backend=qkv.backend)
    def attend(q, k, v):
        return attention(q, k, v)

    out = attend(*inputs)
    assert np.array_equal(np.asarray(out), np.asarray(attend.compiled(*inputs)(*inputs)))
    first = attend.compiled(*inputs)
    monkeypatch.setattr(compiler, "compile_program", None)  # a second compile would fail
    assert attend.compiled(*[x + 0 for x in inputs]) is first
    assert attend.__name__ == "attend"


def test_the_cache_hits_on_the_same_hlo_and_backend_and_misses_otherwise(
        qkv, inputs, kernel_cache, monkeypatch, tmp_path):
    first = ajax.compile(attention, *inputs, backend=qkv.backend)
    assert not first.cached and first.entry.directory.parent == kernel_cache

    def no_backend(*args, **kwargs):
        raise AssertionError("the backend ran on a cache hit")

    with monkeypatch.context() as hit:
        hit.setattr(compiler.subprocess, "run", no_backend)
        second = ajax.compile(attention, *inputs, backend=qkv.backend)
    assert second.cached and second.entry.directory == first.entry.directory

    different = ajax.compile(lambda q, k, v: attention(k, q, v), *inputs, backend=qkv.backend)
    assert not different.cached and different.entry.directory != first.entry.directory

    moved = tmp_path / "moved"
    shutil.move(kernel_cache, moved)
    monkeypatch.setenv(cache.ENV, str(moved))
    with monkeypatch.context() as hit:
        hit.setattr(compiler.subprocess, "run", no_backend)
        third = ajax.compile(attention, *inputs, backend=qkv.backend)
    assert third.cached and third.entry.directory.parent == moved
    assert np.array_equal(np.asarray(third(*inputs)), np.asarray(first(*inputs)))
    for path in third.entry.directory.rglob("*"):
        if path.is_file():
            assert str(kernel_cache) not in path.read_text(errors="replace"), path


def test_an_inexpressible_operation_is_refused_at_its_jax_source_line(qkv, inputs,
                                                                      kernel_cache):
    with pytest.raises(ajax.CompileError) as caught:
        ajax.compile(attention_with_tanh, *inputs, backend=qkv.backend)
    text = str(caught.value)
    assert text.startswith(f"{__file__}:{TANH_LINE}: ")
    assert "no instruction of QKV computes `tanh`" in text
    assert "HLO line " in text and " tanh(" in text
    assert isinstance(caught.value, ValueError)
    assert list(kernel_cache.glob("*")) == [], "a refusal leaves nothing in the cache"


@pytest.mark.parametrize("debug_info", [False, True])
def test_stablehlo_text_compiles(qkv, inputs, debug_info):
    stablehlo = jax.jit(attention).lower(*inputs).as_text(debug_info=debug_info)
    assert "module @jit_attention" in stablehlo and "stablehlo.exponential" in stablehlo
    from_text = ajax.compile(stablehlo, backend=qkv.backend)
    from_function = ajax.compile(attention, *inputs, backend=qkv.backend)
    assert from_text.instructions == from_function.instructions
    assert np.array_equal(np.asarray(from_text(*inputs)), np.asarray(from_function(*inputs)))


def test_stablehlo_refusals_name_the_source_line_when_the_text_has_locations(qkv, inputs):
    stablehlo = jax.jit(attention_with_tanh).lower(*inputs).as_text(debug_info=True)
    with pytest.raises(ajax.CompileError, match=rf"^{__file__}:{TANH_LINE}: "):
        ajax.compile(stablehlo, backend=qkv.backend)


def test_check_compares_with_jax_on_the_cpu_in_ulps(qkv, inputs):
    exact = ajax.check(lambda q, k: q @ k, *inputs[:2], backend=qkv.backend)
    assert exact.max_ulps == 0 and len(exact.results) == 1
    assert str(exact).startswith("largest difference in ulps: 0 ")

    report = ajax.check(attention, *inputs, backend=qkv.backend)
    [result] = report.results
    expected = np.asarray(jax.jit(attention)(*inputs))
    assert result.max_abs <= bf16_tolerance(expected)
    assert 0 < report.max_ulps < float("inf")
    assert f"max {report.max_ulps:g} ulps" in str(report)


def scaled_attention(q, k, v):
    """Attention with its scores scaled by 1/sqrt(d), the rows summed in bf16 as QKV's softmax
    sums them (``jnp.sum`` would sum in f32: a different rounding)."""
    e = jnp.exp((q @ k.T) * 0.125)
    sums = jax.lax.reduce(e, jnp.zeros((), e.dtype), jax.lax.add, (1,))
    return (e / sums[:, None]) @ v


def test_a_scale_the_isa_cannot_multiply_is_a_product_with_a_multiple_of_the_identity(qkv,
                                                                                     inputs):
    # QKV has no multiply: the scores times 0.125 are the scores times 0.125 I, one more gemm.
    scores = ajax.check(lambda q, k: (q @ k.T) * 0.3, *inputs[:2], backend=qkv.backend)
    assert scores.max_ulps == 0, str(scores)
    kernel = ajax.compile(scaled_attention, *inputs, backend=qkv.backend)
    assert [call.split("(")[0] for call in kernel.instructions].count("gemm") == 3
    report = ajax.check(scaled_attention, *inputs, backend=qkv.backend)
    [result] = report.results
    assert result.max_abs <= bf16_tolerance(np.asarray(jax.jit(scaled_attention)(*inputs)))


def two_products(q, k):
    return q @ k, q @ k.T


def test_a_function_with_two_results(qkv, inputs):
    kernel = ajax.compile(two_products, *inputs[:2], backend=qkv.backend)
    out = kernel(*inputs[:2])
    assert isinstance(out, tuple) and len(out) == 2
    assert "output=[{'addr': 16384, 'shape': (64, 64), 'dtype': jnp.bfloat16}, " \
           "{'addr': 24576, 'shape': (64, 64), 'dtype': jnp.bfloat16}])" in kernel.assembly.text
    assert [call.split("(")[0] for call in kernel.instructions].count("store_rm") == 2
    report = ajax.check(two_products, *inputs[:2], backend=qkv.backend)
    assert len(report.results) == 2
    # Both products are one gemm each, as XLA computes them on the CPU: bit for bit.
    assert report.max_ulps == 0, str(report)
    assert not np.array_equal(np.asarray(out[0]), np.asarray(out[1]))


def test_a_time_limit_is_part_of_the_cache_key(qkv, inputs):
    plain = ajax.compile(attention, *inputs, backend=qkv.backend)
    limited = ajax.compile(attention, *inputs, backend=qkv.backend, time_limit=30.0)
    assert not limited.cached and limited.entry.directory != plain.entry.directory
    assert ajax.compile(attention, *inputs, backend=qkv.backend, time_limit=30.0).cached
    assert limited.instructions == plain.instructions
