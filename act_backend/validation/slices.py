"""Checks of an instruction's input and output slices, and the slices as data.

A slice is ``[buffer, [start, ...], [size, ...]]`` with one start and one size per access
dimension of the buffer; starts and sizes are integers or expressions over the
instruction's attributes. Starts must be affine in the addressing attributes (the allocator
solves them), sizes must not mention them (a size is known once selection fixed ``@c.*``).
"""

from __future__ import annotations

from dataclasses import dataclass

from act_backend.hlo import expr as ex
from act_backend.hlo.ir import TensorType
from act_backend.spec.sites import Site
from act_backend.validation.buffers import Buffer
from act_backend.validation.problem import Context, Report, quote


@dataclass(frozen=True)
class Slice:
    """A checked slice of ``buffer``: ``start[k]``/``size[k]`` along access dimension k."""

    buffer: Buffer
    start: tuple[ex.Dim, ...]
    size: tuple[ex.Dim, ...]

    def tensor_type(self) -> TensorType:
        """The value the slice holds: ``dtype[*size, *unit_dims]``, flat bytes for d0."""
        if self.buffer.is_hbm:
            return TensorType("u8", (ex.product(self.size),))
        return TensorType(self.buffer.dtype, (*self.size, *self.buffer.unit_dims))

    def describe(self) -> str:
        ranges = ", ".join(f"[{s}, {s} + {z})" if not isinstance(s, int) or s else f"[0, {z})"
                           for s, z in zip(self.start, self.size, strict=True))
        return f"{self.buffer.name}{ranges and ' ' + ranges}"


@dataclass(frozen=True)
class Attributes:
    """An instruction's declared attributes (the valid names), by kind."""

    comp: tuple[str, ...]
    addr: tuple[str, ...]

    def declared(self, key: str) -> bool:
        kind, _, name = key.partition(".")
        return name in (self.comp if kind == "c" else self.addr)

    def listing(self, kind: str) -> str:
        names = self.comp if kind == "c" else self.addr
        noun = "computational" if kind == "c" else "addressing"
        return f"{noun} attributes: {', '.join(names)}" if names else f"no {noun} attributes"


def check_slices(ctx: Context, field: str, slices: object, site: Site,
                 buffers: dict[str, Buffer], attrs: Attributes, report: Report
                 ) -> list[Slice | None] | None:
    """Each slice checked (None where it is broken); None when the list itself is."""
    if not isinstance(slices, (list, tuple)):
        report.error(ctx, "bad-slice", f"{field}s must be a list of slices "
                     f"[[buffer, [start, ...], [size, ...]], ...], found {slices!r}", site.span)
        return None
    return [_check_slice(ctx.then(f"{field} {i}"), item, site.item(i), buffers, attrs, report)
            for i, item in enumerate(slices)]


