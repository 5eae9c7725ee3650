"""The C++ memory allocator (act_backend/backend/allocator), built with CMake and driven through
act-alloc-cli: what the build reports and exports, that it links and runs against an OR-Tools
directory laid out like the Docker image's, the answers to placement requests, that the bytes
sent to CP-SAT follow OR-Tools' own schema, and that 40 blocks are placed optimally, fast and
identically run to run.

The placements are checked here by Python code that knows only the request format, and the
optimum of the 40-block request is recomputed with OR-Tools' Python API from the request alone.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import act_backend

pytestmark = pytest.mark.slow

ALLOCATOR = Path(act_backend.__file__).parent / "backend" / "allocator"
REPOSITORY = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Build:
    directory: Path
    configure_log: str

    @property
    def cli(self) -> Path:
        return self.directory / "act-alloc-cli"


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Build:
    directory = tmp_path_factory.mktemp("allocator-build")
    configure = subprocess.run(
        ["cmake", "-S", str(ALLOCATOR), "-B", str(directory), "-DACT_WERROR=ON",
         f"-DPython3_EXECUTABLE={sys.executable}"],
        capture_output=True, text=True, check=False)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    compiled = subprocess.run(["cmake", "--build", str(directory), "--parallel", "2"],
                              capture_output=True, text=True, check=False)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    return Build(directory, configure.stdout)


def allocate(build: Build, request: dict | str, *extra: str) -> dict:
    text = request if isinstance(request, str) else json.dumps(request)
    run = subprocess.run([str(build.cli), *extra, "-"], input=text, capture_output=True,
                         text=True, check=False, timeout=120)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


# --- requests, built the way the backend writes them ---------------------------------------

def variable(name: str, lo: int, hi: int) -> dict:
    return {"name": name, "lo": lo, "hi": hi}


def block(buffer: str, capacity: int | None, start: int, size: int, live: tuple[int, int]) -> dict:
    return {"buffer": buffer, "capacity": capacity, "start": start, "size": size,
            "time": list(live)}


def forty_blocks() -> dict:
    """A scheduled kernel's worth of values: 28 on-chip tiles in a 256-row buffer, each live
    for a few steps after it is produced, and 12 scratch values in HBM. The objective is the
    backend's: first the end of the HBM in use, then the sum of the on-chip starts."""
    rnd = random.Random(7)
    variables: list[dict] = []
    equalities: list[dict] = []
    blocks: list[dict] = []

    def new(name: str, lo: int, hi: int) -> int:
        variables.append(variable(name, lo, hi))
        return len(variables) - 1

    on_chip = []
    for i in range(28):
        row = new(f"v{i}.row", 0, 255)
        on_chip.append(row)
        blocks.append(block("d1", 256, row, rnd.choice([16, 32, 64]), (i, i + rnd.randint(1, 4))))
    end = new("hbm.end", 0, 1 << 20)
    for j in range(12):
        byte = new(f"h{j}.byte", 0, 1 << 20)
        size = rnd.choice([512, 1024, 2048])
        blocks.append(block("d0", None, byte, size, (2 * j, 2 * j + rnd.randint(1, 6))))
        slack = new(f"h{j}.slack", 0, 1 << 20)
        # end == byte + size + slack: end lies at or above the end of every HBM block.
        equalities.append({"terms": [[end, 1], [byte, -1], [slack, -1]], "const": -size})
    weight = 255 * len(on_chip) + 1
    objective = [[end, weight]] + [[row, 1] for row in on_chip]
    return {"variables": variables, "equalities": equalities, "blocks": blocks,
            "objective": objective}


# --- an independent reading of the request's rules -----------------------------------------

