"""Sweep files: what a valid one loads as, every mistake reported at its line and key before
any point runs, and the points a grid or a random sample gives (no Ray, no backend)."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from act_backend.sweep import SweepFileError, load_sweep, points_of
from act_backend.sweep.locations import line_of
from act_backend.sweep.model import CostModel, Parameter
from act_backend.sweep.points import grid, sample

ROOT = Path(__file__).resolve().parents[1]

SPEC = '''
from act_backend import Accelerator


def family(rows: int, fused: bool = True, name: str = "Fam"):
    return Accelerator(name)


not_a_function = 3
'''

JAX_KERNELS = '''
def add(a, b):
    return a + b
'''

VALID = '''
[spec]
file = "spec.py"
function = "family"

[parameters]
rows = [64, 128]
fused = [true, false]

[[kernels]]
hlo = "matmul.hlo"
'''


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "spec.py").write_text(SPEC)
    (tmp_path / "jax_kernels.py").write_text(JAX_KERNELS)
    shutil.copy(ROOT / "tests" / "kernels" / "matmul.hlo", tmp_path / "matmul.hlo")
    (tmp_path / "bad.hlo").write_text("HloModule m\n\nENTRY e {\n  x = bf16[2 parameter(0)\n}\n")
    (tmp_path / "model.c").write_text("int act_cost(void) { return 0; }\n")
    (tmp_path / "model.o").write_bytes(b"\x7fELF")
    return tmp_path


def write(workdir: Path, text: str) -> Path:
    path = workdir / "sweep.toml"
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def test_a_valid_file_loads_with_paths_resolved_and_defaults(workdir):
    sweep = load_sweep(write(workdir, VALID + '''
[[kernels]]
jax = "jax_kernels.py:add"
args = ["bf16[64,64]", "s32[]"]

[backend]
cost = ["default", "model.o"]
time_limit = 30

[run]
workers = 2
output = "out"
'''))
    assert sweep.spec.file == str(workdir / "spec.py") and sweep.spec.function == "family"
    assert sweep.parameters == (Parameter("rows", "int", values=(64, 128)),
                                Parameter("fused", "bool", values=(True, False)))
    hlo, jax_kernel = sweep.kernels
    assert (hlo.name, hlo.path, hlo.is_jax) == ("matmul", str(workdir / "matmul.hlo"), False)
    assert hlo.hlo == (workdir / "matmul.hlo").read_text()
    assert (jax_kernel.name, jax_kernel.function, jax_kernel.file) == \
        ("add", "add", str(workdir / "jax_kernels.py"))
    assert [str(a) for a in jax_kernel.args] == ["bf16[64,64]", "s32[]"]
    assert sweep.cost_models == (CostModel("default"), CostModel("model.o",
                                                                  str(workdir / "model.o")))
    assert sweep.time_limit == 30.0
    assert (sweep.workers, sweep.retries, sweep.tolerance_ulps) == (2, 2, 4.0)
    assert sweep.output_dir == workdir / "out"
    assert (sweep.inputs.seed, sweep.inputs.scale) == (0, 0.5)


def test_the_output_defaults_to_the_file_stem_beside_it(workdir):
    assert load_sweep(write(workdir, VALID)).output_dir == workdir / "sweep-results"


def test_integers_and_floats_of_one_parameter_are_floats(workdir):
    sweep = load_sweep(write(workdir, VALID.replace("[64, 128]", "[64, 128.5]")))
    assert sweep.parameters[0] == Parameter("rows", "float", values=(64.0, 128.5))


# (what is wrong, the sweep file, text on the line the error must name (its last occurrence;
# None: the error names the file alone), what the message must say)
ERRORS = [
    ("toml syntax", VALID.replace("[parameters]", "[parameters"), "[parameters",
     "not valid TOML"),
    ("no spec", VALID.replace('[spec]\nfile = "spec.py"\nfunction = "family"\n', ""), None,
     "the [spec] table is missing"),
    ("unknown table", VALID + "\n[runs]\nworkers = 2\n", "[runs]", "unknown table"),
    ("unknown spec key", VALID.replace('function = "family"',
                                       'function = "family"\nfunctoin = "x"'),
     "functoin", "[spec]: functoin: unknown key"),
    ("file and module", VALID.replace('function = "family"',
                                      'function = "family"\nmodule = "m"'),
     "[spec]", "one of the two"),
    ("spec file missing", VALID.replace('"spec.py"', '"nowhere.py"'), "nowhere.py",
     "no such file"),
    ("spec function missing", VALID.replace('"family"', '"nothere"'), "nothere",
     "defines no 'nothere'"),
    ("spec attribute not a function", VALID.replace('"family"', '"not_a_function"'),
     "not_a_function", "not a function"),
    ("parameter not taken", VALID.replace("fused = [true, false]", 'colour = ["red"]'),
     "colour", "takes no parameter 'colour'"),
    ("required parameter missing", VALID.replace("rows = [64, 128]\n", ""), "[parameters]",
     "needs 'rows', which [parameters] does not give"),
    ("mixed types", VALID.replace("[64, 128]", '[64, "x"]'), "rows =", "of one type"),
    ("empty values", VALID.replace("[64, 128]", "[]"), "rows =", "non-empty list"),
    ("reserved name", VALID.replace("fused = [true, false]", "kernel = [1]"), "kernel =",
     "names a column of the results table"),
    ("repeated value", VALID.replace("[64, 128]", "[64, 64]"), "rows =",
     "the value 64 is listed twice"),
    ("range without sample", VALID.replace("[64, 128]", "{ min = 64, max = 128 }"),
     "rows =", "a range needs [sample]"),
    ("sample without count", VALID + "\n[sample]\nseed = 1\n", "[sample]", "missing"),
    ("no kernels", VALID.replace('[[kernels]]\nhlo = "matmul.hlo"\n', ""), None,
     "no [[kernels]]"),
    ("hlo and jax", VALID + '\n[[kernels]]\nhlo = "matmul.hlo"\njax = "x.py:f"\n',
     "[[kernels]]", "[[kernels]] 2: give an HLO file"),
    ("hlo missing", VALID.replace("matmul.hlo", "gone.hlo"), "gone.hlo", "no such file"),
    ("hlo does not parse", VALID.replace("matmul.hlo", "bad.hlo"), "bad.hlo",
     "the kernel does not parse: "),
    ("jax without args", VALID + '\n[[kernels]]\njax = "jax_kernels.py:add"\n',
     "[[kernels]]", "[[kernels]] 2: a JAX kernel needs args"),
    ("jax bad argument", VALID + '\n[[kernels]]\njax = "jax_kernels.py:add"\n'
     'args = ["bf16(64)"]\n', "args =", "argument 1: expected an element type and a shape"),
    ("jax unknown dtype", VALID + '\n[[kernels]]\njax = "jax_kernels.py:add"\n'
     'args = ["b16[4]"]\n', "args =", "unknown element type 'b16'"),
    ("jax function missing", VALID + '\n[[kernels]]\njax = "jax_kernels.py:sub"\n'
     'args = ["s32[]"]\n', 'jax = "jax_kernels.py:sub"', "defines no 'sub'"),
    ("duplicate kernel", VALID + '\n[[kernels]]\nhlo = "matmul.hlo"\n', "[[kernels]]",
     "a second kernel named 'matmul'"),
    ("workers zero", VALID + "\n[run]\nworkers = 0\n", "workers", "must be at least 1"),
    ("unknown run key", VALID + "\n[run]\nworker = 2\n", "worker =", "unknown key"),
    ("cost not a library", VALID + '\n[backend]\ncost = "model.c"\n', "cost =",
     "a cost library is an object file"),
    ("negative tolerance", VALID + "\n[check]\ntolerance_ulps = -1\n", "tolerance_ulps",
     "must be at least 0"),
    ("zero scale", VALID + "\n[inputs]\nscale = 0\n", "scale", "must be greater than 0"),
]


@pytest.mark.parametrize(("text", "marker", "fragment"),
                         [case[1:] for case in ERRORS], ids=[case[0] for case in ERRORS])
def test_a_mistake_is_reported_at_its_line_and_key(workdir, text, marker, fragment):
    path = write(workdir, text)
    with pytest.raises(SweepFileError) as raised:
        load_sweep(path)
    message = str(raised.value)
    if marker is None:
        assert message.startswith(f"{path}: "), message
    else:
        line = max(number for number, text in enumerate(path.read_text().splitlines(), start=1)
                   if marker in text)
        assert message.startswith(f"{path}:{line}"), message
    assert fragment in message


def test_an_unreadable_file_is_an_error_naming_it(tmp_path):
    with pytest.raises(SweepFileError, match="cannot read the sweep file"):
        load_sweep(tmp_path / "missing.toml")


@pytest.mark.parametrize(("text", "path", "line"), [
    ("a = 1\n[t]\nb = 2\n", ("t", "b"), 3),
    ("a = 1\n[t]\nb = 2\n", ("t", "c"), 2),            # a missing key: its table's line
    ("a = 1\n[t]\nb = 2\n", ("u", "c"), None),
    ("[[k]]\nx = 1\n[[k]]\nx = 2\n", ("k", 1, "x"), 4),
    ("[[k]]\nx = 1\n[[k]]\nx = 2\n", ("k", 1), 3),
    ("[t]\n\"quoted key\" = 1\n", ("t", "quoted key"), 2),
    ("t.b = 1\n", ("t", "b"), 1),
    ("[t]\nv = [\n  1,\n]\n", ("t", "v", 0), 2),         # inside a value: the key's line
])
def test_line_of_finds_keys_tables_and_array_entries(text, path, line):
    assert line_of(text, path) == line


def test_a_grid_lists_every_combination_the_last_parameter_fastest():
    params = (Parameter("a", "int", values=(1, 2)), Parameter("b", "str", values=("x", "y")))
    assert grid(params) == [(("a", 1), ("b", "x")), (("a", 1), ("b", "y")),
                            (("a", 2), ("b", "x")), (("a", 2), ("b", "y"))]
    assert grid(()) == [()]


def test_cost_models_are_the_outermost_axis(workdir):
    sweep = load_sweep(write(workdir, VALID + '\n[backend]\ncost = ["default", "model.o"]\n'))
    points = points_of(sweep)
    assert [p.index for p in points] == list(range(8))
    assert [p.cost_model.label for p in points] == ["default"] * 4 + ["model.o"] * 4
    assert [p.kwargs for p in points[:4]] == [p.kwargs for p in points[4:]]
    assert points[5].describe() == "rows=64, fused=False, cost=model.o"


def test_a_sample_of_a_grid_is_drawn_without_replacement_in_grid_order():
    params = (Parameter("a", "int", values=tuple(range(10))),
              Parameter("b", "bool", values=(True, False)))
    drawn = sample(params, 5, seed=3)
    everything = grid(params)
    assert len(set(drawn)) == 5
    assert [everything.index(p) for p in drawn] == sorted(everything.index(p) for p in drawn)
    assert sample(params, 5, seed=3) == drawn
    assert sample(params, 5, seed=4) != drawn
    assert sample(params, 100, seed=0) == everything


def test_a_sample_of_ranges_stays_in_bounds_and_repeats_no_point():
    params = (Parameter("rows", "int", low=64, high=67), Parameter("scale", "float",
                                                                  low=0.5, high=1.0))
    drawn = sample(params, 6, seed=0)
    assert len(drawn) == 6 and len(set(drawn)) == 6
    for (_, rows), (_, scale) in drawn:
        assert isinstance(rows, int) and 64 <= rows <= 67
        assert isinstance(scale, float) and 0.5 <= scale < 1.0
    assert sample(params, 6, seed=0) == drawn


def test_a_sample_cannot_draw_more_distinct_points_than_there_are():
    assert len(sample((Parameter("rows", "int", low=1, high=3),), 10, seed=0)) == 3
