"""Diagnostics for a TAIDL spec, with or without running it.

``check_running`` (the workspace opted in with ``act.executeSpecs``) runs the spec in a
child process (``runner``) and reports what ``act_backend.validation.check`` finds in
every accelerator it created, plus how the run failed, if it did.

``check_static`` runs nothing: Python syntax comes from ``ast``, and the TAIDL calls whose
arguments are literals are replayed onto real front-end objects (``replay``) and
checked by the same validation code. An accelerator that is partly built from values only
known at run time is marked so, and only the problems inside its semantics strings (which
stand on their own) are reported for it.

Either way no check is implemented here: this module decides what to run and places the
problems, each with its quick fixes (``lsp.fixes.spec``, worked out beside the accelerator
that was checked: here, or in the child process).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from lsp.findings import Finding, from_problem
from lsp.spec import model as spec_model
from lsp.spec.child import syntax_problem
from lsp.spec.reader import ApiCall, Ref, read_spec
from lsp.spec.runner import Checker, check_spec
from lsp.text_map import line_range, lines_of, node_range

# Problems inside a semantics string that compare it with the instruction's slices: only
# meaningful when those slices were read.
_NEEDS_INPUTS = frozenset({"parameter-index", "parameter-type-mismatch"})
_NEEDS_OUTPUTS = frozenset({"root-type-mismatch"})


@dataclass
class SpecCheck:
    findings: list[Finding] = field(default_factory=list)
    model: spec_model.SpecModel | None = None  # None when the file does not parse


def parse(text: str, path: str | None) -> tuple[ast.Module | None, Finding | None]:
    try:
        return ast.parse(text, path or "<spec>"), None
    except SyntaxError as exc:
        problem = syntax_problem(exc, path or "<spec>")
        return None, from_problem(problem, lines_of(text), path or "<spec>")
    except ValueError as exc:  # null bytes in the source
        return None, Finding(line_range(lines_of(text), 0), "error", "python-syntax", str(exc))


def check_static(text: str, path: str) -> SpecCheck:
    lines = lines_of(text)
    tree, failure = parse(text, path)
    if tree is None:
        assert failure is not None
        return SpecCheck([failure])
    reading = read_spec(tree)
    model = spec_model.from_reading(reading, lines)
    result = SpecCheck([], model)
    try:
        from act_backend.validation import check
        from lsp.fixes.spec import spec_fixes
        from lsp.spec.replay import replay
    except Exception as exc:  # a broken install must not take the server down
        result.findings.append(Finding(line_range(lines, 0), "warning", "act-unavailable",
                                       f"act_backend cannot be imported, so the spec is not "
                                       f"checked: {type(exc).__name__}: {exc}"))
        return result
    replayed = replay(reading, path, text)
    if replayed.failure is not None:
        call, message = replayed.failure
        result.findings.append(Finding(node_range(lines, call.node), "error",
                                       "spec-exception", message))
    for ref, info in zip(reading.accelerators, model.accelerators, strict=True):
        acc = replayed.real(ref)
        if acc is None:
            continue
        try:
            problems = check(acc)
        except Exception as exc:  # a checker bug must not hide the file's other problems
            result.findings.append(Finding(
                info.range, "error", "check-failed",
                f"Checking accelerator '{info.name}' failed inside act_backend: "
                f"{type(exc).__name__}: {exc}"))
            continue
        if replayed.failure is not None:
            # What follows the failing call never ran: its absence is not a problem.
            problems = [p for p in problems if p.severity == "error"]
        fixes = spec_fixes(acc, problems, text, path)
        found = [from_problem(p, lines, path, fallback=info.range, fixes=f)
                 for p, f in zip(problems, fixes, strict=True)]
        if ref.incomplete:
            found = _standalone_semantics(found, reading, ref, info)
            result.findings.append(Finding(
                info.range, "information", "partially-checked",
                f"Accelerator '{info.name}' is partly built from values known only when the "
                "spec runs, so only its semantics strings are checked here; set "
                "act.executeSpecs (trusted workspaces) to check all of it."))
        result.findings.extend(found)
    if reading.gave_up:
        result.findings.append(Finding(line_range(lines, 0), "information", "partially-checked",
                                       f"Stopped reading the spec statically: {reading.gave_up}."))
    return result


def _standalone_semantics(found: list[Finding], reading, acc_ref: Ref,
                          info: spec_model.AcceleratorInfo) -> list[Finding]:
    """The problems of an incomplete accelerator that lie inside a semantics string and do
    not depend on what could not be read."""
    calls_by_instr: dict[int, list[ApiCall]] = {}
    instr_refs: list[Ref] = []
    for call in reading.calls:
        if call.method == "add_instruction" and call.receiver is acc_ref and call.result:
            instr_refs.append(call.result)
        if call.receiver is not None and call.receiver.kind == "instruction":
            calls_by_instr.setdefault(id(call.receiver), []).append(call)
    kept = []
    for ref, instr in zip(instr_refs, info.instructions, strict=False):
        if instr.semantics_range is None:
            continue
        calls = calls_by_instr.get(id(ref), [])
        read = {c.method for c in calls if not c.opaque}
        excluded = set()
        if "set_inputs" not in read:
            excluded |= _NEEDS_INPUTS
        if "set_outputs" not in read:
            excluded |= _NEEDS_OUTPUTS
        for finding in found:
            inside = (instr.semantics_range.start <= finding.range.start
                      and finding.range.end <= instr.semantics_range.end)
            if inside and finding.code not in excluded and finding not in kept:
                kept.append(finding)
    return kept


async def check_running(text: str, path: str, checker: Checker, timeout_s: float,
                        memory_mb: int) -> SpecCheck:
    lines = lines_of(text)
    tree, failure = parse(text, path)
    if tree is None:
        assert failure is not None
        return SpecCheck([failure])
    # The static model still serves navigation when the run reports nothing usable.
    static_model = spec_model.from_reading(read_spec(tree), lines)
    outcome = await check_spec(checker, path, text, timeout_s, memory_mb)
    model = static_model
    if outcome.payload and outcome.payload.get("accelerators"):
        model = spec_model.from_json(outcome.payload["accelerators"], path)
        _keep_static_ranges(model, static_model)
    fallback = static_model.accelerators[0].range if static_model.accelerators else None
    failed = any(_is_run_failure(p) for p in outcome.problems)
    findings = []
    for problem in outcome.problems:
        if failed and problem.get("severity") != "error" and not _is_run_failure(problem):
            continue  # the spec stopped early: what it did not reach is not missing
        findings.append(from_problem(problem, lines, path, fallback=fallback))
    return SpecCheck(findings, model)


def _is_run_failure(problem: dict) -> bool:
    return str(problem.get("code", "")).startswith("spec-")


def _keep_static_ranges(model: spec_model.SpecModel, static: spec_model.SpecModel) -> None:
    """Slice literal ranges and call ranges only come from reading the syntax tree; carry
    them over to the run's model for the instructions both know, by name."""
    known = {(a.name, i.name): i for a in static.accelerators for i in a.instructions}
    for acc in model.accelerators:
        for instr in acc.instructions:
            twin = known.get((acc.name, instr.name))
            if twin is None:
                continue
            instr.slice_literals = twin.slice_literals
            instr.call_ranges = instr.call_ranges or twin.call_ranges
            if instr.semantics_range is None:
                instr.semantics_range = twin.semantics_range
            for mine, theirs in ((instr.inputs, twin.inputs), (instr.outputs, twin.outputs)):
                for a, b in zip(mine or [], theirs or [], strict=False):
                    if a.buffer_range is None and a.buffer == b.buffer:
                        a.buffer_range = b.buffer_range
    model.generator_calls = static.generator_calls
