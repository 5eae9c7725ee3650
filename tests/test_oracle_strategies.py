"""The oracle's two compilation strategies compute the same bits, and long kernels run.

``whole`` compiles a kernel as one XLA function; ``stepwise`` compiles each distinct
instruction signature once and runs the calls in sequence. For the example kernels (QKV and
QKV_new attention, every Gemmini instruction), a tiled Gemmini product, a long bf16 kernel of
many attention heads and the backend's own tiled kernels (slow: they build the backends), both
strategies must leave every output and every buffer of the final state byte for byte equal,
on seeded numbers, on random bit patterns of every type the kernels take (NaN payloads,
infinities, negative zeros and subnormals planted among them) and on numbers with those planted.
Kernels that only move data move every bit pattern exactly; kernels of thousands of
instructions are held to NumPy exactly.
"""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from assembly.probe_tables import probe_table
from helpers.bit_patterns import bits_of, every_pattern, specials, with_specials
from helpers.examples import ROOT, compile_kernel, parse_kernel_file
from helpers.oracle_harness import (
    ASSEMBLY_DIR,
    EXAMPLES_DIR,
    generate_example_oracle,
    load_bf16,
    load_oracle,
)
from helpers.oracle_kernels import (
    gemmini_every_instruction,
    gemmini_tiled_matmul,
    qkv_attention_heads,
    qkv_moves,
    qkv_new_moves,
)

from act_backend.oracle import write_oracle
from act_backend.oracle.loading import load_kernel


@pytest.fixture(scope="module")
def oracle_dirs(tmp_path_factory):
    """The oracle directory of each example, generated once for the module."""
    made = {}

    def get(example: str):
        if example not in made:
            made[example] = generate_example_oracle(
                EXAMPLES_DIR / example / f"{example}.py", tmp_path_factory.mktemp(example))
        return made[example]

    return get


def attention_inputs(example: str) -> list[np.ndarray]:
    data = EXAMPLES_DIR / example / "data"
    return [load_bf16(data / f"{name}.dat", (64, 64)) for name in "QKV"]


def example_kernel(example: str, assembly: str):
    return lambda: ((ASSEMBLY_DIR / assembly).read_text(), attention_inputs(example))


def generated(make, *args):
    def build():
        kernel = make(*args)
        return kernel.text, kernel.inputs

    return build


# example, what builds (assembly text, inputs)
SAME_BITS = [
    pytest.param("QKV", example_kernel("QKV", "qkv_attention.py"), id="qkv-attention"),
    pytest.param("QKV_new", example_kernel("QKV_new", "qkv_new_attention.py"),
                 id="qkv_new-attention"),
    pytest.param("Gemmini", generated(gemmini_every_instruction, 0),
                 id="gemmini-every-instruction"),
    pytest.param("Gemmini", generated(gemmini_tiled_matmul, 2, 3, 2, 1),
                 id="gemmini-tiled-2x3x2"),
    pytest.param("QKV", generated(qkv_attention_heads, 9, 2), id="qkv-9-heads"),
    pytest.param("QKV", generated(qkv_moves, 3), id="qkv-moves"),
    pytest.param("QKV_new", generated(qkv_new_moves, 5), id="qkv_new-moves"),
]


def run(oracle, text: str, inputs, strategy: str):
    """Outputs and final state, as bytes, of ``text`` compiled with ``strategy``; the kernel."""
    kernel = load_kernel(oracle, text)
    kernel("fsim-compile")(strategy=strategy)
    assert kernel.strategy == strategy
    outputs, _ = kernel("fsim")(*inputs)
    out_bytes = [np.asarray(o).reshape(-1).view(np.uint8) for o in outputs]
    state = {name: value.reshape(-1).view(np.uint8) for name, value in kernel.last_state.items()}
    # The final state (a second function, for a whole kernel) holds the outputs read.
    for tensor, out in zip(kernel.outputs, out_bytes, strict=True):
        assert np.array_equal(state["d0"][tensor.addr:tensor.addr + tensor.nbytes], out)
    return out_bytes, state, kernel


