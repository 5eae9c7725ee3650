"""Cost models linked into a backend: object files, static and shared libraries each replace
the default model and change which candidate wins; with a model of the user's the lower bound
selection knows for the table's costs is not used, and every candidate is tried; a model that
fails ends the compile with an error naming the candidate; the backend always ends with a
normal exit, so the model's atexit handlers run; a time limit that fires mid-loop emits the
best candidate so far."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cost_models import build_model, copy_example, load_spec

from act_backend import generate_backend

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    return copy_example("QKV_new", tmp_path_factory.mktemp("cost-models"))


def compile_kernel(project: Path, out: Path, *extra: str, log: Path | None = None):
    backend = project / "backends" / "QKV_new"
    kernel = project / "kernels" / "attention.hlo"
    env = dict(os.environ)
    env.pop("ACT_TEST_COST_LOG", None)
    if log is not None:
        env["ACT_TEST_COST_LOG"] = str(log)
    return subprocess.run([str(backend), "--input", str(kernel), "--output", str(out), *extra],
                          capture_output=True, text=True, env=env)


def calls(path: Path) -> list[str]:
    names = []
    for line in path.read_text().splitlines():
        text = line.strip()
        if text.startswith("api."):
            names.append(text[4:text.index("(")])
    return names


def model_cost(path: Path, penalised: str) -> float:
    names = calls(path)
    return len(names) + (1e300 if penalised in names else 0.0)


@pytest.fixture(scope="module")
def default_run(project, tmp_path_factory):
    """The default model's choice: its first candidate meets selection's lower bound (ten
    instructions), so no other is tried."""
    generate_backend(load_spec(project / "QKV_new.py"))
    report_dir = tmp_path_factory.mktemp("default-report")
    done = compile_kernel(project, report_dir / "out.py", "--report-dir", str(report_dir))
    assert done.returncode == 0, done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert report["chosen_cost"] == 10, "QKV_new runs attention in ten instructions"
    assert (report["stop_reason"], report["candidates_tried"]) == ("lower bound reached", 1)
    return report, report_dir


@pytest.fixture(scope="module")
def every_candidate(project, tmp_path_factory):
    """A model of the user's that counts instructions as the default one does: no bound is
    known for it, so every candidate is tried, and the same one wins."""
    model = build_model("penalise", "o", tmp_path_factory.mktemp("count"),
                        PENALISED='"no such instruction"')
    generate_backend(load_spec(project / "QKV_new.py"), cost=model)
    report_dir = tmp_path_factory.mktemp("count-report")
    done = compile_kernel(project, report_dir / "out.py", "--report-dir", str(report_dir))
    assert done.returncode == 0, done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert report["stop_reason"] != "lower bound reached" and report["candidates_tried"] > 1
    return report, report_dir


def test_with_a_model_of_the_users_the_same_candidate_wins_after_every_one_is_tried(
        default_run, every_candidate):
    assert every_candidate[0]["chosen"] == default_run[0]["chosen"]
    assert every_candidate[0]["chosen_cost"] == default_run[0]["chosen_cost"]


def penalties(every_candidate) -> list[str]:
    """Instructions the winner calls and some other tried candidate avoids."""
    report, report_dir = every_candidate
    files = {c["index"]: report_dir / c["file"] for c in report["candidates"] if c["file"]}
    winner = set(calls(files[report["chosen"]]))
    others = [set(calls(f)) for i, f in files.items() if i != report["chosen"]]
    return sorted(name for name in winner if any(name not in o for o in others))


@pytest.mark.parametrize("kind,slot", [("o", 0), ("a", 1), ("so", 2)])
def test_a_linked_model_changes_which_candidate_wins(project, default_run, every_candidate,
                                                    tmp_path, kind, slot):
    choices = penalties(every_candidate)
    assert len(choices) >= 3, f"the example needs three avoidable instructions, has {choices}"
    penalised = choices[slot]
    model = build_model("penalise", kind, tmp_path / "model", PENALISED=f'"{penalised}"')
    generate_backend(load_spec(project / "QKV_new.py"), cost=model)
    if kind in ("o", "a"):
        model.unlink()  # carried inside the binary: no longer needed
    log = tmp_path / "cost.log"
    report_dir = tmp_path / "report"
    out = tmp_path / "attention.py"
    done = compile_kernel(project, out, "--report-dir", str(report_dir), log=log)
    assert done.returncode == 0, done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    solved = [c for c in report["candidates"] if c["status"] == "solved"]
    # The backend's choice is the model's minimum, ties to the earlier candidate.
    expected = min(solved, key=lambda c: (model_cost(report_dir / c["file"], penalised),
                                          c["index"]))
    assert report["chosen"] == expected["index"]
    assert report["chosen"] != default_run[0]["chosen"], "the model changed the winner"
    assert penalised not in calls(out)
    assert out.read_bytes() == (report_dir / expected["file"]).read_bytes()
    # The model's atexit handler ran once, after every candidate was costed.
    assert log.read_text() == f"exit {len(solved)}\n"


def test_a_failing_model_ends_the_compile_naming_the_candidate(project, tmp_path):
    model = build_model("failing", "o", tmp_path / "model")
    generate_backend(load_spec(project / "QKV_new.py"), cost=model)
    out = tmp_path / "attention.py"
    out.write_text("stale output of an earlier compile\n")
    log = tmp_path / "cost.log"
    done = compile_kernel(project, out, log=log)
    assert done.returncode == 1
    assert "cost model failed on candidate 0" in done.stderr
    assert "act_cost returned 7" in done.stderr
    assert not out.exists(), "a failed compile leaves no output, not even a stale one"
    assert log.read_text() == "exit\n", "the model's atexit handler ran: a normal exit"


def test_a_time_limit_mid_loop_emits_the_best_so_far(project, tmp_path):
    model = build_model("slow", "a", tmp_path / "model", SLOW_MS="400")
    generate_backend(load_spec(project / "QKV_new.py"), cost=model)
    out = tmp_path / "attention.py"
    report_dir = tmp_path / "report"
    done = compile_kernel(project, out, "--time-limit", "1", "--report-dir", str(report_dir))
    assert done.returncode == 0, done.stderr
    assert "time limit was reached" in done.stderr
    report = json.loads((report_dir / "report.json").read_text())
    assert report["status"] == "time_limit"
    assert report["stop_reason"] == "time limit"
    assert 1 <= report["candidates_tried"] < report["candidates_found"]
    assert out.read_bytes() == (report_dir / f"candidate_{report['chosen']}.py").read_bytes()