def violations(request: dict, values: list[int]) -> list[str]:
    found = []
    if len(values) != len(request["variables"]):
        return [f"{len(values)} values for {len(request['variables'])} variables"]
    for v, value in zip(request["variables"], values, strict=True):
        if not v["lo"] <= value <= v["hi"]:
            found.append(f"{v['name']} = {value} outside [{v['lo']}, {v['hi']}]")
    for k, eq in enumerate(request.get("equalities", [])):
        if sum(c * values[i] for i, c in eq["terms"]) + eq["const"] != 0:
            found.append(f"equalities[{k}] does not hold")
    blocks = request.get("blocks", [])
    for k, b in enumerate(blocks):
        start = values[b["start"]]
        if start < 0 or (b["capacity"] is not None and start + b["size"] > b["capacity"]):
            found.append(f"blocks[{k}] at {start} leaves {b['buffer']}")
    for k, a in enumerate(blocks):
        for m in range(k + 1, len(blocks)):
            b = blocks[m]
            live = a["time"][0] < b["time"][1] and b["time"][0] < a["time"][1]
            sa, sb = values[a["start"]], values[b["start"]]
            nonempty = a["size"] > 0 and b["size"] > 0
            touch = nonempty and sa < sb + b["size"] and sb < sa + a["size"]
            if a["buffer"] == b["buffer"] and live and touch:
                found.append(f"blocks[{k}] and blocks[{m}] overlap")
    return found


def objective_value(request: dict, values: list[int]) -> int:
    return sum(c * values[i] for i, c in request.get("objective", []))


