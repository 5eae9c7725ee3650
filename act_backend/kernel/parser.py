"""XLA HLO text -> ``act_backend.hlo.ir.Module``.

Reads both the hand-written style (``%`` names, typed operands, named reducers) and what
``jax.jit(f).lower(...).as_text(dialect="hlo")`` prints (bare names, ``metadata=``, debug
tables, ``region_0.1`` reducers). Names lose their ``%``; opcodes are normalised
(``exp`` -> ``exponential``, ``dynamic-slice`` -> ``dynamic_slice``); attributes with a meaning
are decoded into the architecture's encodings and the others kept as their source text.
Layouts, module-header attributes and debug tables do not change what a kernel computes and
are dropped. Every instruction records the span of its name, type, opcode, operands and
attributes.

Only what keeps a module from being built is refused here (grammar, element types,
attribute values that do not decode). What the text states twice, a typed operand
(``bf16[64] %x``) and a computation's signature, is recorded as ``Declarations`` for
``act_backend.kernel.check`` to hold against the definitions, so that it is reported with
every other problem instead of stopping the parse.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import lark
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from act_backend.hlo.dtypes import is_known
from act_backend.hlo.ir import (
    DTYPES,
    Computation,
    HloType,
    Instruction,
    Module,
    Span,
    TensorType,
    TupleType,
)
from act_backend.kernel import attributes
from act_backend.kernel.errors import HloSyntaxError
from act_backend.kernel.opcodes import normalise_opcode
from act_backend.kernel.syntax_messages import syntax_error

# Binary reducers the architecture names (reduce attrs "computation").
_REDUCER_NAMES = {"add": "add", "maximum": "max", "minimum": "min", "multiply": "mul"}


@functools.cache
def _lark() -> lark.Lark:
    grammar = resources.files("act_backend.kernel").joinpath("hlo.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=True,
                     maybe_placeholders=True)


@dataclass(frozen=True)
class Signature:
    """``(x: bf16[], y: bf16[]) -> bf16[]`` as written after a computation's name; each
    parameter is its name, type and the span of its declaration."""

    params: tuple[tuple[str, HloType, Span], ...]
    result: HloType
    result_span: Span
    span: Span


@dataclass(frozen=True)
class EntryLayout:
    """``entry_computation_layout={(bf16[64]{0}, ...)->bf16[64]{0}}`` in the module header:
    the types of the ENTRY's parameters and result (layouts dropped), each with its span;
    ``span`` is the parameter list's."""

    params: tuple[tuple[HloType, Span], ...]
    result: HloType
    result_span: Span
    span: Span


@dataclass
class Declarations:
    """What the text states besides the definitions: written operand types, signatures and
    attribute names keyed by ``id()`` of the instruction or computation they were written in
    (valid while the module lives), and the module header's entry layout."""

    operand_types: dict[int, list[HloType | None]] = field(default_factory=dict)
    signatures: dict[int, Signature] = field(default_factory=dict)
    attributes: dict[int, list[tuple[str, Span]]] = field(default_factory=dict)
    entry_layout: EntryLayout | None = None

    def written_attributes(self, instr: Instruction) -> list[tuple[str, Span]]:
        """The attributes written after the operands, by name, with their spans."""
        return self.attributes.get(id(instr), [])

    def operand_type(self, instr: Instruction, index: int) -> HloType | None:
        written = self.operand_types.get(id(instr), [])
        return written[index] if index < len(written) else None

    def signature(self, comp: Computation) -> Signature | None:
        return self.signatures.get(id(comp))


def parse_hlo(text: str, file: str | None = None) -> Module:
    """Parse HLO text into a module; raises ``HloSyntaxError`` (``file:line:col: message``)."""
    return parse_with_declarations(text, file)[0]


