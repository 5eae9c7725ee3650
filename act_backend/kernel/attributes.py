"""Decoding of HLO attribute values and constant literals from their token trees.

The grammar reads every ``{...}`` value as a balanced tree of tokens; this module turns the
ones with a meaning into the encodings of the architecture document (``dimensions`` -> list
of ints, ``slice`` -> ``[[start, limit, stride], ...]``, ``to_apply`` -> a computation name,
convolution's ``window`` -> a dict of its written fields and ``dim_labels`` -> ``(lhs, rhs,
out)``...) and keeps the rest (``metadata``, ``sharding``, ``backend_config``...) as their
source text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from lark import Token, Tree

from act_backend.kernel.opcodes import COMPARISON_DIRECTIONS


class BadValue(ValueError):
    """A value that does not fit its attribute; ``node`` is the token or tree at fault."""

    def __init__(self, message: str, node: Token | Tree) -> None:
        super().__init__(message)
        self.message = message
        self.node = node


_INT = re.compile(r"[-+]?\d+\Z")
_LITERAL_WORDS = {"true": True, "false": False, "inf": math.inf, "nan": math.nan}


def strip_percent(name: str) -> str:
    return name[1:] if name.startswith("%") else name


def parse_number(text: str) -> int | float:
    """An HLO number: ``3`` is an int, ``3.0``, ``1e-3``, ``-inf`` and ``nan`` are floats."""
    if _INT.match(text):
        return int(text)
    lowered = text.lower()
    if lowered.lstrip("+-") == "nan":
        return math.nan
    return float(lowered)


def _value_node(attr_value: Tree) -> Token | Tree:
    return attr_value.children[0]


def _elements(brace: Tree) -> list[Tree]:
    """The comma-separated elements of a brace/bracket/paren tree (none for ``{}``)."""
    return [c for c in brace.children if isinstance(c, Tree) and c.data == "belem"]


def _single_part(belem: Tree) -> Token | Tree:
    if len(belem.children) != 1:
        raise BadValue("expected one value between commas", belem)
    return belem.children[0]


def _int_token(node: Token | Tree, what: str) -> int:
    if isinstance(node, Token) and node.type == "NUMBER" and _INT.match(node):
        return int(node)
    raise BadValue(f"{what} must be an integer, found {_describe(node)}", node)


def _describe(node: Token | Tree) -> str:
    if isinstance(node, Token):
        return f"'{node}'"
    return {"brace": "a '{...}' list", "bracket": "a '[...]' list",
            "paren": "a '(...)' group"}.get(node.data, "a compound value")


def int_list(attr_value: Tree, attr: str) -> list[int]:
    node = _value_node(attr_value)
    if not (isinstance(node, Tree) and node.data == "brace"):
        raise BadValue(
            f"attribute '{attr}' expects a list of integers such as {{1,0}}, "
            f"found {_describe(node)}", node)
    return [_int_token(_single_part(e), f"each entry of '{attr}'") for e in _elements(node)]


def int_scalar(attr_value: Tree, attr: str) -> int:
    return _int_token(_value_node(attr_value), f"attribute '{attr}'")


def name_ref(attr_value: Tree, attr: str) -> str:
    node = _value_node(attr_value)
    if isinstance(node, Token) and node.type == "NAME":
        return strip_percent(str(node))
    raise BadValue(
        f"attribute '{attr}' expects a computation name, found {_describe(node)}", node)


def direction(attr_value: Tree, attr: str) -> str:
    node = _value_node(attr_value)
    if isinstance(node, Token) and node.type == "NAME" and str(node) in COMPARISON_DIRECTIONS:
        return str(node)
    raise BadValue(
        f"attribute '{attr}' expects one of {', '.join(COMPARISON_DIRECTIONS)}, "
        f"found {_describe(node)}", node)


def slice_list(attr_value: Tree, attr: str) -> list[list[int]]:
    """``{[0:64], [1:5:1]}`` -> ``[[0, 64, 1], [1, 5, 1]]`` (stride defaults to 1)."""
    node = _value_node(attr_value)
    if not (isinstance(node, Tree) and node.data == "brace"):
        raise BadValue(
            f"attribute '{attr}' expects ranges such as {{[0:64], [0:32:2]}}, "
            f"found {_describe(node)}", node)
    ranges = []
    for element in _elements(node):
        bracket = _single_part(element)
        if not (isinstance(bracket, Tree) and bracket.data == "bracket"):
            raise BadValue(
                f"each range of '{attr}' is written [start:limit] or [start:limit:stride], "
                f"found {_describe(bracket)}", bracket)
        inner = _elements(bracket)
        parts = inner[0].children if len(inner) == 1 else []
        numbers = parts[0::2]
        colons = parts[1::2]
        if not (2 <= len(numbers) <= 3 and all(
                isinstance(c, Token) and c.type == "COLON" for c in colons)
                and len(parts) == 2 * len(numbers) - 1):
            raise BadValue(
                f"each range of '{attr}' is written [start:limit] or [start:limit:stride]",
                bracket)
        bounds = [_int_token(n, f"a bound of '{attr}'") for n in numbers]
        if len(bounds) == 2:
            bounds.append(1)
        ranges.append(bounds)
    return ranges


def padding_config(attr_value: Tree, attr: str) -> list[list[int]]:
    """pad's ``1_2_0x-1_1_1`` -> ``[[1, 2, 0], [-1, 1, 1]]`` (interior defaults to 0)."""
    node = _value_node(attr_value)
    if not (isinstance(node, Token) and node.type == "PADDING"):
        raise BadValue(
            f"attribute '{attr}' expects low_high_interior per dimension joined by 'x', such "
            f"as 0_0x1_2_0, found {_describe(node)}", node)
    config = []
    for dim in str(node).split("x"):
        parts = [int(p) for p in dim.split("_")]
        config.append(parts if len(parts) == 3 else [*parts, 0])
    return config


