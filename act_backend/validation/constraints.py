"""Checks of an instruction's cost expression and attribute constraints (TAIDL v2.2's
``add_instruction(..., cost=..., constraints=...)`` and ``add_constraints``).

A cost is an integer or an expression over the computational attributes (what an instruction
costs cannot depend on where its operands are). A constraint is one or more comparisons
``lhs OP rhs`` (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``) joined by ``and``, over the
instruction's attributes. Comparisons of computational attributes only bound selection;
those that mention addressing attributes become allocator constraints, so they must be
affine in the addressing attributes once the computational ones are known (as slice starts
are), or an alignment ``affine % m == r`` with an integer ``m``; ``!=`` is accepted on
computational attributes only. ``update`` (state updates) is refused: act-backend models no
architectural state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from act_backend.hlo import expr as ex
from act_backend.spec.accelerator import Instruction
from act_backend.spec.sites import Site
from act_backend.validation.problem import Context, Report
from act_backend.validation.slices import Attributes

COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")
_COMPARISON = re.compile(r"(==|!=|<=|>=|<|>)")
_AND = re.compile(r"\band\b|&&")


@dataclass(frozen=True)
class Comparison:
    """``lhs op rhs``; ``text`` is the constraint it was written in."""

    op: str
    lhs: ex.Dim
    rhs: ex.Dim
    text: str

    @property
    def attrs(self) -> frozenset[str]:
        return ex.free_attrs(self.lhs) | ex.free_attrs(self.rhs)


def check_cost(ctx: Context, instr: Instruction, attrs: Attributes,
               report: Report) -> ex.Dim | None:
    """The cost expression (None: the default cost, 1)."""
    cost = instr.cost
    site = instr.site.arg("cost")
    if cost is None:
        return None
    ctx = ctx.then("cost")
    if isinstance(cost, bool) or not isinstance(cost, (int, str)):
        report.error(ctx, "bad-cost", f"cost is an integer or an expression over the "
                     f"computational attributes such as '2 * @c.rows', found {cost!r}",
                     site.span)
        return None
    if isinstance(cost, int):
        value: ex.Dim = cost
    else:
        parsed = _parse(ctx, cost, site, attrs, report)
        if parsed is None:
            return None
        value = parsed
    addresses = sorted(k for k in ex.free_attrs(value) if k.startswith("a."))
    if addresses:
        report.error(ctx, "cost-mentions-address", f"the cost {value} mentions the addressing "
                     f"attribute @{addresses[0]}; what an instruction costs may depend on its "
                     "computational attributes (@c.*) only", site.span)
        return None
    if isinstance(value, int) and value < 0:
        report.error(ctx, "bad-cost", f"the cost {value} is negative", site.span)
        return None
    return value


def check_update(ctx: Context, instr: Instruction, report: Report) -> None:
    update = instr.update
    if update is None or (isinstance(update, (list, tuple)) and not update):
        return
    report.error(ctx.then("update"), "state-update", f"update={update!r}: state updates "
                 "(@s.*) are not supported; act-backend models no architectural state, only "
                 "the data models", instr.site.arg("update").span)


def check_constraints(ctx: Context, instr: Instruction, attrs: Attributes,
                      report: Report) -> tuple[Comparison, ...] | None:
    """The comparisons of every constraint, or None when one of them is refused."""
    items = instr.constraints
    if instr.constraints_site is not None:
        site = instr.constraints_site.arg("constraints")
    else:
        site = instr.site.arg("constraints")
    ctx = ctx.then("constraints")
    if not isinstance(items, (list, tuple)):
        report.error(ctx, "bad-constraint", "constraints are a list of strings such as "
                     f"['@c.rows <= 16'] (or a text, one a line), found {items!r}", site.span)
        return None
    out: list[Comparison] = []
    good = True
    for i, item in enumerate(items):
        item_site = site.item(i) if instr.constraints_site is None else site
        parts = _constraint(ctx.then(f"constraint {i}"), item, item_site, attrs, report)
        if parts is None:
            good = False
        else:
            out.extend(parts)
    return tuple(out) if good else None


def _constraint(ctx: Context, text: object, site: Site, attrs: Attributes,
                report: Report) -> list[Comparison] | None:
    if not isinstance(text, str) or not text.strip():
        report.error(ctx, "bad-constraint", f"a constraint is a string such as "
                     f"'@c.rows <= 16', found {text!r}", site.span)
        return None
    out = []
    for part in _AND.split(text):
        pieces = _COMPARISON.split(part)
        if len(pieces) != 3:
            report.error(ctx, "bad-constraint", f"{part.strip()!r} is not one comparison "
                         f"'lhs OP rhs' with OP one of {', '.join(COMPARISONS)} (join "
                         "several with 'and')", site.span)
            return None
        lhs_text, op, rhs_text = pieces
        lhs = _parse(ctx, lhs_text, site, attrs, report)
        rhs = _parse(ctx, rhs_text, site, attrs, report)
        if lhs is None or rhs is None:
            return None
        comparison = Comparison(op, lhs, rhs, text.strip())
        if not _allocatable(ctx, comparison, site, report):
            return None
        out.append(comparison)
    return out


def _parse(ctx: Context, text: str, site: Site, attrs: Attributes,
           report: Report) -> ex.Dim | None:
    if "@s." in text:
        report.error(ctx, "state-update", f"{text.strip()!r} mentions state (@s.*), which "
                     "act-backend does not model", site.span)
        return None
    try:
        parsed = ex.parse_expr(text)
    except ex.ExprSyntaxError as err:
        report.error(ctx, "expression-syntax", err.message, site.span)
        return None
    for node in ex.attr_nodes(parsed):
        if not attrs.declared(node.key):
            report.error(ctx, "undeclared-attribute", f"{node} is not declared "
                         f"({attrs.listing(node.kind)})", site.span)
            return None
    return ex.fold(parsed)


def modulo_form(comparison: Comparison) -> tuple[ex.Dim, ex.Dim, ex.Dim] | None:
    """``(e, m, r)`` for ``e % m == r`` (either side), else None."""
    if comparison.op != "==":
        return None
    for a, b in ((comparison.lhs, comparison.rhs), (comparison.rhs, comparison.lhs)):
        if isinstance(a, ex.BinOp) and a.op == "%":
            return a.lhs, a.rhs, b
    return None


def _allocatable(ctx: Context, comparison: Comparison, site: Site, report: Report) -> bool:
    addresses = {k for k in comparison.attrs if k.startswith("a.")}
    if not addresses:
        return True
    if comparison.op == "!=":
        report.error(ctx, "bad-constraint", f"{comparison.text!r}: '!=' is accepted on "
                     "computational attributes only; the allocator places addressing "
                     "attributes under equalities and inequalities", site.span)
        return False
    form = modulo_form(comparison)
    if form is not None:
        value, modulus, rest = form
        if (ex.is_affine(value, addresses) and not ex.free_attrs(modulus) & addresses
                and not ex.free_attrs(rest) & addresses):
            return True
    elif ex.is_affine(ex.sub(comparison.lhs, comparison.rhs), addresses):
        return True
    report.error(ctx, "constraint-not-affine", f"{comparison.text!r} is not affine in the "
                 "addressing attributes (as '@a.addr + @c.rows <= 1024'), nor an alignment "
                 "'affine % m == r' with m and r free of addressing attributes", site.span)
    return False