def parse_with_declarations(text: str, file: str | None = None) -> tuple[Module, Declarations]:
    """``parse_hlo``, plus the operand types and signatures written in the text."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise syntax_error(err, text, file) from None
    builder = _Builder(text, file)
    return builder.module(tree), builder.declarations


class _Builder:
    """Walks the parse tree once, building IR and recording spans."""

    def __init__(self, text: str, file: str | None) -> None:
        self.text = text
        self.file = file
        self.declarations = Declarations()

    # -- spans -------------------------------------------------------------------------

    def tok_span(self, tok: Token) -> Span:
        return Span(self.file, tok.line, tok.column, tok.end_line, tok.end_column)

    def node_span(self, node: Token | Tree) -> Span:
        if isinstance(node, Token):
            return self.tok_span(node)
        meta = node.meta
        return Span(self.file, meta.line, meta.column, meta.end_line, meta.end_column)

    def error(self, node: Token | Tree | Span, message: str,
              code: str = "hlo-syntax") -> HloSyntaxError:
        span = node if isinstance(node, Span) else self.node_span(node)
        return HloSyntaxError.at(span, message, code)

    # -- module ------------------------------------------------------------------------

    def module(self, tree: Tree) -> Module:
        name = None
        computations = []
        for item in tree.children:
            if item.data == "module_header":
                name = attributes.strip_percent(str(item.children[1]))
                self.module_attributes(item)
            elif item.data == "computation":
                computations.append(self.computation(item))
        if name is None:
            entries = [c for c in computations if c.is_entry]
            name = entries[0].name if entries else (
                computations[-1].name if computations else "module")
        module = Module(name=name, computations=computations, source=self.text)
        _annotate_reducers(module)
        return module

    def module_attributes(self, header: Tree) -> None:
        for attr in (c for c in header.children if isinstance(c, Tree)):
            if str(attr.children[0]) == "entry_computation_layout":
                self.declarations.entry_layout = self.entry_layout(attr.children[2])

    def entry_layout(self, attr_value: Tree) -> EntryLayout:
        """``{(type, ...)->type}``; anything else is refused where it stops fitting."""
        value = attr_value.children[0]
        wanted = "entry_computation_layout reads {(type, ...)->type}"
        if not (isinstance(value, Tree) and value.data == "brace"):
            raise self.error(value, f"{wanted}, found {self.source(value)}",
                             "entry-layout-syntax")
        close = value.children[-1]
        elements = [c for c in value.children if isinstance(c, Tree) and c.data == "belem"]
        if len(elements) != 1:
            where = elements[1] if len(elements) > 1 else close
            raise self.error(where, f"{wanted}: one parameter list, '->' and one result type",
                             "entry-layout-syntax")
        parts = list(elements[0].children)
        params_node = parts[0]
        if not (isinstance(params_node, Tree) and params_node.data == "paren"):
            raise self.error(params_node, f"{wanted}: expected '(' to open the parameter "
                             f"types, found {self.source(params_node)}", "entry-layout-syntax")
        params = tuple((self.layout_shape(list(e.children), close), self.node_span(e))
                       for e in params_node.children
                       if isinstance(e, Tree) and e.data == "belem")
        if len(parts) < 2 or not (isinstance(parts[1], Token) and parts[1].type == "ARROW"):
            where = parts[1] if len(parts) > 1 else close
            raise self.error(where, f"{wanted}: expected '->' after the parameter types",
                             "entry-layout-syntax")
        if len(parts) < 3:
            raise self.error(close, f"{wanted}: expected the result type after '->'",
                             "entry-layout-syntax")
        result = self.layout_shape(parts[2:], close)
        return EntryLayout(params=params, result=result, result_span=self.node_span(parts[2]),
                           span=self.node_span(params_node))

    def layout_shape(self, parts: list, close: Token) -> HloType:
        """A type read from a balanced token tree: ``bf16[64,64]``, an optional layout
        ``{1,0}`` after it, or a tuple ``(type, ...)``."""
        wanted = "entry_computation_layout reads {(type, ...)->type}"
        first = parts[0]
        if isinstance(first, Tree) and first.data == "paren":
            if len(parts) > 1:
                raise self.error(parts[1], f"{wanted}: unexpected {self.source(parts[1])} "
                                 "after a tuple type", "entry-layout-syntax")
            return TupleType(tuple(self.layout_shape(list(e.children), close)
                                   for e in first.children
                                   if isinstance(e, Tree) and e.data == "belem"))
        if not (isinstance(first, Token) and first.type == "NAME"):
            raise self.error(first, f"{wanted}: expected a type such as bf16[64,64], found "
                             f"{self.source(first)}", "entry-layout-syntax")
        if len(parts) < 2 or not (isinstance(parts[1], Tree) and parts[1].data == "bracket"):
            where = parts[1] if len(parts) > 1 else close
            raise self.error(where, f"{wanted}: expected '[' after the element type "
                             f"'{first}'", "entry-layout-syntax")
        rest = parts[2:]
        if rest and not (len(rest) == 1 and isinstance(rest[0], Tree)
                         and rest[0].data == "brace"):
            where = rest[1] if len(rest) > 1 else rest[0]
            raise self.error(where, f"{wanted}: unexpected {self.source(where)} after the "
                             "type", "entry-layout-syntax")
        dtype = str(first)
        if dtype not in DTYPES or not is_known(dtype):
            raise self.error(first, f"unknown element type '{dtype}'; expected one of "
                             + ", ".join(DTYPES))
        dims = []
        for element in (c for c in parts[1].children
                        if isinstance(c, Tree) and c.data == "belem"):
            bits = element.children
            value = (attributes.parse_number(str(bits[0]))
                     if len(bits) == 1 and isinstance(bits[0], Token)
                     and bits[0].type == "NUMBER" else None)
            if not isinstance(value, int) or value < 0:
                raise self.error(element, "a dimension must be a non-negative integer, found "
                                 f"{self.source(element)}", "entry-layout-syntax")
            dims.append(value)
        return TensorType(dtype, tuple(dims))

    def source(self, node: Token | Tree) -> str:
        if isinstance(node, Token):
            return f"'{node}'"
        return f"'{self.text[node.meta.start_pos:node.meta.end_pos]}'"

    # -- computations ------------------------------------------------------------------

    def computation(self, tree: Tree) -> Computation:
        entry_tok, name_tok, signature = tree.children[0], tree.children[1], tree.children[2]
        instructions = [self.instruction(c) for c in tree.children
                        if isinstance(c, Tree) and c.data == "instruction"]
        comp = Computation(name=attributes.strip_percent(str(name_tok)),
                           instructions=instructions, is_entry=entry_tok is not None,
                           span=self.tok_span(name_tok))
        if signature is not None:
            decls = [c for c in signature.children
                     if isinstance(c, Tree) and c.data == "param_decl"]
            result = signature.children[-1]
            self.declarations.signatures[id(comp)] = Signature(
                params=tuple((attributes.strip_percent(str(d.children[0])),
                              self.shape(d.children[2]), self.node_span(d)) for d in decls),
                result=self.shape(result), result_span=self.node_span(result),
                span=self.node_span(signature))
        return comp

    # -- instructions ------------------------------------------------------------------

    def instruction(self, tree: Tree) -> Instruction:
        children = list(tree.children)
        root_tok = children[0]
        name_tok = children[1]
        shape_tree = children[3]
        opcode_tok = children[4]
        operand_trees = [c for c in children[5:] if isinstance(c, Tree) and c.data in (
            "name_operand", "typed_operand", "number_operand", "literal_operand")]
        attr_trees = [c for c in children if isinstance(c, Tree) and c.data == "attribute"]

        opcode = normalise_opcode(str(opcode_tok))
        name = attributes.strip_percent(str(name_tok))
        spans = {"name": self.tok_span(name_tok), "opcode": self.tok_span(opcode_tok),
                 "type": self.node_span(shape_tree)}
        instr = Instruction(name=name, opcode=opcode, type=self.shape(shape_tree),
                            operands=[], is_root=root_tok is not None,
                            span=self.node_span(tree), spans=spans)

        # The parenthesised argument of parameter and constant is their index or value.
        written: list[HloType | None] = []
        if opcode == "parameter":
            instr.attrs["index"] = self.parameter_index(instr, operand_trees, opcode_tok)
            spans["attr:index"] = self.node_span(operand_trees[0])
        elif opcode == "constant":
            instr.attrs["value"] = self.constant_value(instr, operand_trees, opcode_tok)
            spans["attr:value"] = self.node_span(operand_trees[0])
        else:
            for index, operand in enumerate(operand_trees):
                ref, written_type = self.operand_name(instr, operand)
                instr.operands.append(ref)
                written.append(written_type)
                spans[f"operand:{index}"] = self.node_span(operand)
        self.declarations.operand_types[id(instr)] = written

        self.declarations.attributes[id(instr)] = [
            (str(a.children[0]), self.node_span(a)) for a in attr_trees]
        for attr in attr_trees:
            self.attribute(instr, attr)
        if opcode == "dot":
            for key in ("lhs_contracting_dims", "rhs_contracting_dims",
                        "lhs_batch_dims", "rhs_batch_dims"):
                instr.attrs.setdefault(key, [])
        return instr

    def parameter_index(self, instr: Instruction, operands: list[Tree], opcode: Token) -> int:
        if len(operands) != 1 or operands[0].data != "number_operand":
            where = operands[0] if operands else opcode
            raise self.error(where, f"parameter '{instr.name}' needs its index, "
                             "as in parameter(0)")
        tok = operands[0].children[0]
        value = attributes.parse_number(str(tok))
        if not isinstance(value, int) or value < 0:
            raise self.error(tok, f"the index of parameter '{instr.name}' must be a "
                             f"non-negative integer, found '{tok}'")
        return value

    def constant_value(self, instr: Instruction, operands: list[Tree], opcode: Token) -> Any:
        if len(operands) != 1:
            where = operands[1] if len(operands) > 1 else opcode
            raise self.error(where, f"constant '{instr.name}' takes one literal value, "
                             "as in constant(0) or constant({1, 2})")
        node = operands[0].children[-1]
        try:
            return attributes.literal(node)
        except attributes.BadValue as bad:
            raise self.error(bad.node, f"constant '{instr.name}': {bad.message}") from None

    def operand_name(self, instr: Instruction, operand: Tree) -> tuple[str, HloType | None]:
        if operand.data == "name_operand":
            return attributes.strip_percent(str(operand.children[0])), None
        if operand.data == "typed_operand":
            declared = self.shape(operand.children[0])
            return attributes.strip_percent(str(operand.children[1])), declared
        raise self.error(operand, f"expected an operand name in '{instr.name}', found the "
                         "literal " + self.text[operand.meta.start_pos:operand.meta.end_pos]
                         + " (only constant() takes a literal)")

    def attribute(self, instr: Instruction, tree: Tree) -> None:
        name_tok, value = tree.children[0], tree.children[2]
        key = str(name_tok)
        if key in instr.attrs:
            raise self.error(name_tok, f"attribute '{key}' is given twice in '{instr.name}'",
                             "duplicate-attribute")
        decoder = attributes.DECODERS.get(key)
        if decoder is None:
            instr.attrs[key] = attributes.raw(value, self.text)
        else:
            try:
                instr.attrs[key] = decoder(value, key)
            except attributes.BadValue as bad:
                raise self.error(bad.node, f"in '{instr.name}': {bad.message}") from None
        instr.spans[f"attr:{key}"] = self.node_span(tree)

    # -- types -------------------------------------------------------------------------

    def shape(self, tree: Tree) -> HloType:
        if tree.data == "tuple_shape":
            return TupleType(tuple(self.shape(c) for c in tree.children
                                   if isinstance(c, Tree)))
        dtype_tok = tree.children[0]
        dtype = str(dtype_tok)
        if dtype not in DTYPES or not is_known(dtype):
            raise self.error(dtype_tok, f"unknown element type '{dtype}'; expected one of "
                             + ", ".join(DTYPES))
        dims = []
        for dim in tree.children[1:]:
            if isinstance(dim, Tree) and dim.data == "dim":
                tok = dim.children[0]
                value = attributes.parse_number(str(tok))
                if not isinstance(value, int) or value < 0:
                    raise self.error(tok, f"a dimension must be a non-negative integer, "
                                     f"found '{tok}'")
                dims.append(value)
        return TensorType(dtype, tuple(dims))


def _annotate_reducers(module: Module) -> None:
    """Give ``reduce`` the architecture's ``computation`` attr when its region is a plain
    binary add/max/min/mul of its two parameters (any other region is evaluated as written);
    ``reduce_add`` always reduces with add."""
    names = {c.name: c for c in module.computations}
    for comp in module.computations:
        for instr in comp.instructions:
            if instr.opcode == "reduce_add":
                instr.attrs.setdefault("computation", "add")
            elif instr.opcode == "reduce" and "to_apply" in instr.attrs:
                region = names.get(instr.attrs["to_apply"])
                kind = _binary_reducer(region) if region is not None else None
                if kind is not None:
                    instr.attrs.setdefault("computation", kind)


def _binary_reducer(region: Computation) -> str | None:
    params = [i for i in region.instructions if i.opcode == "parameter"]
    if len(params) != 2 or len(region.instructions) != 3:
        return None
    root = region.root
    if root.opcode not in _REDUCER_NAMES or len(root.operands) != 2:
        return None
    if sorted(root.operands) != sorted(p.name for p in params):
        return None
    return _REDUCER_NAMES[root.opcode]