# XLA's window fields: ``size=3x3``, ``pad=1_1x0_-2``... one integer (a low_high pair for pad)
# per spatial dimension, joined by ``x``.
WINDOW_FIELDS = ("size", "stride", "pad", "lhs_dilate", "rhs_dilate", "rhs_reversal")
_WINDOW_INT = r"-?[0-9]+"
_WINDOW_VALUE = re.compile(rf"{_WINDOW_INT}(?:x{_WINDOW_INT})*\Z")
_WINDOW_PAD = re.compile(rf"{_WINDOW_INT}_{_WINDOW_INT}(?:x{_WINDOW_INT}_{_WINDOW_INT})*\Z")


def _tokens_text(tokens: list[Token]) -> str:
    """The tokens as written, a space wherever the source had a gap (whitespace or a
    comment): the lexer splits ``3x3`` into ``3`` and ``x3`` and ``1_1x0_2`` into ``1`` and
    ``_1x0_2``, so the window is decoded from its text rather than its tokens."""
    parts: list[str] = []
    end = None
    for tok in tokens:
        if end is not None and tok.start_pos > end:
            parts.append(" ")
        parts.append(str(tok))
        end = tok.end_pos
    return "".join(parts)


def window(attr_value: Tree, attr: str) -> dict[str, list]:
    """``{size=3x3 stride=2x1 pad=1_1x0_-2}`` -> ``{"size": [3, 3], "stride": [2, 1], "pad":
    [[1, 1], [0, -2]]}``: only the fields written (the type rule applies the defaults); each
    field at most once, separated by spaces."""
    node = _value_node(attr_value)
    wanted = (f"attribute '{attr}' reads {{size=3x3 stride=1x1 pad=0_0x0_0 lhs_dilate=1x1 "
              f"rhs_dilate=1x1 rhs_reversal=0x0}}")
    if not (isinstance(node, Tree) and node.data == "brace"):
        raise BadValue(f"{wanted}, found {_describe(node)}", node)
    elements = _elements(node)
    if len(elements) > 1:
        raise BadValue(f"{wanted}: fields are separated by spaces, not commas", node)
    if any(isinstance(part, Tree) for e in elements for part in e.children):
        raise BadValue(f"{wanted}, found a nested list", node)
    decoded: dict[str, list] = {}
    for field in (_tokens_text(elements[0].children).split() if elements else []):
        key, equal, value = field.partition("=")
        if not equal:
            raise BadValue(f"{wanted}: '{field}' is not key=value", node)
        if key not in WINDOW_FIELDS:
            raise BadValue(f"{wanted}: unknown field '{key}' (fields: "
                           f"{', '.join(WINDOW_FIELDS)})", node)
        if key in decoded:
            raise BadValue(f"{wanted}: the field '{key}' is given twice", node)
        if key == "pad":
            if not _WINDOW_PAD.match(value):
                raise BadValue(f"{wanted}: pad is low_high per dimension joined by 'x', such "
                               f"as 1_1x0_2, found '{value}'", node)
            decoded[key] = [[int(n) for n in dim.split("_")] for dim in value.split("x")]
        else:
            if not _WINDOW_VALUE.match(value):
                raise BadValue(f"{wanted}: {key} is one integer per dimension joined by 'x', "
                               f"such as 3x3, found '{value}'", node)
            decoded[key] = [int(n) for n in value.split("x")]
    return decoded


