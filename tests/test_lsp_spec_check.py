"""Checking specs: statically (nothing runs) and by running them in a child process with a
time and a memory limit. Either way the problems are validation's, placed on their text."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

import pytest

import lsp
from lsp import fork_server
from lsp.spec.check import check_running, check_static
from lsp.spec.runner import ForkChecker, SpawnChecker, _child_env
from lsp.text_map import lines_of

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
QKV = (EXAMPLES / "QKV" / "QKV.py").read_text()


def covered(text: str, finding) -> str:
    lines = lines_of(text)
    (line, start), (end_line, end) = finding.range.start, finding.range.end
    return lines[line][start:end] if line == end_line else lines[line][start:]


def codes(result) -> list[str]:
    return [f.code for f in result.findings]


def test_examples_are_clean(tmp_path):
    for name in ("QKV", "QKV_new"):
        path = EXAMPLES / name / f"{name}.py"
        result = check_static(path.read_text(), str(path))
        assert result.findings == []
        assert result.model is not None and len(result.model.accelerators) == 1


def test_a_problem_in_a_semantics_string_is_placed_on_its_token(tmp_path):
    text = QKV.replace("exponential(%In1)", "exponentia(%In1)")
    result = check_static(text, str(tmp_path / "QKV.py"))
    assert codes(result) == ["unknown-operator"]
    assert covered(text, result.findings[0]) == "exponentia"


def test_tokens_are_found_through_escapes_and_implicit_concatenation(tmp_path):
    text = textwrap.dedent('''\
        from act_backend import Accelerator

        acc = Accelerator("Esc")
        acc.add_data_model("d1", [8], [4], "bf16")
        instr = acc.add_instruction("neg", [], ["a"])
        instr.set_inputs([["d1", ["@a.a"], ["1"]]])
        instr.set_outputs([["d1", ["@a.a"], ["1"]]])
        instr.add_semantics("ENTRY neg {\\n\\t%In1 = bf16[1,4] parameter(0);\\n"
                            "\\tROOT %Out0 = bf16[1,4] negat(%In1);\\n}")
    ''')
    result = check_static(text, str(tmp_path / "esc.py"))
    assert codes(result) == ["unknown-operator"]
    assert covered(text, result.findings[0]) == "negat"


def test_a_spec_built_from_run_time_values_is_checked_in_its_semantics_only(tmp_path):
    text = textwrap.dedent('''\
        import json
        from act_backend import Accelerator

        acc = Accelerator("Partial")
        acc.add_data_model("d1", json.load(open("dims.json")), [64], "bf16")
        instr = acc.add_instruction("copy_rows", ["n"], ["addr_in", "addr_out"])
        instr.set_inputs([["d1", ["@a.addr_in"], ["@c.n"]]])
        instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
        instr.add_semantics("""
        ENTRY copy_rows {
            %In1 = bf16[`@c.n`,64] parameter(0);
            ROOT %Out0 = bf16[`@c.k`,64] copy(%In1);
        }
        """)
    ''')
    result = check_static(text, str(tmp_path / "partial.py"))
    assert sorted(codes(result)) == ["partially-checked", "undeclared-attribute"]
    undeclared = next(f for f in result.findings if f.code == "undeclared-attribute")
    assert covered(text, undeclared) == "@c.k"
    note = next(f for f in result.findings if f.code == "partially-checked")
    assert note.severity == "information" and "act.executeSpecs" in note.message
    # d1's access dims are unknown here: the slices into d1 must not be called wrong.
    assert "unknown-buffer" not in codes(result)


def test_a_call_the_api_refuses_is_reported_like_running_the_spec_would(tmp_path):
    text = QKV.replace('qkv.add_data_model("d2", [64], [64], "bf16")',
                       'qkv.add_data_model("d2", [64], [64])')
    result = check_static(text, str(tmp_path / "QKV.py"))
    failure = result.findings[0]
    assert failure.code == "spec-exception" and failure.message.startswith("TypeError:")
    assert covered(text, failure) == 'qkv.add_data_model("d2", [64], [64])'
    # Later calls never ran: no warning about what they would have added.
    assert all(f.severity == "error" for f in result.findings)


def test_a_python_syntax_error_stops_at_the_syntax(tmp_path):
    result = check_static("acc = Accelerator('A'\n", str(tmp_path / "s.py"))
    assert codes(result) == ["python-syntax"] and result.model is None


# ---- running the spec in a child -----------------------------------------------------------


CHECKERS = [SpawnChecker]
if fork_server.AVAILABLE:
    CHECKERS.append(ForkChecker)


@pytest.fixture(params=CHECKERS, ids=lambda kind: kind.__name__)
def checker_kind(request):
    return request.param


def run(text: str, path: Path, timeout_s: float = 2.0, memory_mb: int = 512,
        kind=ForkChecker if fork_server.AVAILABLE else SpawnChecker):
    async def go():
        checker = kind()
        try:
            return await check_running(text, str(path), checker, timeout_s, memory_mb)
        finally:
            await checker.close()

    return asyncio.run(go())


def test_running_finds_what_the_static_check_finds(tmp_path, checker_kind):
    text = QKV.replace("exponential(%In1)", "exponentia(%In1)")
    ran = run(text, tmp_path / "QKV.py", kind=checker_kind)
    read = check_static(text, str(tmp_path / "QKV.py"))
    assert [f.as_dict() for f in ran.findings] == [f.as_dict() for f in read.findings]
    assert [i.name for i in ran.model.accelerators[0].instructions][:2] == ["load_rm",
                                                                           "load_cm"]


def test_running_sees_what_reading_cannot(tmp_path):
    (tmp_path / "dims.json").write_text("[128]")
    text = textwrap.dedent("""\
        import json
        from act_backend import Accelerator

        acc = Accelerator("Dims")
        acc.add_data_model("d1", json.load(open("dims.json")), [64], "bf17")
    """)
    result = run(text, tmp_path / "dims.py")
    assert codes(result) == ["unknown-dtype"]
    assert covered(text, result.findings[0]) == '"bf17"'


@pytest.mark.parametrize(("body", "code", "line", "message"), [
    ("while True:\n    pass\n", "spec-timeout", 3, "timed out after 1 s"),
    ("try:\n    while True:\n        pass\nexcept Exception:\n    pass\n", "spec-timeout", 4,
     "timed out after 1 s"),
    ("blob = bytearray(64 * 1024 ** 3)\n", "spec-memory", 3, "limit 256 MiB"),
    ("def f():\n    return {}['k']\nf()\n", "spec-exception", 4, "KeyError: 'k'"),
    ("import sys\nsys.exit(3)\n", "spec-exit", 4, "status 3"),
    # A crash has no line of its own: it is shown on the accelerator.
    ("import os\nos.kill(os.getpid(), 9)\n", "spec-crashed", 1, "killed by SIGKILL"),
])
def test_a_failing_run_is_one_diagnostic_at_its_line(tmp_path, checker_kind, body, code, line,
                                                     message):
    text = "from act_backend import Accelerator\nacc = Accelerator('F')\n\n" + body
    result = run(text, tmp_path / "f.py", timeout_s=1.0, memory_mb=256, kind=checker_kind)
    assert codes(result) == [code]
    assert result.findings[0].range.start[0] == line
    assert message in result.findings[0].message


def test_prints_of_a_spec_do_not_disturb_the_result(tmp_path):
    text = QKV.replace("qkv = Accelerator", "print('{\"problems\": 1}')\nqkv = Accelerator")
    assert run(text, tmp_path / "QKV.py").findings == []


def test_a_failure_inside_the_checker_is_shown_not_swallowed(tmp_path, monkeypatch):
    import act_backend.validation

    def broken(acc):
        raise RuntimeError("checker bug")

    monkeypatch.setattr(act_backend.validation, "check", broken)
    result = check_static(QKV, str(tmp_path / "QKV.py"))
    assert codes(result) == ["check-failed"]
    assert result.findings[0].message == (
        "Checking accelerator 'QKV' failed inside act_backend: RuntimeError: checker bug")
    assert covered(QKV, result.findings[0]) == 'Accelerator("QKV")'


def test_children_import_the_servers_own_lsp_package():
    # Children run from the spec's folder: PYTHONPATH must lead to this lsp package first.
    first = Path(_child_env()["PYTHONPATH"].split(os.pathsep)[0])
    assert (first / "lsp" / "__init__.py").resolve() == Path(lsp.__file__).resolve()