def optimum_by_python_api(request: dict) -> int:
    """The request's optimum, solved with OR-Tools' Python API from the request alone."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    xs = [model.new_int_var(v["lo"], v["hi"], v["name"]) for v in request["variables"]]
    for eq in request.get("equalities", []):
        model.add(sum(c * xs[i] for i, c in eq["terms"]) + eq["const"] == 0)
    by_buffer: dict[str, tuple[list, list]] = {}
    for b in request["blocks"]:
        start = xs[b["start"]]
        model.add(start >= 0)
        if b["capacity"] is not None:
            model.add(start + b["size"] <= b["capacity"])
        begin, end = b["time"]
        times, addresses = by_buffer.setdefault(b["buffer"], ([], []))
        times.append(model.new_fixed_size_interval_var(begin, end - begin, ""))
        addresses.append(model.new_fixed_size_interval_var(start, b["size"], ""))
    for times, addresses in by_buffer.values():
        model.add_no_overlap_2d(times, addresses)
    model.minimize(sum(c * xs[i] for i, c in request["objective"]))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = 60
    assert solver.solve(model) == cp_model.OPTIMAL
    return int(solver.objective_value)


# --- the build ------------------------------------------------------------------------------

def test_the_build_log_says_which_or_tools_and_json_headers_it_uses(build: Build):
    assert "-- act_alloc: OR-Tools from " in build.configure_log
    assert "-- act_alloc: nlohmann/json from " in build.configure_log


def test_the_link_file_lists_archive_or_tools_run_paths_and_the_cpp_runtime(build: Build):
    lines = (build.directory / "act_alloc_link.txt").read_text().splitlines()
    assert Path(lines[0]).name == "libact_alloc.a" and Path(lines[0]).is_file()
    search = [line[2:] for line in lines if line.startswith("-L")]
    library = [line[3:] for line in lines if line.startswith("-l:")]
    assert len(search) == 1 and len(library) == 1
    assert (Path(search[0]) / library[0]).exists()
    run_paths = [line.removeprefix("-Wl,-rpath,") for line in lines
                 if line.startswith("-Wl,-rpath,")]
    assert search[0] in run_paths
    assert all(Path(p).is_dir() for p in run_paths)
    assert lines[-1] == "-lstdc++"


def test_the_unit_tests_pass_under_ctest(build: Build):
    ctest = subprocess.run(["ctest", "--output-on-failure"], cwd=build.directory,
                           capture_output=True, text=True, check=False, timeout=300)
    assert ctest.returncode == 0, ctest.stdout + ctest.stderr
    assert "tests passed" in ctest.stdout


def test_an_ortools_dir_laid_out_like_the_docker_image_links_and_runs(tmp_path: Path):
    # The image lays the wheel's libraries out as links in /opt/ortools/lib
    # (docker/install-ortools.sh). The wheel's own relative run paths miss from there, so the
    # executable's run path has to find every library OR-Tools loads.
    layout = tmp_path / "ortools"
    # The script asks `python3` where the wheel is: make that this interpreter.
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    laid_out = subprocess.run(["sh", str(REPOSITORY / "docker" / "install-ortools.sh"),
                               str(layout)], capture_output=True, text=True, check=False,
                              env={**os.environ, "PATH": path})
    assert laid_out.returncode == 0, laid_out.stdout + laid_out.stderr
    directory = tmp_path / "build"
    configure = subprocess.run(
        ["cmake", "-S", str(ALLOCATOR), "-B", str(directory), "-DACT_WERROR=ON",
         f"-DORTOOLS_DIR={layout}", "-DACT_ALLOC_BUILD_TESTS=OFF"],
        capture_output=True, text=True, check=False)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    assert f"-- act_alloc: OR-Tools from ORTOOLS_DIR {layout}: " in configure.stdout
    compiled = subprocess.run(["cmake", "--build", str(directory), "--target", "act-alloc-cli",
                               "--parallel", "2"], capture_output=True, text=True, check=False)
    assert compiled.returncode == 0, compiled.stdout + compiled.stderr
    request = json.dumps({"variables": [variable("a", 1, 3)], "objective": [[0, 1]]})
    run = subprocess.run([str(directory / "act-alloc-cli"), "-"], input=request,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"status": "solved", "values": [1], "message": "optimal"}


# --- answers ---------------------------------------------------------------------------------

ANSWERS = [
    pytest.param(
        {"variables": [variable("a", 0, 127), variable("b", 0, 127)],
         "blocks": [block("d1", 128, 0, 64, (0, 4)), block("d1", 128, 1, 64, (2, 6))],
         "objective": [[0, 1], [1, 2]]},
        "solved", [64, 0], "optimal", id="two-live-tiles-fill-the-buffer"),
    pytest.param(
        {"variables": [variable("a", 0, 127), variable("b", 0, 127)],
         "blocks": [block("d1", 128, 0, 128, (0, 4)), block("d1", 128, 1, 128, (4, 8))],
         "objective": [[0, 1], [1, 1]]},
        "solved", [0, 0], "optimal", id="back-to-back-lifetimes-share-rows"),
    pytest.param(
        {"variables": [variable("a", 0, 127), variable("b", 0, 127)],
         "blocks": [block("d1", 128, 0, 64, (0, 5)), block("d1", 128, 1, 96, (3, 9))]},
        "infeasible", [], 'buffer "d1" has capacity 128 but the 2 blocks live at time 3 need 160',
        id="live-tiles-beyond-capacity"),
    pytest.param(
        {"variables": [variable("a", 0, 127), variable("b", 0, 127)],
         "equalities": [{"terms": [[0, 1], [1, -1]], "const": 0}],
         "blocks": [block("d1", 128, 0, 64, (0, 5)), block("d1", 128, 1, 64, (3, 9))]},
        "infeasible", [], "no placement satisfies", id="equalities-force-an-overlap"),
    pytest.param(
        {"variables": [variable("a", 0, 127)],
         "blocks": [{"buffer": "d1", "capacity": 128, "start": 0, "size": 64}]},
        "invalid", [], "blocks[0].time: missing", id="block-without-time"),
]


@pytest.mark.parametrize(("request_", "status", "values", "message"), ANSWERS)
def test_answers(build: Build, request_: dict, status: str, values: list[int], message: str):
    response = allocate(build, request_)
    assert response["status"] == status
    assert response["values"] == values
    assert message in response["message"]
    if status == "solved":
        assert violations(request_, response["values"]) == []


def test_forty_blocks_are_placed_optimally_within_a_second_and_identically(build: Build):
    request = forty_blocks()
    path = build.directory / "forty.json"
    path.write_text(json.dumps(request))
    outputs = []
    for _ in range(2):
        began = time.perf_counter()
        run = subprocess.run([str(build.cli), str(path)], capture_output=True, text=True,
                             check=True, timeout=60)
        elapsed = time.perf_counter() - began
        assert elapsed < 1.0, f"40 blocks took {elapsed:.3f} s"
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    response = json.loads(outputs[0])
    assert response["status"] == "solved"
    assert response["message"] == "optimal"
    assert violations(request, response["values"]) == []
    assert objective_value(request, response["values"]) == optimum_by_python_api(request)


def test_the_placement_check_itself_catches_an_overlap():
    # The independent checker above must itself catch an overlap, or the tests prove nothing.
    request = {"variables": [variable("a", 0, 127), variable("b", 0, 127)],
               "blocks": [block("d1", 128, 0, 64, (0, 4)), block("d1", 128, 1, 64, (2, 6))]}
    assert violations(request, [0, 32]) == ["blocks[0] and blocks[1] overlap"]
    assert violations(request, [0, 64]) == []


# --- the bytes sent to CP-SAT, read with OR-Tools' own schema ------------------------------

def test_the_model_and_parameters_parse_with_or_tools_own_schema(build: Build, tmp_path: Path):
    from google.protobuf.unknown_fields import UnknownFieldSet
    from ortools.sat import cp_model_pb2, sat_parameters_pb2

    request = {
        "variables": [variable("a", 0, 127), variable("b", 0, 127), variable("c", -4, 4)],
        "equalities": [{"terms": [[2, 1], [0, -1]], "const": 0}],
        "blocks": [block("d1", 128, 0, 64, (0, 4)), block("d1", 128, 1, 32, (2, 6)),
                   block("d0", None, 2, 8, (0, 9))],
        "objective": [[1, 3]],
        "limits": {"max_deterministic_time": 2.5, "random_seed": 11},
    }
    model_path, parameters_path = tmp_path / "model.pb", tmp_path / "parameters.pb"
    response = allocate(build, request, "--dump-model", str(model_path),
                        "--dump-parameters", str(parameters_path))
    assert response["status"] == "solved"

    model = cp_model_pb2.CpModelProto.FromString(model_path.read_bytes())
    assert [list(v.domain) for v in model.variables] == [[0, 64], [0, 96], [0, 4]]
    kinds = [c.WhichOneof("constraint") for c in model.constraints]
    # One equality; per block of non-zero size and lifetime a time and an address interval;
    # one no_overlap_2d for d1 (d0 holds a single block and needs none).
    assert kinds == ["linear"] + ["interval"] * 6 + ["no_overlap_2d"]
    linear = model.constraints[0].linear
    assert list(linear.vars) == [0, 2] and list(linear.coeffs) == [-1, 1]
    assert list(linear.domain) == [0, 0]
    boxes = model.constraints[-1].no_overlap_2d
    assert list(boxes.x_intervals) == [1, 3] and list(boxes.y_intervals) == [2, 4]
    time_box, address_box = model.constraints[1].interval, model.constraints[2].interval
    assert (time_box.start.offset, time_box.size.offset, time_box.end.offset) == (0, 4, 4)
    assert list(address_box.start.vars) == [0] and address_box.size.offset == 64
    assert list(address_box.end.vars) == [0] and address_box.end.offset == 64
    assert (list(model.objective.vars), list(model.objective.coeffs)) == ([1], [3])
    for message in [model, *model.variables, *model.constraints]:
        assert len(UnknownFieldSet(message)) == 0

    parameters = sat_parameters_pb2.SatParameters.FromString(parameters_path.read_bytes())
    assert parameters.num_workers == 1
    assert parameters.random_seed == 11
    assert parameters.max_deterministic_time == 2.5
    assert parameters.max_time_in_seconds == 60.0
    assert parameters.linearization_level == 2
    assert len(UnknownFieldSet(parameters)) == 0


# --- the command line -----------------------------------------------------------------------

def test_the_cli_reads_a_file_argument_like_stdin(build: Build, tmp_path: Path):
    request = {"variables": [variable("a", 3, 9)], "objective": [[0, -1]]}
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    from_file = subprocess.run([str(build.cli), str(path)], capture_output=True, text=True,
                               check=True).stdout
    assert json.loads(from_file) == allocate(build, request) == {
        "status": "solved", "values": [9], "message": "optimal"}


def test_the_cli_names_a_request_file_it_cannot_read(build: Build, tmp_path: Path):
    missing = tmp_path / "missing.json"
    run = subprocess.run([str(build.cli), str(missing)], capture_output=True, text=True,
                         check=False)
    assert run.returncode == 2
    assert f"cannot read request file '{missing}'" in run.stderr
