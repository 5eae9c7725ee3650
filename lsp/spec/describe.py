"""Turn ``act_backend`` objects (accelerators, problems) into plain JSON-able dicts, for
the child process that runs a spec to report what it built and what is wrong with it
(``model.from_json`` reads the accelerators back in the server)."""

from __future__ import annotations

from typing import Any

from lsp.paths import same_file


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
    if span is not None and not same_file(span["file"], path):
        message = f"{span['file']}:{span['line']}:{span['column']}: {message}"
        span = None
    if span is None and fallback is not None and same_file(fallback.get("file"), path):
        span = fallback
    return {"severity": problem.severity, "code": problem.code, "message": message,
            "span": span}


def describe(acc: Any) -> dict[str, Any]:
    """The parts of an accelerator the editor features show, with where each was written."""
    data_models = []
    for model in acc.data_models:
        data_models.append({
            "name": str(model.name),
            "access_dims": _plain(model.access_dims),
            "unit_dims": _plain(model.unit_dims),
            "dtype": _plain(model.dtype),
            "span": span_dict(model.span),
            "name_span": span_dict(model.arg_spans.get("name")),
        })
    instructions = []
    for instr in acc.instructions:
        instructions.append({
            "name": str(instr.name),
            "comp_attrs": _names(instr.comp_attrs),
            "addr_attrs": _names(instr.addr_attrs),
            "inputs": _slices(instr.inputs, instr.inputs_site),
            "outputs": _slices(instr.outputs, instr.outputs_site),
            "semantics": instr.semantics_text,
            "semantics_span": span_dict(instr.semantics_site.arg("text").span)
            if instr.semantics_site is not None else None,
            "span": span_dict(instr.span),
            "name_span": span_dict(instr.arg_spans.get("name")),
        })
    return {"name": name_of(acc), "span": creation_span(acc),
            "name_span": span_dict(acc.arg_spans.get("name")),
            "data_models": data_models, "instructions": instructions}


def _names(value: Any) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _slices(slices: Any, site: Any) -> list[dict[str, Any]] | None:
    """Slices as given (``[[buffer, [start..], [size..]], ..]``), each with where its
    buffer was named; malformed items are skipped (validation reports them)."""
    if not isinstance(slices, (list, tuple)):
        return None
    out = []
    for index, item in enumerate(slices):
        if not (isinstance(item, (list, tuple)) and len(item) == 3):
            continue
        buffer, start, size = item
        buffer_span = site.arg("slices").at(index, 0).span if site is not None else None
        out.append({"buffer": str(buffer), "start": _texts(start), "size": _texts(size),
                    "buffer_span": span_dict(buffer_span)})
    return out


def _texts(values: Any) -> list[str]:
    return [str(v) for v in values] if isinstance(values, (list, tuple)) else [str(values)]


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)