def dim_labels(attr_value: Tree, attr: str) -> tuple[str, str, str]:
    """``b01f_01io->b01f`` -> ``("b01f", "01io", "b01f")``: the labels of the lhs, the rhs
    and the result (act_backend.hlo.infer checks what they say)."""
    node = _value_node(attr_value)
    if not (isinstance(node, Token) and node.type == "DIM_LABELS"):
        raise BadValue(f"attribute '{attr}' expects lhs_rhs->out labels such as "
                       f"b01f_01io->b01f, found {_describe(node)}", node)
    lhs, rest = str(node).split("_", 1)
    rhs, out = rest.split("->", 1)
    return lhs, rhs, out


def raw(attr_value: Tree, text: str) -> str:
    """The value exactly as written, for attributes kept for the record only."""
    node = _value_node(attr_value)
    if isinstance(node, Token):
        return text[node.start_pos:node.end_pos]
    return text[node.meta.start_pos:node.meta.end_pos]


# Attributes with a meaning for type inference or evaluation, and their decoders. The IR
# keeps XLA's printed names (``direction`` for compare, as act_backend.hlo.infer reads it).
DECODERS: dict[str, Callable[[Tree, str], Any]] = {
    "dimensions": int_list,
    "lhs_contracting_dims": int_list,
    "rhs_contracting_dims": int_list,
    "lhs_batch_dims": int_list,
    "rhs_batch_dims": int_list,
    "dynamic_slice_sizes": int_list,
    "slice": slice_list,
    "to_apply": name_ref,
    "calls": name_ref,
    "direction": direction,
    "iota_dimension": int_scalar,
    "exponent_bits": int_scalar,
    "mantissa_bits": int_scalar,
    "padding": padding_config,
    "index": int_scalar,
    "window": window,
    "dim_labels": dim_labels,
    "feature_group_count": int_scalar,
    "batch_group_count": int_scalar,
}


def literal(node: Token | Tree) -> Any:
    """A constant's value: a number, ``true``/``false``/``inf``/``nan``, or nested ``{...}``."""
    if isinstance(node, Token):
        if node.type == "NUMBER":
            return parse_number(str(node))
        if node.type == "NAME" and str(node) in _LITERAL_WORDS:
            return _LITERAL_WORDS[str(node)]
        if node.type == "ELLIPSIS":
            raise BadValue(
                "the constant's value was left out of the text ('{...}'); print the module "
                "with its large constants", node)
        raise BadValue(f"expected a literal value, found {_describe(node)}", node)
    if node.data != "brace":
        raise BadValue(f"expected a literal value, found {_describe(node)}", node)
    return [literal(_single_part(e)) for e in _elements(node)]
