"""Turn ``act_backend`` objects (accelerators, problems) into plain JSON-able dicts.

Both the child process (after running a spec) and the in-process static replay describe
what a spec built the same way, so every editor feature reads one shape of data
(``spec_model.SpecModel.from_json``) whichever way it was obtained.
"""

from __future__ import annotations

import os
from typing import Any


def name_of(acc: Any) -> str:
    return str(getattr(acc, "name", "?"))


def span_dict(span: Any) -> dict[str, Any] | None:
    if span is None:
        return None
    return {"file": span.file, "line": span.line, "column": span.column,
            "end_line": span.end_line, "end_column": span.end_column}


def creation_span(acc: Any) -> dict[str, Any] | None:
    """Where the accelerator was created (its ``Accelerator(...)`` call)."""
    return span_dict(getattr(acc, "span", None))


def problem_dict(problem: Any, path: str, fallback: dict[str, Any] | None) -> dict[str, Any]:
    """A validation problem as a dict, its span made to point into ``path``.

    A problem located in another file (a helper module the spec imports), or nowhere, is
    placed on ``fallback`` (the accelerator's creation) with the real place named in the
    message, so it is still shown in the document being edited.
    """
    span = span_dict(problem.span)
    message = problem.message
    if span is not None and not _same_file(span["file"], path):
        message = f"{span['file']}:{span['line']}:{span['column']}: {message}"
        span = None
    if span is None and fallback is not None and _same_file(fallback.get("file"), path):
        span = fallback
    return {"severity": problem.severity, "code": problem.code, "message": message,
            "span": span}


def _same_file(a: str | None, b: str) -> bool:
    if not a:
        return False
    return a == b or os.path.realpath(a) == os.path.realpath(b)


def describe(acc: Any) -> dict[str, Any]:
    """The parts of an accelerator the editor features show, with where each was written."""
    data_models = []
    for model in _values(getattr(acc, "data_models", [])):
        data_models.append({
            "name": str(getattr(model, "name", "?")),
            "access_dims": _plain(getattr(model, "access_dims", None)),
            "unit_dims": _plain(getattr(model, "unit_dims", None)),
            "dtype": _plain(getattr(model, "dtype", None)),
            "span": span_dict(getattr(model, "span", None)),
            "name_span": span_dict(_arg_span(model, "name")),
        })
    instructions = []
    for instr in _values(getattr(acc, "instructions", [])):
        instructions.append({
            "name": str(getattr(instr, "name", "?")),
            "comp_attrs": _plain(getattr(instr, "comp_attrs", [])),
            "addr_attrs": _plain(getattr(instr, "addr_attrs", [])),
            "inputs": _slices(getattr(instr, "inputs", None)),
            "outputs": _slices(getattr(instr, "outputs", None)),
            "semantics": _plain(getattr(instr, "semantics_text", None)
                                or getattr(instr, "semantics", None)
                                if isinstance(getattr(instr, "semantics", None), str)
                                else getattr(instr, "semantics_text", None)),
            "span": span_dict(getattr(instr, "span", None)),
            "name_span": span_dict(_arg_span(instr, "name")),
        })
    return {"name": name_of(acc), "span": creation_span(acc),
            "name_span": span_dict(_arg_span(acc, "name")),
            "data_models": data_models, "instructions": instructions}


def _values(collection: Any) -> list[Any]:
    if isinstance(collection, dict):
        return list(collection.values())
    return list(collection or [])


def _arg_span(obj: Any, argument: str) -> Any:
    spans = getattr(obj, "arg_spans", None)
    if isinstance(spans, dict):
        return spans.get(argument)
    return None


def _slices(slices: Any) -> list[dict[str, Any]] | None:
    if slices is None:
        return None
    out = []
    for item in slices:
        if isinstance(item, (list, tuple)) and len(item) == 3:
            buffer, start, size = item
        else:
            buffer = getattr(item, "buffer", "?")
            start = getattr(item, "start", [])
            size = getattr(item, "size", [])
        out.append({"buffer": str(buffer), "start": [str(s) for s in start],
                    "size": [str(s) for s in size]})
    return out


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)