def assert_same_bits(oracle, text: str, inputs) -> None:
    whole_out, whole_state, _ = run(oracle, text, inputs, "whole")
    step_out, step_state, _ = run(oracle, text, inputs, "stepwise")
    assert any(o.any() for o in whole_out), "the kernel computes nothing to compare"
    for i, (a, b) in enumerate(zip(whole_out, step_out, strict=True)):
        assert np.array_equal(a, b), f"output {i} differs in {np.count_nonzero(a != b)} bytes"
    assert whole_state.keys() == step_state.keys()
    for name in whole_state:
        differ = np.count_nonzero(whole_state[name] != step_state[name])
        assert differ == 0, f"buffer {name} differs in {differ} bytes"


def as_built(inputs: list[np.ndarray]) -> list[np.ndarray]:
    return inputs


def patterns(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Random bit patterns in place of each input, every special of its type among them."""
    return [every_pattern(x.shape, x.dtype, seed=20 + i) for i, x in enumerate(inputs)]


def planted(inputs: list[np.ndarray]) -> list[np.ndarray]:
    """Each input with every special of its type planted once among its numbers."""
    return [with_specials(x, seed=40 + i, count=specials(x.dtype).size)
            for i, x in enumerate(inputs)]


# what a kernel's inputs are: as its builder seeds them, random bit patterns, specials planted
INPUTS = [pytest.param(as_built, id="seeded"), pytest.param(patterns, id="bit-patterns"),
          pytest.param(planted, id="specials-planted")]


@pytest.mark.parametrize("inputs", INPUTS)
@pytest.mark.parametrize("example, build", SAME_BITS)
def test_whole_and_stepwise_compute_the_same_bits(oracle_dirs, example, build, inputs):
    text, values = build()
    assert_same_bits(load_oracle(oracle_dirs(example)), text, inputs(values))


def moves(body: list[str]) -> str:
    """A QKV kernel of ``body``: inputs X at byte 0 and Y at 12288, output Z at 24576, each
    bf16[64,64] (128 bytes a row)."""
    tensor = "{{'addr': {}, 'shape': (64, 64), 'dtype': jnp.bfloat16}}"
    lines = ["import jax.numpy as jnp", "", "", "def moves(kernel, api):",
             f"    @kernel(hbm=32768, input=[{tensor.format(0)}, {tensor.format(12288)}],",
             f"            constant=[], output=[{tensor.format(24576)}])",
             "    def moves_():", *(f"        api.{line}" for line in body),
             "    return moves_", ""]
    return "\n".join(lines)


def zeros(rows: int) -> np.ndarray:
    return np.zeros((rows, 64), jnp.bfloat16)


# what a whole program reads besides values written whole: rows written by two calls, HBM
# partly overwritten, a stored value read back in part, rows no call wrote (zeros); then the
# expected Z from X and Y
READS = [
    pytest.param(["load_rm(n=32, addr_in=0, addr_out=0)",
                  "load_rm(n=32, addr_in=16384, addr_out=32)",
                  "store_rm(n=64, addr_in=0, addr_out=24576)"],
                 lambda x, y: np.concatenate([x[:32], y[32:]]), id="rows-of-two-writes"),
    pytest.param(["load_rm(n=64, addr_in=0, addr_out=0)",
                  "store_rm(n=32, addr_in=0, addr_out=16384)",
                  "load_rm(n=64, addr_in=12288, addr_out=64)",
                  "store_rm(n=64, addr_in=64, addr_out=24576)"],
                 lambda x, y: np.concatenate([y[:32], x[:32]]), id="hbm-partly-overwritten"),
    pytest.param(["load_rm(n=64, addr_in=0, addr_out=0)",
                  "store_rm(n=64, addr_in=0, addr_out=24576)",
                  "load_rm(n=32, addr_in=28672, addr_out=64)",
                  "store_rm(n=32, addr_in=64, addr_out=24576)"],
                 lambda x, y: np.concatenate([x[32:], x[32:]]), id="store-read-back-in-part"),
    pytest.param(["load_rm(n=32, addr_in=0, addr_out=0)",
                  "store_rm(n=64, addr_in=0, addr_out=24576)"],
                 lambda x, y: np.concatenate([x[:32], zeros(32)]), id="rows-never-written"),
    pytest.param(["load_rm(n=64, addr_in=0, addr_out=0)",
                  "store_rm(n=16, addr_in=8, addr_out=24576)"],
                 lambda x, y: np.concatenate([x[8:24], zeros(48)]), id="rows-inside-a-write"),
]


# example, kernel that only moves data (with its exact expected outputs)
MOVES = [pytest.param("QKV", qkv_moves, id="qkv"), pytest.param("QKV_new", qkv_new_moves,
                                                               id="qkv_new")]


@pytest.mark.parametrize("strategy", ["whole", "stepwise"])
@pytest.mark.parametrize("example, make", MOVES)
def test_data_movement_instructions_move_every_bit_pattern(oracle_dirs, example, make,
                                                           strategy):
    kernel = make(seed=12)
    outputs, _, _ = run(load_oracle(oracle_dirs(example)), kernel.text, kernel.inputs, strategy)
    for i, (got, expected) in enumerate(zip(outputs, kernel.expected, strict=True)):
        differ = np.count_nonzero(got != bits_of(expected).reshape(-1).view(np.uint8))
        assert differ == 0, f"output {i} differs in {differ} bytes"


@pytest.mark.parametrize("body, expected", READS)
def test_reads_beside_whole_writes_move_the_same_bytes(oracle_dirs, body, expected):
    # Every bf16 bit pattern, signalling NaNs and NaN payloads included, moves unchanged.
    oracle = load_oracle(oracle_dirs("QKV"))
    x, y = (every_pattern((64, 64), jnp.bfloat16, seed) for seed in (8, 9))
    assert_same_bits(oracle, moves(body), [x, y])
    for strategy in ("whole", "stepwise"):
        (z,), _, _ = run(oracle, moves(body), [x, y], strategy)
        np.testing.assert_array_equal(z, expected(x, y).reshape(-1).view(np.uint8))


@pytest.mark.parametrize("strategy", ["whole", "stepwise"])
def test_loads_leave_every_bit_pattern_in_the_buffer(oracle_dirs, strategy):
    # d1 is read only as the final state: a whole program computes it by a second function.
    oracle = load_oracle(oracle_dirs("QKV"))
    x, y = (every_pattern((64, 64), jnp.bfloat16, seed) for seed in (10, 11))
    body = ["load_rm(n=64, addr_in=0, addr_out=64)", "load_rm(n=32, addr_in=12288, addr_out=0)",
            "load_rm(n=32, addr_in=16384, addr_out=32)", "store_rm(n=64, addr_in=64, "
            "addr_out=24576)"]
    (z,), state, _ = run(oracle, moves(body), [x, y], strategy)
    np.testing.assert_array_equal(z, bits_of(x).reshape(-1).view(np.uint8))
    d1 = bits_of(oracle_state(state, "d1", jnp.bfloat16))
    np.testing.assert_array_equal(d1, np.concatenate([bits_of(y), bits_of(x)]))


def oracle_state(state: dict[str, np.ndarray], name: str, dtype) -> np.ndarray:
    """Buffer ``name`` of a final state (as ``run`` gives it, bytes) as ``dtype`` rows of 64."""
    return state[name].view(dtype).reshape(-1, 64)


TILING = ROOT / "act_backend" / "backend" / "crate" / "tests" / "data" / "tiling"

# the examples' own kernels, and the backend's tiled kernels: bf16 attention split into row
# tiles and heads, int8 products tiled along every dimension, stored through strided stores,
# with shorter last tiles
BACKEND_KERNELS = [
    *((example, path) for example in ("QKV", "QKV_new", "Gemmini")
      for path in sorted((EXAMPLES_DIR / example / "kernels").glob("*.hlo"))),
    ("QKV", TILING / "qkv_attention_256_rows.hlo"),
    ("QKV", TILING / "qkv_attention_4_heads.hlo"),
    ("Gemmini", TILING / "gemmini_matmul_64x64x64.hlo"),
    ("Gemmini", TILING / "gemmini_matmul_16x16x64.hlo"),
    ("Gemmini", TILING / "gemmini_relu_matmul_128x128.hlo"),
    ("Gemmini", TILING / "gemmini_matmul_40x20x24.hlo"),
]

# the NumPy type of each HLO element type the kernels take
NUMPY_TYPES = {"bf16": np.dtype(jnp.bfloat16), "s8": np.dtype(np.int8),
               "s32": np.dtype(np.int32)}


def seeded_inputs(kernel) -> list[np.ndarray]:
    """Numbers for each parameter of an HLO kernel: bf16 in [-1, 1], integers in int8's range."""
    rng = np.random.default_rng(11)
    inputs = []
    for p in parse_kernel_file(kernel).entry.parameters():
        shape, dtype = tuple(p.type.shape), NUMPY_TYPES[p.type.dtype]
        if dtype == NUMPY_TYPES["bf16"]:
            inputs.append(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        else:
            inputs.append(rng.integers(-128, 127, shape, endpoint=True).astype(dtype))
    return inputs


@pytest.mark.slow
@pytest.mark.parametrize("example, kernel", BACKEND_KERNELS,
                         ids=[p.stem if e == "Gemmini" or p.parent == TILING else f"{e}-{p.stem}"
                              for e, p in BACKEND_KERNELS])
def test_the_backends_kernels_compute_the_same_bits(example_build, tmp_path, example, kernel):
    build = example_build(example)
    asm = tmp_path / f"{kernel.stem}.py"
    done = compile_kernel(build.backend, kernel, asm)
    assert done.returncode == 0, done.stderr
    oracle = load_oracle(build.oracle_dir)
    for inputs in (as_built, patterns, planted):
        assert_same_bits(oracle, asm.read_text(), inputs(seeded_inputs(kernel)))


def test_blocks_of_a_two_dimensional_buffer_at_run_time_starts(tmp_path):
    # d4 is addressed by (row, column): the stepwise steps take both starts at run time.
    oracle = load_oracle(write_oracle(probe_table(), tmp_path / "oracle"))
    kernel = sys.modules[f"{oracle.__name__}.decorator"].kernel
    api = sys.modules[f"{oracle.__name__}.api"]
    spec = {"shape": (2, 3, 16), "dtype": jnp.float32}

    def blocks():
        @kernel(hbm=8192, input=[{"addr": 0, **spec}, {"addr": 512, **spec}],
                output=[{"addr": 4096, **spec}, {"addr": 4608, **spec}])
        def body():
            api.load_block(h=2, w=3, addr_in=0, row=1, col=4)
            api.load_block(h=2, w=3, addr_in=512, row=2, col=0)
            api.store_block_x2(h=2, w=3, row=1, col=4, addr_out=4096)
            api.store_block_x2(h=2, w=3, row=2, col=0, addr_out=4608)
        return body

    rng = np.random.default_rng(5)
    a, b = (rng.standard_normal((2, 3, 16)).astype(np.float32) for _ in range(2))
    results = {}
    for strategy in ("whole", "stepwise"):
        k = blocks()
        k("fsim-compile")(strategy=strategy)
        outputs, _ = k("fsim")(a, b)
        results[strategy] = [np.asarray(o) for o in outputs], k.last_state["d4"]
    (x, y), d4 = results["stepwise"]
    np.testing.assert_array_equal(x, 2 * a)
    np.testing.assert_array_equal(y, 2 * b)
    np.testing.assert_array_equal(d4, results["whole"][1])


# what the kernel is, its calls and distinct signatures, what "auto" compiles it with
AUTO = [
    pytest.param("QKV", example_kernel("QKV", "qkv_attention.py"), 9, 6, "whole",
                 id="attention"),
    pytest.param("Gemmini", generated(gemmini_tiled_matmul, 1, 1, 1), 4, 3, "whole",
                 id="4-calls-3-signatures"),
    pytest.param("Gemmini", generated(gemmini_tiled_matmul, 2, 2, 5), 64, 4, "whole",
                 id="64-calls-4-signatures"),
    pytest.param("Gemmini", generated(gemmini_tiled_matmul, 1, 1, 22), 67, 4, "stepwise",
                 id="67-calls-4-signatures"),
    pytest.param("Gemmini", generated(gemmini_every_instruction), 17, 17, "whole",
                 id="17-calls-17-signatures"),
]


@pytest.mark.parametrize("example, build, calls, signatures, strategy", AUTO)
def test_auto_compiles_whole_up_to_16_calls_a_signature(oracle_dirs, example, build, calls,
                                                          signatures, strategy):
    oracle = load_oracle(oracle_dirs(example))
    executable = sys.modules[f"{oracle.__name__}.executable"]
    text, _ = build()
    kernel = load_kernel(oracle, text)
    keys = executable.signatures(kernel.program())
    assert (len(keys), len(set(keys))) == (calls, signatures)
    kernel("fsim-compile")()
    assert kernel.strategy == strategy


def test_fsim_without_fsim_compile_uses_auto(oracle_dirs):
    oracle = load_oracle(oracle_dirs("Gemmini"))
    long = gemmini_tiled_matmul(3, 3, 3, seed=4)
    kernel = load_kernel(oracle, long.text)
    (out,), _ = kernel("fsim")(*long.inputs)
    assert kernel.strategy == "stepwise"
    np.testing.assert_array_equal(np.asarray(out), long.expected[0])


def test_each_signature_is_compiled_once(oracle_dirs):
    oracle = load_oracle(oracle_dirs("Gemmini"))
    executable = sys.modules[f"{oracle.__name__}.executable"]
    long = gemmini_tiled_matmul(3, 4, 5)
    kernel = load_kernel(oracle, long.text)
    kernel("fsim-compile")(strategy="stepwise")
    # mvin, matmul32, mac32, mvout_acc: 3 * 4 * 16 = 192 calls, 4 compiled steps
    assert len(kernel.program().calls) == 192
    assert len(executable.compiled_steps) == 4
    # A second kernel of the same HBM size reuses them all.
    again = load_kernel(oracle, long.text.replace("gemmini_matmul", "again_matmul"))
    again("fsim-compile")(strategy="stepwise")
    assert len(executable.compiled_steps) == 4


def test_stepwise_runs_start_from_a_zeroed_state(oracle_dirs):
    # Steps update the state in place (donated buffers): no run may see another's values.
    oracle = load_oracle(oracle_dirs("Gemmini"))
    first, second = gemmini_tiled_matmul(2, 2, 3, seed=1), gemmini_tiled_matmul(2, 2, 3, seed=2)
    kernel = load_kernel(oracle, first.text)
    kernel("fsim-compile")(strategy="stepwise")
    for long in (first, second, first):
        (out,), _ = kernel("fsim")(*long.inputs)
        np.testing.assert_array_equal(np.asarray(out), long.expected[0])


def test_an_unknown_strategy_is_refused(oracle_dirs):
    oracle = load_oracle(oracle_dirs("QKV"))
    kernel = load_kernel(oracle, (ASSEMBLY_DIR / "qkv_attention.py").read_text())
    with pytest.raises(ValueError, match=r"kernel qkv_: unknown strategy 'xla' \(strategies: "
                                         r"auto, whole, stepwise\)"):
        kernel("fsim-compile")(strategy="xla")


def test_a_thousand_instruction_kernel_is_exact_and_costed(oracle_dirs):
    oracle = load_oracle(oracle_dirs("Gemmini"))
    long = gemmini_tiled_matmul(7, 7, 7, seed=3)
    assert long.count == 1078
    kernel = load_kernel(oracle, long.text)
    # mvin and mvout_acc cost 1, a product its DIM_I rows: 49 * (14 + 7 * 16 + 1)
    assert kernel("cost")() == 6223
    (out,), _ = kernel("fsim")(*long.inputs)
    assert kernel.strategy == "stepwise"
    np.testing.assert_array_equal(np.asarray(out), long.expected[0])


def test_a_five_thousand_instruction_kernel_is_exact(oracle_dirs):
    oracle = load_oracle(oracle_dirs("Gemmini"))
    long = gemmini_tiled_matmul(12, 12, 12, seed=6)
    assert long.count == 5328
    kernel = load_kernel(oracle, long.text)
    kernel("fsim-compile")()
    assert kernel.strategy == "stepwise"
    (out,), _ = kernel("fsim")(*long.inputs)
    np.testing.assert_array_equal(np.asarray(out), long.expected[0])


@pytest.mark.skipif(not any(d.platform == "gpu" for d in jax.devices()), reason="needs a GPU")
@pytest.mark.parametrize("example, build", SAME_BITS)
def test_whole_and_stepwise_compute_the_same_bits_on_a_gpu(oracle_dirs, example, build):
    oracle = load_oracle(oracle_dirs(example))
    sys.modules[f"{oracle.__name__}.decorator"].set_simulation_backend("GPU")
    try:
        text, inputs = build()
        whole_out, whole_state, _ = run(oracle, text, inputs, "whole")
        step_out, step_state, _ = run(oracle, text, inputs, "stepwise")
    finally:
        sys.modules[f"{oracle.__name__}.decorator"].set_simulation_backend("CPU")
    for a, b in zip(whole_out, step_out, strict=True):
        assert np.array_equal(a, b)
    for name in whole_state:
        assert np.array_equal(whole_state[name], step_state[name]), name
