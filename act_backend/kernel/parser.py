"""XLA HLO text -> ``act_backend.hlo.ir.Module``.

Reads both the hand-written style (``%`` names, typed operands, named reducers) and what
``jax.jit(f).lower(...).as_text(dialect="hlo")`` prints (bare names, ``metadata=``, debug
tables, ``region_0.1`` reducers). Names lose their ``%``; opcodes are normalised
(``exp`` -> ``exponential``, ``dynamic-slice`` -> ``dynamic_slice``); attributes with a meaning
are decoded into the architecture's encodings and the others kept as their source text.
Layouts, module-header attributes and debug tables do not change what a kernel computes and
are dropped. Every instruction records the span of its name, type, opcode, operands and
attributes.

What the text alone settles is checked here, as XLA's own parser does: element types, a
declared operand type against the operand's definition, a computation's signature against
its parameters and ROOT. Everything else (unknown operators, undefined operands, shapes) is
left to ``act_backend.kernel.check`` so that all of it can be reported at once.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import lark
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from act_backend.hlo.dtypes import is_known
from act_backend.hlo.ir import DTYPES, Computation, Instruction, Module, Span, TensorType
from act_backend.kernel import attributes
from act_backend.kernel.errors import HloSyntaxError
from act_backend.kernel.opcodes import normalise_opcode
from act_backend.kernel.shapes import HloType, TupleType
from act_backend.kernel.syntax_messages import syntax_error

# Binary reducers the architecture names (reduce attrs "computation").
_REDUCER_NAMES = {"add": "add", "maximum": "max", "minimum": "min", "multiply": "mul"}


@functools.cache
def _lark() -> lark.Lark:
    grammar = resources.files("act_backend.kernel").joinpath("hlo.lark").read_text()
    return lark.Lark(grammar, parser="lalr", propagate_positions=True,
                     maybe_placeholders=True)


def parse_hlo(text: str, file: str | None = None) -> Module:
    """Parse HLO text into a module; raises ``HloSyntaxError`` (``file:line:col: message``)."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as err:
        raise syntax_error(err, text, file) from None
    return _Builder(text, file).module(tree)


class _Builder:
    """Walks the parse tree once, building IR and recording spans."""

    def __init__(self, text: str, file: str | None) -> None:
        self.text = text
        self.file = file
        # Operand types written in the text (``bf16[64] %x``), by instruction, checked once
        # every instruction of the computation is known.
        self._declared: dict[int, list[HloType | None]] = {}

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
        signatures: list[tuple[Computation, Tree | None]] = []
        for item in tree.children:
            if item.data == "module_header":
                name = attributes.strip_percent(str(item.children[1]))
            elif item.data == "computation":
                comp, signature = self.computation(item)
                computations.append(comp)
                signatures.append((comp, signature))
        if name is None:
            entries = [c for c in computations if c.is_entry]
            name = entries[0].name if entries else (
                computations[-1].name if computations else "module")
        module = Module(name=name, computations=computations, source=self.text)
        for comp, signature in signatures:
            self.check_declared_operand_types(comp)
            if signature is not None:
                self.check_signature(comp, signature)
        _annotate_reducers(module)
        return module

    # -- computations ------------------------------------------------------------------

    def computation(self, tree: Tree) -> tuple[Computation, Tree | None]:
        entry_tok, name_tok, signature = tree.children[0], tree.children[1], tree.children[2]
        instructions = [self.instruction(c) for c in tree.children
                        if isinstance(c, Tree) and c.data == "instruction"]
        comp = Computation(name=attributes.strip_percent(str(name_tok)),
                           instructions=instructions, is_entry=entry_tok is not None,
                           span=self.tok_span(name_tok))
        return comp, signature

    def check_signature(self, comp: Computation, signature: Tree) -> None:
        """A written signature must agree with the parameters and the ROOT, as in XLA."""
        decls = [c for c in signature.children if isinstance(c, Tree) and c.data == "param_decl"]
        params = [i for i in comp.instructions if i.opcode == "parameter"]
        if len(decls) != len(params):
            raise self.error(signature, f"computation '{comp.name}' declares {len(decls)} "
                             f"parameter(s) but defines {len(params)}", "signature-mismatch")
        by_index = {p.attrs.get("index"): p for p in params}
        for index, decl in enumerate(decls):
            declared = self.shape(decl.children[2])
            param = by_index.get(index)
            if param is not None and param.type != declared:
                raise self.error(decl, f"computation '{comp.name}' declares parameter {index} "
                                 f"as {declared}, but '{param.name}' is {param.type}",
                                 "signature-mismatch")
        declared_result = self.shape(signature.children[-1])
        roots = [i for i in comp.instructions if i.is_root]
        if len(roots) == 1 and roots[0].type != declared_result:
            raise self.error(signature.children[-1],
                             f"computation '{comp.name}' declares its result as "
                             f"{declared_result}, but ROOT '{roots[0].name}' is "
                             f"{roots[0].type}", "signature-mismatch")

    def check_declared_operand_types(self, comp: Computation) -> None:
        """``bf16[64,64] %K`` must name the type ``%K`` was defined with."""
        types = {i.name: i.type for i in comp.instructions}
        for instr in comp.instructions:
            for index, (name, declared) in enumerate(
                    zip(instr.operands, self._declared[id(instr)], strict=True)):
                if declared is not None and name in types and types[name] != declared:
                    raise self.error(instr.spans[f"operand:{index}"],
                                     f"operand {index} of '{instr.name}' is written as "
                                     f"{declared}, but '{name}' is {types[name]}",
                                     "operand-type-mismatch")

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

        declared: list[HloType | None] = []
        for index, operand in enumerate(operand_trees):
            spans[f"operand:{index}"] = self.node_span(operand)
        if opcode == "parameter":
            instr.attrs["index"] = self.parameter_index(instr, operand_trees, tree)
        elif opcode == "constant":
            instr.attrs["value"] = self.constant_value(instr, operand_trees, tree)
        else:
            for operand in operand_trees:
                ref, declared_type = self.operand_name(instr, operand)
                instr.operands.append(ref)
                declared.append(declared_type)
        if opcode in ("parameter", "constant"):
            # Their parenthesised argument is not an operand but the index or the value.
            for index in range(len(operand_trees)):
                spans.pop(f"operand:{index}")
            key = "attr:index" if opcode == "parameter" else "attr:value"
            spans[key] = self.node_span(operand_trees[0])
        self._declared[id(instr)] = declared

        for attr in attr_trees:
            self.attribute(instr, attr)
        if opcode == "dot":
            for key in ("lhs_contracting_dims", "rhs_contracting_dims",
                        "lhs_batch_dims", "rhs_batch_dims"):
                instr.attrs.setdefault(key, [])
        return instr

    def parameter_index(self, instr: Instruction, operands: list[Tree], tree: Tree) -> int:
        if len(operands) != 1 or operands[0].data != "number_operand":
            where = operands[0] if operands else tree
            raise self.error(where, f"parameter '{instr.name}' needs its index, "
                             "as in parameter(0)")
        tok = operands[0].children[0]
        value = attributes.parse_number(str(tok))
        if not isinstance(value, int) or value < 0:
            raise self.error(tok, f"the index of parameter '{instr.name}' must be a "
                             f"non-negative integer, found '{tok}'")
        return value

    def constant_value(self, instr: Instruction, operands: list[Tree], tree: Tree) -> Any:
        if len(operands) != 1:
            where = operands[1] if len(operands) > 1 else tree
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
            raise self.error(name_tok, f"attribute '{key}' is given twice in '{instr.name}'")
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
