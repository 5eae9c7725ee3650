"""Checks of the accelerator's name and data models; the buffers they define, as data."""

from __future__ import annotations

import re
from dataclasses import dataclass

from act_backend.hlo.ir import SPEC_DTYPES, Span
from act_backend.spec.accelerator import HBM, Accelerator, DataModel
from act_backend.validation.names import check_identifier
from act_backend.validation.problem import Context, Report, quote

# The name becomes a directory (targets/<name>) and an executable (backends/<name>).
_ACCELERATOR_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class Buffer:
    """A checked buffer. ``access_dims`` of ``d0`` is ``(None,)``: unbounded."""

    name: str
    access_dims: tuple[int | None, ...]
    unit_dims: tuple[int, ...]
    dtype: str
    valid: bool = True  # False when its declaration has errors (deeper checks are skipped)

    @property
    def is_hbm(self) -> bool:
        return self.name == HBM


def accelerator_context(acc: Accelerator) -> Context:
    return Context((f"accelerator {quote(acc.name)}",))


def check_accelerator_name(acc: Accelerator, report: Report) -> None:
    name = acc.name
    span = acc.site.arg("name").span
    if not isinstance(name, str) or not _ACCELERATOR_NAME.fullmatch(name):
        report.error(accelerator_context(acc), "bad-accelerator-name",
                     f"the name {name!r} cannot name the targets/<name> directory and the "
                     "backends/<name> executable; use letters, digits, '_', '.' and '-', "
                     "not starting with '.' or '-'", span)


def check_data_models(acc: Accelerator, report: Report) -> dict[str, Buffer]:
    """The buffers by name: ``d0`` first, then every data model whose name is a string
    (also those with errors, so that slices naming them are not reported twice)."""
    buffers: dict[str, Buffer] = {HBM: Buffer(HBM, (None,), (), "u8")}
    where: dict[str, Span | None] = {}
    for index, model in enumerate(acc.data_models):
        buffer = _check_model(acc, model, index, buffers, where, report)
        if buffer is not None:
            buffers[buffer.name] = buffer
            where[buffer.name] = model.span
    return buffers


def _check_model(acc: Accelerator, model: DataModel, index: int, buffers: dict[str, Buffer],
                 where: dict[str, Span | None], report: Report) -> Buffer | None:
    label = quote(model.name) if isinstance(model.name, str) else f"#{index}"
    ctx = accelerator_context(acc).then(f"data model {label}")
    site = model.site
    valid = check_identifier(report, ctx, "data model name", model.name, site.arg("name").span)
    name = model.name if isinstance(model.name, str) else None
    duplicate = name is not None and name in buffers
    if name == HBM:
        report.error(ctx, "duplicate-buffer", f"{HBM} is the implicit byte-addressed HBM every "
                     "accelerator has; name the data model d1, d2, ...", site.arg("name").span)
    elif duplicate:
        first = where.get(name)
        at = f" (first declared at line {first.line})" if first is not None else ""
        report.error(ctx, "duplicate-buffer", f"a data model named {quote(name)} is already "
                     f"declared{at}; names must be unique", site.arg("name").span)
    access = _check_dims(ctx, "access_dims", model.access_dims, site.arg("access_dims"),
                         report, allow_empty=False)
    unit = _check_dims(ctx, "unit_dims", model.unit_dims, site.arg("unit_dims"), report,
                       allow_empty=True)
    dtype_ok = model.dtype in SPEC_DTYPES
    if not dtype_ok:
        report.error(ctx, "unknown-dtype", f"dtype {model.dtype!r} is not an element type "
                     f"TAIDL knows (accepted: {', '.join(SPEC_DTYPES)})",
                     site.arg("dtype").span)
    if name is None or duplicate:
        return None
    valid = valid and access is not None and unit is not None and dtype_ok
    return Buffer(name, tuple(access or ()), tuple(unit or ()),
                  model.dtype if dtype_ok else "u8", valid)


def _check_dims(ctx: Context, field: str, dims: object, site, report: Report,
                allow_empty: bool) -> list[int] | None:
    example = "[128]" if field == "access_dims" else "[64] (or [] for scalar units)"
    if not isinstance(dims, (list, tuple)):
        report.error(ctx, "bad-dims", f"{field} must be a list of positive integers such as "
                     f"{example}, found {dims!r}", site.span)
        return None
    if not dims and not allow_empty:
        report.error(ctx, "bad-dims", f"{field} is empty; a buffer needs at least one access "
                     f"dimension, such as {example}", site.span)
        return None
    good = True
    for k, dim in enumerate(dims):
        if not isinstance(dim, int) or isinstance(dim, bool):
            report.error(ctx, "bad-dims", f"{field}[{k}] must be a positive integer, found "
                         f"{dim!r}", site.item(k).span)
            good = False
        elif dim <= 0:
            report.error(ctx, "non-positive-dim", f"{field}[{k}] is {dim}; dimensions must be "
                         "positive integers", site.item(k).span)
            good = False
    return list(dims) if good else None
