"""The kernel conformance corpus (``act_backend/backend/crate/tests/conformance/``): every
kernel listed in ``verdicts.json`` gets the verdict recorded there from the Python parser and
checker (``check_hlo``), the one the crate's ``tests/conformance_kernels.rs`` holds the Rust
parser and type rules to. The corpus lives inside the crate because the crate is copied when a
backend is generated and its tests read nothing outside it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from act_backend.backend import crate_dir
from act_backend.kernel import check_hlo

CORPUS = crate_dir() / "tests" / "conformance"
MANIFEST = json.loads((CORPUS / "verdicts.json").read_text())
CASES: dict = MANIFEST["cases"]
KINDS: dict = MANIFEST["kinds"]
FIXTURES = Path(__file__).resolve().parent / "kernels"


def checker_verdict(case: str | dict) -> str:
    """The verdict the Python checker must give: the case's string, or its ``checker`` entry
    where the two front ends differ on purpose (and say why)."""
    if isinstance(case, str):
        return case
    assert case.get("why"), f"a split verdict says why: {case}"
    assert isinstance(case.get("crate"), str)
    return case["checker"]


def verdict_of(text: str, file: str) -> str:
    """``accepted``, or the code and ``line:col`` of the first problem (by position)."""
    errors = [p for p in check_hlo(text, file) if p.severity == "error"]
    if not errors:
        return "accepted"
    first = errors[0]
    return f"{first.code} {first.span.line}:{first.span.column}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_checker_gives_the_recorded_verdict(name):
    text = (CORPUS / name).read_text()
    assert verdict_of(text, name) == checker_verdict(CASES[name])


def test_every_recorded_code_has_a_crate_kind():
    verdicts = []
    for case in CASES.values():
        verdicts += [case] if isinstance(case, str) else [case["checker"], case["crate"]]
    codes = {v.split()[0] for v in verdicts if v != "accepted"}
    assert codes <= set(KINDS), codes - set(KINDS)
    assert set(KINDS.values()) <= {"Syntax", "UnknownOperator", "UndefinedOperand", "Shape",
                                   "Unsupported"}


def test_the_corpus_lists_every_kernel_it_holds():
    held = {str(p.relative_to(CORPUS)) for p in CORPUS.rglob("*.hlo")}
    listed = {name for name in CASES if not name.startswith("../")}
    assert held == listed
    assert all((CORPUS / name).is_file() for name in CASES)


@pytest.mark.parametrize("path", sorted(FIXTURES.rglob("*.hlo")), ids=lambda p: p.name)
def test_every_kernel_fixture_is_in_the_corpus_unchanged(path):
    # The corpus holds copies (the crate cannot read outside itself); a fixture added or
    # changed here must be added or changed there, with its verdict.
    copy = CORPUS / "fixtures" / path.relative_to(FIXTURES)
    assert copy.is_file(), f"{path.relative_to(FIXTURES)} is not in the conformance corpus"
    assert copy.read_text() == path.read_text()
    assert str(copy.relative_to(CORPUS)) in CASES
