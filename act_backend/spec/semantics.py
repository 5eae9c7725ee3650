"""The parser of TAIDL v2 instruction semantics (``semantics.lark``) into the HLO IR.

``parse_semantics(text, text_map)`` returns an ``act_backend.hlo.ir.Module`` whose every
instruction records where its name, opcode, type, dimensions, operands and attributes were
written (``Instruction.spans``), in the spec file when the text's place there is known
(``act_backend.spec.sites.TextMap``). A syntax error or an operator outside the language is
a ``SemanticsError`` with a message, a stable code and a span.

Encodings produced (read by ``act_backend.hlo.infer`` and the ISA table): ``parameter(i)``
-> ``attrs["index"]``; ``constant(v)`` -> ``attrs["value"]`` (a number, nested lists, or an
integer expression for ``constant(`@c.scale`)``); dimension lists -> lists of
int; ``slice={[a:b:s], ...}`` -> ``attrs["slice"]`` as ``(start, limit, stride)`` dims;
``to_apply=add`` -> the reducer's name as written (``reducer_of`` reads it). ``exp`` is
normalised to ``exponential``.

TAIDL-TO's dialect is read too: a backquoted number is a literal (``constant(`0.5`)``), and a
``reduce`` without an init value gets its reducer's identity as one, a constant inserted just
before it, so that every later stage sees XLA's two-operand reduce.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import lark

from act_backend.hlo import expr as ex
from act_backend.hlo import vocabulary
from act_backend.hlo.ir import SPEC_DTYPES, Computation, Instruction, Module, Span, TensorType
from act_backend.spec.sites import OwnTextMap, TextMap

# The operator set of the TAIDL v2 semantics language and the attributes each accepts: the
# vocabulary's operators that semantics may use.
_SEMANTICS = [op for op in vocabulary.OPERATORS if op.semantics]
OPERATOR_ATTRS: dict[str, tuple[str, ...]] = {op.name: op.attributes for op in _SEMANTICS}
OPERATORS = tuple(sorted(OPERATOR_ATTRS))
ALIASES = {alias: op.name for op in _SEMANTICS for alias in op.aliases}
# Attributes without which an operator means nothing (dot's batch dims default to none).
REQUIRED_ATTRS: dict[str, tuple[str, ...]] = {op.name: op.required for op in _SEMANTICS
                                              if op.required}
# Reducers a TAIDL ``reduce`` may name, normalised to the ISA table's names.
REDUCERS = {"add": "add", "sum": "add", "max": "max", "maximum": "max", "min": "min",
            "minimum": "min", "mul": "mul", "multiply": "mul"}
_INT_LIST_ATTRS = frozenset({"dimensions", "lhs_contracting_dims", "rhs_contracting_dims",
                             "lhs_batch_dims", "rhs_batch_dims"})


class SemanticsError(ValueError):
    """A refusal of a semantics text: ``code`` is stable, ``span`` where it was found."""

    def __init__(self, message: str, span: Span | None, code: str = "semantics-syntax"):
        super().__init__(message)
        self.message = message
        self.span = span
        self.code = code


_GRAMMAR = (Path(__file__).with_name("semantics.lark")).read_text(encoding="utf-8")
_PARSER = lark.Lark(_GRAMMAR, parser="lalr", propagate_positions=True,
                    maybe_placeholders=True)

# Known-bad snippets: an error that looks like one of them gets its friendlier label.
_EXAMPLES: dict[str, list[str]] = {
    "the semantics must start with 'ENTRY <name> {'": [
        "gemm { %a = u8[1] parameter(0); }",
        "{ %a = u8[1] parameter(0); }",
        "ENTRY { %a = u8[1] parameter(0); }",
    ],
    "an instruction is '<name> = <type>[<shape>] <operator>(<operands>)'": [
        "ENTRY e { %a u8[1] parameter(0); }",
        "ENTRY e { %a = parameter(0); }",
        "ENTRY e { %a = u8[1]; }",
        "ENTRY e { %a = u8 parameter(0); }",
    ],
    "operands go in parentheses after the operator, separated by commas": [
        "ENTRY e { %a = u8[1] parameter 0; }",
        "ENTRY e { %a = u8[1] add(%x %y); }",
        "ENTRY e { %a = u8[1] add(%x, %y; }",
    ],
    "a shape is a bracketed list of integers or backquoted expressions, such as "
    "[64, `@c.n`]": [
        "ENTRY e { %a = u8[1 2] parameter(0); }",
        "ENTRY e { %a = u8[1, parameter(0); }",
    ],
    "attributes follow the operands as ', name=value'": [
        "ENTRY e { %a = u8[1] transpose(%x) dimensions={1,0}; }",
        "ENTRY e { %a = u8[1] transpose(%x), dimensions; }",
        "ENTRY e { %a = u8[1] transpose(%x), dimensions={1,0}, ; }",
    ],
    "a brace list is '{a, b}' or a list of slice ranges '{[start:limit], ...}'": [
        "ENTRY e { %a = u8[1] transpose(%x), dimensions={1 0}; }",
        "ENTRY e { %a = u8[1] slice(%x), slice={[0:1}; }",
        "ENTRY e { %a = u8[1] slice(%x), slice={[0]}; }",
    ],
    "the computation is not closed: a '}' is missing": [
        "ENTRY e { %a = u8[1] parameter(0);",
    ],
    "the computation needs at least one instruction": [
        "ENTRY e { }",
    ],
}

_TOKEN_WORDS = {"NAME": "a name", "NUMBER": "a number", "EXPR": "a backquoted expression",
                "ENTRY": "ENTRY", "ROOT": "ROOT", "LBRACE": "'{'", "RBRACE": "'}'",
                "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "COMMA": "','",
                "EQUAL": "'='", "SEMICOLON": "';'", "COLON": "':'", "$END": "the end"}


def parse_semantics(text: str, text_map: TextMap | None = None,
                    file: str | None = None) -> Module:
    """Parse one instruction's semantics. ``text_map`` places text offsets in the spec file;
    without it, positions are within ``text`` itself (in ``file`` when given)."""
    where = text_map if text_map is not None else OwnTextMap(text, file)
    try:
        tree = _PARSER.parse(text)
    except lark.UnexpectedInput as err:
        raise _syntax_error(err, text, where) from None
    return _Builder(text, where).module(tree)


def _syntax_error(err: lark.UnexpectedInput, text: str, where: TextMap) -> SemanticsError:
    label = None
    try:
        label = err.match_examples(_PARSER.parse, _EXAMPLES, use_accepts=True)
    except Exception:  # matching is a nicety; the plain message below stands on its own
        label = None
    if isinstance(err, lark.UnexpectedCharacters):
        start = err.pos_in_stream
        found = f"unexpected character {text[start]!r}"
        end = start + 1
    elif isinstance(err, lark.UnexpectedToken) and err.token.type != "$END":
        start, end = err.token.start_pos, err.token.end_pos
        found = f"unexpected {str(err.token)!r}"
        expected = sorted({_TOKEN_WORDS.get(t, t) for t in (err.accepts or err.expected)})
        if expected:
            found += f" (expected {', '.join(expected)})"
    else:
        start = len(text.rstrip())
        end = start + 1
        found = "the text ends too early"
    line, col = _line_col(text, start)
    message = f"syntax error in line {line} of the semantics, column {col}: {found}"
    if label:
        message += f"; {label}"
    return SemanticsError(message, where.span(start, end), "semantics-syntax")


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


@dataclass
class _Builder:
    text: str
    where: TextMap

    def span(self, start: int, end: int) -> Span | None:
        return self.where.span(start, end)

    def token_span(self, token: lark.Token) -> Span | None:
        return self.span(token.start_pos, token.end_pos)

    def node_span(self, node: lark.Tree | lark.Token) -> Span | None:
        if isinstance(node, lark.Token):
            return self.token_span(node)
        return self.span(node.meta.start_pos, node.meta.end_pos)

    def fail(self, node: lark.Tree | lark.Token, message: str,
             code: str = "semantics-syntax") -> SemanticsError:
        return SemanticsError(message, self.node_span(node), code)

    # -- structure ----------------------------------------------------------------------------

    def module(self, tree: lark.Tree) -> Module:
        entry, name, *instrs = tree.children
        instructions = _with_reduce_inits([self.instruction(node) for node in instrs])
        # The computation is placed at its header, "ENTRY <name>": a short anchor for
        # problems about the whole computation.
        comp = Computation(_strip(name), instructions, is_entry=True,
                           span=self.span(entry.start_pos, name.end_pos))
        return Module(_strip(name), [comp], source=self.text)

    def instruction(self, node: lark.Tree) -> Instruction:
        root, name, type_node, opcode_token, *rest = node.children
        operand_nodes: list = []
        attr_nodes: list = []
        for child in rest:
            if isinstance(child, lark.Tree) and child.data == "attribute":
                attr_nodes.append(child)
            elif child is not None:
                operand_nodes.append(child)
        spans: dict[str, Span] = {}
        _put(spans, "name", self.token_span(name))
        _put(spans, "opcode", self.token_span(opcode_token))
        _put(spans, "type", self.node_span(type_node))
        opcode = ALIASES.get(str(opcode_token), str(opcode_token))
        if opcode not in OPERATOR_ATTRS:
            raise self.fail(opcode_token, f"unknown operator '{opcode_token}' in instruction "
                            f"'{_strip(name)}'; the TAIDL semantics language accepts: "
                            f"{', '.join(OPERATORS)}", "unknown-operator")
        instr = Instruction(_strip(name), opcode, self.tensor_type(type_node, spans), [],
                            is_root=root is not None, span=self.node_span(node), spans=spans)
        self.operands(instr, operand_nodes)
        for attr in attr_nodes:
            self.attribute(instr, attr)
        return instr

    def tensor_type(self, node: lark.Tree, spans: dict[str, Span]) -> TensorType:
        dtype_token, *dims = node.children
        if str(dtype_token) not in SPEC_DTYPES:
            raise self.fail(dtype_token, f"unknown element type '{dtype_token}' (accepted: "
                            f"{', '.join(SPEC_DTYPES)})", "unknown-dtype")
        shape = []
        for k, dim in enumerate(d for d in dims if d is not None):
            _put(spans, f"dim:{k}", self.node_span(dim))
            shape.append(self.dim(dim, f"dimension {k} of the type"))
        return TensorType(str(dtype_token), tuple(shape))

    # -- values -------------------------------------------------------------------------------

    def dim(self, node, what: str) -> ex.Dim:
        if isinstance(node, lark.Token) and node.type == "EXPR":
            return self.expression(node)
        if isinstance(node, lark.Token) and node.type == "NUMBER" and _is_int(node):
            return int(node)
        raise self.fail(node, f"{what} must be an integer or a backquoted expression such as "
                        f"`@c.n`, found {_show(node)}")

    def expression(self, token: lark.Token) -> ex.Dim:
        inner = str(token)[1:-1]
        try:
            parsed = ex.parse_expr(inner, offset=token.start_pos + 1)
        except ex.ExprSyntaxError as err:
            raise SemanticsError(err.message,
                                 self.span(err.start, err.end), "expression-syntax") from None
        return ex.fold(parsed)

    def operands(self, instr: Instruction, nodes: list) -> None:
        if instr.opcode == "parameter":
            if len(nodes) != 1 or not (isinstance(nodes[0], lark.Token) and _is_int(nodes[0])):
                at = nodes[0] if nodes else None
                raise SemanticsError(f"parameter '{instr.name}' takes one integer, its index "
                                     "(parameter(0) is the first input slice)",
                                     self.node_span(at) if at is not None else
                                     instr.spans.get("opcode"), "parameter-index")
            instr.attrs["index"] = int(nodes[0])
            _put(instr.spans, "attr:index", self.node_span(nodes[0]))
            return
        if instr.opcode == "constant":
            if len(nodes) != 1:
                raise SemanticsError(f"constant '{instr.name}' takes one literal, found "
                                     f"{len(nodes)}", instr.spans.get("opcode"),
                                     "constant-literal")
            instr.attrs["value"] = self.literal(nodes[0])
            _put(instr.spans, "attr:value", self.node_span(nodes[0]))
            return
        for i, node in enumerate(nodes):
            _put(instr.spans, f"operand:{i}", self.node_span(node))
            if not (isinstance(node, lark.Token) and node.type == "NAME"):
                raise self.fail(node, f"operand {i} of {instr.opcode} '{instr.name}' must name "
                                f"a value such as %In1, found {_show(node)}")
            instr.operands.append(_strip(node))

    def literal(self, node):
        if isinstance(node, lark.Token) and node.type == "NUMBER":
            return int(node) if _is_int(node) else float(node)
        if isinstance(node, lark.Token) and node.type == "EXPR":
            # constant(`0.5`): TAIDL-TO's grammar lexes no float outside backquotes, so specs
            # written for it quote float literals.
            quoted = str(node)[1:-1].strip()
            if _is_number(quoted):
                return int(quoted) if _is_int(quoted) else float(quoted)
            # constant(`@c.scale`): every element is the attribute expression's value.
            return self.expression(node)
        if isinstance(node, lark.Tree) and node.data == "braced":
            return [self.literal(item) for item in node.children if item is not None]
        raise self.fail(node, f"a constant's literal must be a number, a brace list of "
                        f"numbers or a backquoted expression such as `@c.scale`, found "
                        f"{_show(node)}", "constant-literal")

    def attribute(self, instr: Instruction, node: lark.Tree) -> None:
        name_token, value = node.children
        name = str(name_token)
        key = f"attr:{name}"
        if name in instr.attrs:
            raise self.fail(name_token, f"attribute {name} is given twice in {instr.opcode} "
                            f"'{instr.name}'", "duplicate-attribute")
        # The attribute's span is its "name=value" text, without the leading comma.
        _put(instr.spans, key, self.span(name_token.start_pos, node.meta.end_pos))
        if name in _INT_LIST_ATTRS:
            instr.attrs[name] = self.int_list(value, name)
        elif name == "slice":
            instr.attrs[name] = self.slice_ranges(value)
        elif name == "to_apply":
            if not (isinstance(value, lark.Token) and value.type == "NAME"):
                raise self.fail(value, f"to_apply names a reducer ({', '.join(sorted(REDUCERS))})"
                                f", found {_show(value)}", "bad-attribute")
            instr.attrs[name] = _strip(value)
        else:
            instr.attrs[name] = self.generic(value)

    def int_list(self, node, name: str) -> list[int]:
        items = node.children if isinstance(node, lark.Tree) and node.data == "braced" \
            else [node]
        out = []
        for item in items:
            if item is None:
                continue
            if not (isinstance(item, lark.Token) and item.type == "NUMBER" and _is_int(item)):
                raise self.fail(item, f"{name} lists dimension numbers such as {{1, 0}}, found "
                                f"{_show(item)}", "bad-attribute")
            out.append(int(item))
        return out

    def slice_ranges(self, node) -> list[tuple[ex.Dim, ex.Dim, ex.Dim]]:
        if not (isinstance(node, lark.Tree) and node.data == "braced"):
            raise self.fail(node, "slice is a list of ranges such as {[0:64], [0:`@c.n`:1]}",
                            "bad-attribute")
        ranges = []
        for item in node.children:
            if item is None:
                continue
            if not (isinstance(item, lark.Tree) and item.data == "range"):
                raise self.fail(item, f"slice is a list of ranges such as {{[0:64]}}, found "
                                f"{_show(item)}", "bad-attribute")
            start, limit, stride = item.children
            ranges.append((self.dim(start, "a slice start"), self.dim(limit, "a slice limit"),
                           self.dim(stride, "a slice stride") if stride is not None else 1))
        return ranges

    def generic(self, node):
        if isinstance(node, lark.Token):
            if node.type == "NUMBER":
                return int(node) if _is_int(node) else float(node)
            if node.type == "EXPR":
                return self.expression(node)
            return _strip(node)
        return [self.generic(item) for item in node.children if item is not None]


def read_splats(module: Module) -> None:
    """TAIDL writes a splat as ``broadcast`` of a one-element array with ``dimensions={}``
    (``broadcast(%scale), dimensions={}`` of an ``s8[1]``), which HLO reads as a rank
    mismatch. Such a broadcast is read as the splat it means: its operand is first reshaped
    to a scalar (an inserted ``reshape`` named after the broadcast, placed where the
    broadcast was written), and the broadcast takes the scalar. Validation calls this on the
    parsed semantics, so that the table holds HLO; the parse itself keeps what was written."""
    comp = module.entry
    comp.instructions[:] = _splats(comp.instructions)


def _splats(instructions: list[Instruction]) -> list[Instruction]:
    declared = {i.name: i.type for i in instructions}
    names = set(declared)
    out: list[Instruction] = []
    for instr in instructions:
        operand = instr.operands[0] if len(instr.operands) == 1 else None
        src = declared.get(operand) if operand is not None else None
        if (instr.opcode == "broadcast" and instr.attrs.get("dimensions") == [] and src
                is not None and src.shape
                and all(ex.compare(d, 1) is ex.Agreement.ALWAYS for d in src.shape)):
            scalar = f"{instr.name}.scalar"
            while scalar in names:
                scalar += "_"
            names.add(scalar)
            spans = {k: v for k, v in instr.spans.items() if k in ("name", "opcode")}
            if "operand:0" in instr.spans:
                spans["operand:0"] = instr.spans["operand:0"]
            out.append(Instruction(scalar, "reshape", TensorType(src.dtype, ()), [operand],
                                   span=instr.span, spans=spans))
            instr.operands[0] = scalar
        out.append(instr)
    return out


def _put(spans: dict[str, Span], key: str, span: Span | None) -> None:
    if span is not None:
        spans[key] = span


def _strip(name) -> str:
    text = str(name)
    return text[1:] if text.startswith("%") else text


def _is_int(token: lark.Token | str) -> bool:
    return str(token).lstrip("-").isdigit()


# The grammar's NUMBER token, for a literal written inside backquotes.
_NUMBER = re.compile(r"-?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _is_number(text: str) -> bool:
    return _NUMBER.fullmatch(text) is not None


def _show(node) -> str:
    if isinstance(node, lark.Token):
        return f"'{node}'"
    if isinstance(node, lark.Tree) and node.data == "braced":
        return "a brace list"
    if isinstance(node, lark.Tree) and node.data == "range":
        return "a slice range"
    return "something else"


def attribute_problems(instr: Instruction) -> list[tuple[str, str, str]]:
    """Attributes an operator does not accept or lacks: ``(code, message, where)`` each."""
    accepted = OPERATOR_ATTRS.get(instr.opcode, ())
    problems = []
    internal = {"index", "value"}  # written as operands (parameter(0), constant(1))
    for name in instr.attrs:
        if name in internal or name in accepted:
            continue
        accepts = f"accepts {', '.join(accepted)}" if accepted else "takes no attributes"
        problems.append(("unknown-attribute", f"{instr.opcode} '{instr.name}' {accepts}; "
                         f"found {name}=", f"attr:{name}"))
    for name in REQUIRED_ATTRS.get(instr.opcode, ()):
        if name not in instr.attrs:
            problems.append(("missing-attribute", f"{instr.opcode} '{instr.name}' needs "
                             f"{name}=", "opcode"))
    name = instr.attrs.get("to_apply")
    if instr.opcode == "reduce" and name is not None:
        problems.extend(_reducer_problems(instr, name))
    return problems


def _with_reduce_inits(instructions: list[Instruction]) -> list[Instruction]:
    """Gives a ``reduce`` written without an init value (TAIDL-TO's ``reduce(%x)``) the
    identity of its reducer as one, a scalar constant just before it, so that every later
    stage reads the two-operand reduce of XLA."""
    taken = {instr.name for instr in instructions}
    out = []
    for instr in instructions:
        reducer = reducer_of(instr.attrs.get("to_apply") or "")
        dtype = getattr(instr.type, "dtype", None)
        if instr.opcode == "reduce" and len(instr.operands) == 1 and reducer and dtype:
            name = _fresh(f"{instr.name}.init", taken)
            # Placed at the reduce, with no name or type written anywhere of its own.
            out.append(Instruction(name, "constant", TensorType(dtype, ()), [],
                                   attrs={"value": reducer_identity(reducer, dtype)},
                                   span=instr.span))
            instr.operands.append(name)
            _put(instr.spans, "operand:1", instr.spans.get("opcode"))
        out.append(instr)
    return out


def _fresh(name: str, taken: set[str]) -> str:
    candidate, k = name, 1
    while candidate in taken:
        candidate, k = f"{name}{k}", k + 1
    taken.add(candidate)
    return candidate


def reducer_identity(reducer: str, dtype: str) -> int | float:
    """The value ``reducer`` leaves unchanged in ``dtype``: what a reduce starts from."""
    if reducer in ("add", "mul"):
        return 0 if reducer == "add" else 1
    if dtype.startswith(("s", "u")):
        bits = int(dtype[1:])
        low, high = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if dtype[0] == "s" \
            else (0, (1 << bits) - 1)
        return low if reducer == "max" else high
    return -math.inf if reducer == "max" else math.inf


def reducer_of(name: str) -> str | None:
    """The ISA table's reducer that a ``to_apply`` name means, or None.

    ``max`` and XLA's way of naming a computation after its operator and element type,
    ``max_bf16``, both mean ``max``.
    """
    head, _, dtype = name.rpartition("_")
    if name not in REDUCERS and head in REDUCERS and dtype.lower() in SPEC_DTYPES:
        name = head
    return REDUCERS.get(name)


def _reducer_problems(instr: Instruction, name: str) -> list[tuple[str, str, str]]:
    if reducer_of(name) is None:
        return [("bad-attribute", f"reduce '{instr.name}': to_apply={name} is not a reducer "
                 f"(accepted: {', '.join(sorted(REDUCERS))}, each optionally with its element "
                 f"type, such as add_f32)", "attr:to_apply")]
    named = name.rpartition("_")[2].lower() if name not in REDUCERS else None
    dtype = getattr(instr.type, "dtype", None)
    if named is not None and dtype is not None and named != dtype:
        return [("bad-attribute", f"reduce '{instr.name}': to_apply={name} reduces {named}, "
                 f"but the reduce is {dtype}", "attr:to_apply")]
    return []