def _check_slice(ctx: Context, item: object, site: Site, buffers: dict[str, Buffer],
                 attrs: Attributes, report: Report) -> Slice | None:
    if not (isinstance(item, (list, tuple)) and len(item) == 3
            and isinstance(item[1], (list, tuple)) and isinstance(item[2], (list, tuple))):
        report.error(ctx, "bad-slice", f"a slice is [buffer, [start, ...], [size, ...]], found "
                     f"{item!r}", site.span)
        return None
    name, starts, sizes = item
    buffer = buffers.get(name) if isinstance(name, str) else None
    if buffer is None:
        known = ", ".join(buffers)
        report.error(ctx, "unknown-buffer", f"buffer {quote(name)} is not a data model "
                     f"(known: {known})", site.at(0).span)
    start_exprs = [_expression(ctx.then(f"start {k}"), s, site.at(1, k), attrs, report)
                   for k, s in enumerate(starts)]
    size_exprs = [_expression(ctx.then(f"size {k}"), s, site.at(2, k), attrs, report)
                  for k, s in enumerate(sizes)]
    good = all(e is not None for e in start_exprs + size_exprs)
    for k, start in enumerate(start_exprs):
        if start is not None:
            good &= _check_start(ctx.then(f"start {k}"), start, site.at(1, k), report)
    for k, size in enumerate(size_exprs):
        if size is not None:
            good &= _check_size(ctx.then(f"size {k}"), size, site.at(2, k), report)
    if buffer is None or not buffer.valid:
        return None  # already reported, here or at its declaration; its shape is unknown
    rank = len(buffer.access_dims)
    for what, exprs, index in (("start", starts, 1), ("size", sizes, 2)):
        if len(exprs) != rank:
            noun = "dimension" if rank == 1 else "dimensions"
            plural = "" if rank == 1 else "s"
            report.error(ctx, "slice-arity", f"buffer {quote(buffer.name)} has {rank} access "
                         f"{noun}, so the slice needs {rank} {what}{plural}; found "
                         f"{len(exprs)}", site.at(index).span)
            good = False
    if not good:
        return None
    for k, (start, size) in enumerate(zip(start_exprs, size_exprs, strict=True)):
        capacity = buffer.access_dims[k]
        if capacity is not None:
            good &= _check_bounds(ctx.then(f"access dimension {k}"), start, size, capacity,
                                  buffer, site.at(1, k), report)
    if not good:
        return None
    return Slice(buffer, tuple(start_exprs), tuple(size_exprs))  # type: ignore[arg-type]


def _expression(ctx: Context, value: object, site: Site, attrs: Attributes,
                report: Report) -> ex.Dim | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        report.error(ctx, "bad-slice", f"expected an integer or an expression string such as "
                     f"'@c.n * 128', found {value!r}", site.span)
        return None
    try:
        parsed = ex.parse_expr(value)
    except ex.ExprSyntaxError as err:
        report.error(ctx, "expression-syntax", err.message, site.text_span(err.start, err.end))
        return None
    good = True
    for node in ex.attr_nodes(parsed):
        if not attrs.declared(node.key):
            span = site.text_span(*node.pos) if node.pos else site.span
            report.error(ctx, "undeclared-attribute", f"{node} is not declared "
                         f"({attrs.listing(node.kind)})", span)
            good = False
    return ex.fold(parsed) if good else None


def _check_start(ctx: Context, start: ex.Dim, site: Site, report: Report) -> bool:
    addresses = {k for k in ex.free_attrs(start) if k.startswith("a.")}
    if not ex.is_affine(start, addresses):
        report.error(ctx, "start-not-affine", f"{start} is not affine in the addressing "
                     "attributes: it may add addressing attributes and multiply them by "
                     "integers or computational attributes, as in '@a.addr + @c.n * 64', but "
                     "not multiply them together, divide them or take them modulo", site.span)
        return False
    return True


def _check_size(ctx: Context, size: ex.Dim, site: Site, report: Report) -> bool:
    addresses = sorted(k for k in ex.free_attrs(size) if k.startswith("a."))
    if addresses:
        report.error(ctx, "size-mentions-address", f"{size} mentions the addressing attribute "
                     f"@{addresses[0]}; a size may depend on integers and computational "
                     "attributes (@c.*) only", site.span)
        return False
    if ex.always_positive(ex.sub(1, size)):
        report.error(ctx, "non-positive-size", f"the size {size} is never positive; a slice "
                     "must cover at least one unit", site.span)
        return False
    return True


def _check_bounds(ctx: Context, start: ex.Dim, size: ex.Dim, capacity: int, buffer: Buffer,
                  site: Site, report: Report) -> bool:
    if ex.always_positive(ex.sub(0, start)):
        report.error(ctx, "slice-out-of-range", f"the start {start} is always negative; "
                     f"{buffer.name} is addressed from 0 to {capacity - 1}", site.span)
        return False
    if ex.always_positive(ex.sub(ex.add(start, size), capacity)):
        report.error(ctx, "slice-out-of-range", f"[{start}, {start} + {size}) never fits in "
                     f"{buffer.name}, which has {capacity} units along this dimension",
                     site.span)
        return False
    return True
