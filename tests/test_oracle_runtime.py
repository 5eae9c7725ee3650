"""The oracle runtime simulates kernels: modes, state, slices, constants, devices and the table's
expressions.

These tests write oracles from hand-written ISA tables (tests/assembly), so they exercise the
runtime on its own; test_oracle_examples.py covers oracles generated from the example specs.
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from assembly.probe_tables import probe_table, qkv_table
from helpers.oracle_harness import (
    ASSEMBLY_DIR,
    EXAMPLES_DIR,
    bf16_tolerance,
    load_bf16,
    load_kernel,
    load_oracle,
    run_assembly,
)

from act_backend.oracle import write_oracle

BF16 = ml_dtypes.bfloat16


@pytest.fixture(scope="module")
def qkv_dir(tmp_path_factory):
    return write_oracle(qkv_table(), tmp_path_factory.mktemp("qkv") / "oracle")


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    oracle = load_oracle(write_oracle(probe_table(), tmp_path_factory.mktemp("probe") / "oracle"))
    return (sys.modules[f"{oracle.__name__}.decorator"].kernel,
            sys.modules[f"{oracle.__name__}.api"])


@pytest.fixture(scope="module")
def qkv_inputs():
    data = EXAMPLES_DIR / "QKV" / "data"
    return [load_bf16(data / f"{name}.dat", (64, 64)) for name in "QKV"]


def attention(q, k, v):
    """softmax(Q.K^T).V in f32 from the bf16 inputs."""
    q, k, v = (x.astype(np.float32) for x in (q, k, v))
    e = np.exp(q @ k.T)
    return (e / e.sum(axis=1, keepdims=True)) @ v


def test_the_hand_written_qkv_kernel_computes_attention(qkv_dir, qkv_inputs):
    (out,) = run_assembly(qkv_dir, ASSEMBLY_DIR / "qkv_attention.py", qkv_inputs)
    assert out.shape == (64, 64) and out.dtype == BF16
    expected = attention(*qkv_inputs)
    assert np.max(np.abs(out.astype(np.float32) - expected)) <= bf16_tolerance(qkv_inputs[2])


def test_modes_compile_run_and_count(qkv_dir, qkv_inputs):
    oracle = load_oracle(qkv_dir)
    k = load_kernel(oracle, ASSEMBLY_DIR / "qkv_attention.py")
    assert k("cost")() == 9
    specs, compile_ms = k("fsim-compile")()
    assert [s["addr"] for s in specs] == [0, 8192, 16384]
    assert all(s["shape"] == (64, 64) and s["dtype"] == jnp.bfloat16 for s in specs)
    assert compile_ms > 0
    outputs, run_ms = k("fsim")(*qkv_inputs)
    assert run_ms > 0
    assert len(outputs) == 1 and isinstance(outputs[0], jax.Array)


def test_fsim_before_fsim_compile_compiles_first(qkv_dir, qkv_inputs):
    oracle = load_oracle(qkv_dir)
    first = load_kernel(oracle, ASSEMBLY_DIR / "qkv_attention.py")
    (direct,), _ = first("fsim")(*qkv_inputs)
    second = load_kernel(oracle, ASSEMBLY_DIR / "qkv_attention.py")
    second("fsim-compile")()
    (compiled,), _ = second("fsim")(*qkv_inputs)
    np.testing.assert_array_equal(np.asarray(direct).view(np.uint16),
                                  np.asarray(compiled).view(np.uint16))


def test_each_run_starts_from_a_zeroed_state(qkv_dir, qkv_inputs):
    oracle = load_oracle(qkv_dir)
    k = load_kernel(oracle, ASSEMBLY_DIR / "qkv_attention.py")
    (a,), _ = k("fsim")(*qkv_inputs)
    zeros = [np.zeros((64, 64), BF16)] * 3
    (b,), _ = k("fsim")(*zeros)
    (c,), _ = k("fsim")(*qkv_inputs)
    # Q = K = 0: uniform softmax of V = 0 is 0, whatever the previous run left behind.
    assert not np.asarray(b).astype(np.float32).any()
    np.testing.assert_array_equal(np.asarray(a).view(np.uint16), np.asarray(c).view(np.uint16))


def test_slices_along_two_access_dims_read_and_write_their_block(probe):
    kernel, api = probe
    block = np.arange(2 * 3 * 16, dtype=np.float32).reshape(2, 3, 16)

    @kernel(hbm=2048,
            input=[{"addr": 0, "shape": (2, 3, 16), "dtype": jnp.float32}],
            output=[{"addr": 1024, "shape": (2, 3, 16), "dtype": jnp.float32}])
    def blocks():
        api.load_block(h=2, w=3, addr_in=0, row=1, col=4)
        api.store_block_x2(h=2, w=3, row=1, col=4, addr_out=1024)

    (out,), _ = blocks("fsim")(block)
    np.testing.assert_array_equal(np.asarray(out), 2 * block)
    d4 = blocks.last_state["d4"]
    assert d4.shape == (4, 8, 16)
    np.testing.assert_array_equal(d4[1:3, 4:7], block)
    untouched = np.ones((4, 8), bool)
    untouched[1:3, 4:7] = False
    assert not d4[untouched].any()


def test_constants_are_in_hbm_before_the_first_instruction(probe):
    kernel, api = probe
    value = [[float(i * 16 + j) for j in range(16)] for i in range(3)]

    @kernel(hbm=1024, input=[],
            constant=[{"addr": 256, "shape": (3, 16), "dtype": jnp.float32, "value": value}],
            output=[{"addr": 512, "shape": (3, 16), "dtype": jnp.float32}])
    def doubled():
        api.load_block(h=1, w=3, addr_in=256, row=0, col=0)
        api.store_block_x2(h=1, w=3, row=0, col=0, addr_out=512)

    (out,), _ = doubled("fsim")()
    np.testing.assert_array_equal(np.asarray(out), 2 * np.array(value, np.float32))


def test_an_instruction_reading_its_own_output_slice_sees_the_previous_value(qkv_dir):
    # softmax reads and writes the same d2 rows: a second softmax sees the first's result.
    oracle = load_oracle(qkv_dir)
    kernel = sys.modules[f"{oracle.__name__}.decorator"].kernel
    api = sys.modules[f"{oracle.__name__}.api"]
    spec = {"shape": (64, 64), "dtype": jnp.bfloat16}

    @kernel(hbm=3 * 8192, input=[{"addr": 0, **spec}, {"addr": 8192, **spec}],
            output=[{"addr": 16384, **spec}])
    def twice():
        api.load_rm(n=64, addr_in=0, addr_out=0)
        api.load_rm(n=64, addr_in=8192, addr_out=64)
        api.gemm(addr_1=0, addr_2=64, addr_out=0)
        api.softmax(n=32, addr=16)
        api.softmax(n=32, addr=16)
        api.mov(n=64, addr_in=0, addr_out=0)
        api.store_rm(n=64, addr_in=0, addr_out=16384)

    rng = np.random.default_rng(3)
    a = (rng.standard_normal((64, 64)) * 0.2).astype(BF16)
    b = np.eye(64, dtype=BF16)
    (out,), _ = twice("fsim")(a, b)
    out = np.asarray(out).astype(np.float32)

    def softmax(x):
        e = np.exp(x)
        return e / e.sum(axis=1, keepdims=True)

    af = a.astype(np.float32)
    np.testing.assert_array_equal(out[:16], af[:16])
    np.testing.assert_array_equal(out[48:], af[48:])
    np.testing.assert_allclose(out[16:48], softmax(softmax(af[16:48])), atol=2 ** -9)
    assert twice("cost")() == 7


def test_cost_counts_calls_without_compiling(probe):
    kernel, api = probe

    @kernel(hbm=1024, input=[], output=[])
    def empty():
        pass

    assert empty("cost")() == 0


def test_the_cpu_backend_is_accepted_and_an_unknown_one_refused(qkv_dir):
    oracle = load_oracle(qkv_dir)
    decorator = sys.modules[f"{oracle.__name__}.decorator"]
    decorator.set_simulation_backend("CPU")
    with pytest.raises(ValueError, match=r"set_simulation_backend: unknown backend 'TPU' "
                                         r"\(accepted: 'CPU', 'GPU'\)"):
        decorator.set_simulation_backend("TPU")


@pytest.mark.skipif(any(d.platform == "gpu" for d in jax.devices()),
                    reason="this machine has a GPU")
def test_asking_for_a_gpu_where_there_is_none_says_so(qkv_dir):
    oracle = load_oracle(qkv_dir)
    decorator = sys.modules[f"{oracle.__name__}.decorator"]
    with pytest.raises(RuntimeError, match=r"set_simulation_backend\('GPU'\): JAX finds no "
                                           r"GPU here \(platforms present: cpu\)"):
        decorator.set_simulation_backend("GPU")


@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()),
                    reason="needs a GPU")
def test_the_gpu_backend_computes_what_the_cpu_computes(qkv_dir, qkv_inputs):
    (cpu,) = run_assembly(qkv_dir, ASSEMBLY_DIR / "qkv_attention.py", qkv_inputs, "CPU")
    (gpu,) = run_assembly(qkv_dir, ASSEMBLY_DIR / "qkv_attention.py", qkv_inputs, "GPU")
    expected = attention(*qkv_inputs)
    tolerance = bf16_tolerance(qkv_inputs[2])
    assert np.max(np.abs(gpu.astype(np.float32) - expected)) <= tolerance
    assert np.max(np.abs(gpu.astype(np.float32) - cpu.astype(np.float32))) <= tolerance


def _e(value):
    """A table expression from a small Python form: int, 'attr', (op, a, b) or ('neg', a)."""
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, str):
        return {"attr": value}
    op, *args = value
    return {"op": op, "args": [_e(a) for a in args]}


# expression, environment: compiled once into Python, it computes what evaluate computes
EXPRESSIONS = [
    (("+", "c.n", 3), {"c.n": 4}),
    (("*", ("-", "a.x", 1), "c.n"), {"a.x": -2, "c.n": 5}),
    (("/", "a.x", 16), {"a.x": -17}),  # floor division
    (("%", "a.x", 16), {"a.x": -17}),  # floor remainder
    (("neg", ("%", 7, "c.n")), {"c.n": -3}),
    (2 ** 40, {}),
]


@pytest.mark.parametrize("form, env", EXPRESSIONS)
def test_compiled_expressions_compute_what_evaluate_computes(form, env):
    from act_backend.oracle.runtime.table import compile_exprs, evaluate

    expr = _e(form)
    assert compile_exprs([expr, expr])(env) == (evaluate(expr, env, "x"),) * 2


def test_a_compiled_expression_that_fails_leaves_the_message_to_evaluate():
    from act_backend.oracle.runtime.table import OracleError, compile_exprs, evaluate_all

    exprs = [_e(("+", "c.n", 1)), _e(("/", "c.n", "a.zero"))]
    compiled = compile_exprs(exprs)
    with pytest.raises(OracleError, match=r"^size 1: division by zero"):
        evaluate_all(exprs, compiled, {"c.n": 4, "a.zero": 0}, lambda k: f"size {k}")
    with pytest.raises(OracleError, match=r"^size 0: expression mentions @c.n, which has no "):
        evaluate_all(exprs, compiled, {"a.zero": 1}, lambda k: f"size {k}")
    assert compile_exprs([{"op": "^", "args": [_e(1), _e(2)]}]) is None
