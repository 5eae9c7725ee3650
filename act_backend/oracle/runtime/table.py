"""The ISA table (``isa.json``, format ``act-isa-table/1``) as the oracle reads it.

This module owns loading and checking the table, the element types the oracle supports, and
evaluating the table's integer expressions once attribute values are known. It needs only
NumPy and ml_dtypes (JAX's own bf16 type, installed with it), and stays quick to import
for the generator, which checks tables with it before writing an oracle.
"""

from __future__ import annotations

import functools
import json
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

FORMAT = "act-isa-table/1"
HBM = "d0"

# JAX runs with 32-bit types unless x64 is switched on process-wide, which an oracle must not
# do behind its user's back; so the 64-bit types are refused rather than silently narrowed.
_DTYPES = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "f16": np.dtype(np.float16),
    "bf16": np.dtype(ml_dtypes.bfloat16),
    "f32": np.dtype(np.float32),
}


class OracleError(ValueError):
    """A wrong table, attribute, address or input; the message names where."""


def numpy_dtype(name: str, where: str) -> np.dtype:
    """The NumPy dtype of element type ``name``; ``where`` prefixes the error."""
    try:
        return _DTYPES[name]
    except KeyError:
        accepted = ", ".join(_DTYPES)
        raise OracleError(f"{where}: element type {name!r} is not supported by the oracle "
                          f"(accepted: {accepted})") from None


def dtype_name(dtype: Any) -> str | None:
    """The element type name of a NumPy-compatible dtype, or None if the oracle has none."""
    try:
        wanted = np.dtype(dtype)
    except TypeError:
        return None
    for name, candidate in _DTYPES.items():
        if candidate == wanted:
            return name
    return None


# ---------------------------------------------------------------------------------------------
# Integer expressions: {"int": 5} | {"attr": "c.n"} | {"op": "+", "args": [..]} | {"op": "neg"}


def evaluate(expr: Mapping, env: Mapping[str, int], where: str) -> int:
    """The value of a table expression with every attribute it mentions bound in ``env``."""
    if not isinstance(expr, Mapping):
        raise OracleError(f"{where}: malformed expression {expr!r}")
    if "int" in expr:
        return int(expr["int"])
    if "attr" in expr:
        key = expr["attr"]
        if key not in env:
            raise OracleError(f"{where}: expression mentions @{key}, which has no value here")
        return env[key]
    op, args = expr.get("op"), expr.get("args")
    if not isinstance(args, list):
        raise OracleError(f"{where}: malformed expression {expr!r}")
    values = [evaluate(arg, env, where) for arg in args]
    if op == "neg" and len(values) == 1:
        return -values[0]
    if len(values) != 2 or op not in ("+", "-", "*", "/", "%"):
        raise OracleError(f"{where}: malformed expression {expr!r}")
    a, b = values
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if b == 0:
        raise OracleError(f"{where}: division by zero in expression {expr!r}")
    # Python's // and % are the floor division and remainder the table specifies.
    return a // b if op == "/" else a % b


# A kernel binds every call's slices: thousands of evaluations per kernel. Each expression list
# is therefore also compiled once into Python code (``compile_exprs``); where that code raises
# (an attribute without a value, a division by zero), ``evaluate`` runs to say what is wrong.

Evaluator = Callable[[Mapping[str, int]], tuple]


class _Malformed(Exception):
    pass


def compile_exprs(exprs: Sequence[Any]) -> Evaluator | None:
    """A function from an environment to the tuple of ``exprs``' values, computed as
    ``evaluate`` computes them; None if an expression is malformed (``evaluate`` says how)."""
    try:
        parts = [_source(e) for e in exprs]
    except (_Malformed, TypeError, ValueError):
        return None
    body = "".join(f"{part}, " for part in parts)
    return eval(f"lambda env: ({body})", {"__builtins__": {}})  # built from checked parts only


def _source(expr: Any) -> str:
    if not isinstance(expr, Mapping):
        raise _Malformed
    if "int" in expr:
        return repr(int(expr["int"]))
    if "attr" in expr:
        if not isinstance(expr["attr"], str):
            raise _Malformed
        return f"env[{expr['attr']!r}]"
    op, args = expr.get("op"), expr.get("args")
    if not isinstance(args, list):
        raise _Malformed
    parts = [_source(arg) for arg in args]
    if op == "neg" and len(parts) == 1:
        return f"(-{parts[0]})"
    python = {"+": "+", "-": "-", "*": "*", "/": "//", "%": "%"}.get(op)
    if len(parts) != 2 or python is None:
        raise _Malformed
    return f"({parts[0]} {python} {parts[1]})"


def evaluate_all(exprs: Sequence[Mapping], compiled: Evaluator | None,
                 env: Mapping[str, int], where: Callable[[int], str]) -> tuple[int, ...]:
    """The values of ``exprs`` (``compiled`` is ``compile_exprs(exprs)``); ``where(k)`` names
    expression ``k`` in an error."""
    if compiled is not None:
        try:
            return compiled(env)
        except Exception:  # noqa: BLE001 - evaluate below finds and names the fault
            pass
    return tuple(evaluate(e, env, where(k)) for k, e in enumerate(exprs))


# ---------------------------------------------------------------------------------------------
# Table model


@dataclass(frozen=True)
class Buffer:
    """A data model: ``access_dims`` addressable positions of ``dtype[unit_dims]`` units.

    HBM (``d0``) has one unbounded access dim (``None``); a kernel gives its size.
    """

    name: str
    access_dims: tuple[int | None, ...]
    unit_dims: tuple[int, ...]
    dtype: str

    @property
    def is_hbm(self) -> bool:
        return self.name == HBM


@dataclass(frozen=True)
class SliceSpec:
    """The part of ``buffer`` an operand occupies, as expressions over the attributes."""

    buffer: str
    start: tuple[Mapping, ...]
    size: tuple[Mapping, ...]
    # compile_exprs(start + size)
    bounds: Evaluator | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Instruction:
    name: str
    comp_attrs: tuple[str, ...]
    addr_attrs: tuple[str, ...]
    inputs: tuple[SliceSpec, ...]
    outputs: tuple[SliceSpec, ...]
    semantics: tuple[Mapping, ...]
    cost: Mapping = field(default_factory=lambda: {"int": 1})
    # {"op": "==" | "!=" | "<" | "<=" | ">" | ">=", "args": [EXPR, EXPR]} each.
    constraints: tuple[Mapping, ...] = ()
    # compile_exprs((cost,)) and compile_exprs(every constraint's two sides, in order)
    cost_value: Evaluator | None = field(default=None, compare=False, repr=False)
    constraint_sides: Evaluator | None = field(default=None, compare=False, repr=False)

    @property
    def attrs(self) -> tuple[str, ...]:
        """Every attribute, in the assembly's keyword order: computational then addressing."""
        return self.comp_attrs + self.addr_attrs


@dataclass(frozen=True)
class Table:
    name: str
    buffers: dict[str, Buffer]
    instructions: dict[str, Instruction]

    @property
    def on_chip(self) -> list[Buffer]:
        """The buffers other than HBM, in table order: the state arrays after HBM."""
        return [b for b in self.buffers.values() if not b.is_hbm]


def parse_table(data: Mapping, source: str = "isa.json") -> Table:
    """Checks the parts of the table the oracle relies on and builds the model."""
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
        raise OracleError(f"{source}: format is {found!r}, expected {FORMAT!r}")
    buffers: dict[str, Buffer] = {}
    for raw in _list(data, "buffers", source):
        buffer = _buffer(raw, source)
        if buffer.name in buffers:
            raise OracleError(f"{source}: buffer {buffer.name!r} is defined twice")
        buffers[buffer.name] = buffer
    if HBM not in buffers:
        buffers = {HBM: Buffer(HBM, (None,), (), "u8"), **buffers}
    instructions: dict[str, Instruction] = {}
    for raw in _list(data, "instructions", source):
        instr = _instruction(raw, buffers, source)
        if instr.name in instructions:
            raise OracleError(f"{source}: instruction {instr.name!r} is defined twice")
        instructions[instr.name] = instr
    return Table(str(data.get("name", "")), buffers, instructions)


def load_table(path: str | Path) -> Table:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OracleError(f"no ISA table at {path}: the oracle runtime runs inside a generated "
                          "oracle, beside the isa.json its generator wrote") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise OracleError(f"{path}: not JSON ({err})") from None
    return parse_table(data, str(path))


@functools.cache
def current() -> Table:
    """The table of the oracle this runtime was copied into (``isa.json`` beside it)."""
    return load_table(Path(__file__).with_name("isa.json"))


def _list(data: Mapping, key: str, where: str) -> list:
    value = data.get(key)
    if not isinstance(value, list):
        raise OracleError(f"{where}: '{key}' must be a list")
    return value


def _buffer(raw: Any, source: str) -> Buffer:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise OracleError(f"{source}: malformed buffer entry {raw!r}")
    name = raw["name"]
    where = f"{source}: buffer {name}"
    access = tuple(_list(raw, "access_dims", where))
    unit = tuple(_list(raw, "unit_dims", where))
    if not access:
        raise OracleError(f"{where}: has no access dims")
    for dim in access:
        if dim is not None and (not isinstance(dim, int) or dim <= 0):
            raise OracleError(f"{where}: access dim {dim!r} is not a positive integer")
    if None in access and name != HBM:
        raise OracleError(f"{where}: only {HBM} may have an unbounded access dim")
    for dim in unit:
        if not isinstance(dim, int) or dim <= 0:
            raise OracleError(f"{where}: unit dim {dim!r} is not a positive integer")
    dtype = str(raw.get("dtype"))
    numpy_dtype(dtype, where)
    return Buffer(name, access, unit, dtype)


def _slice(raw: Any, buffers: Mapping[str, Buffer], where: str) -> SliceSpec:
    if not isinstance(raw, Mapping):
        raise OracleError(f"{where}: malformed slice {raw!r}")
    buffer = buffers.get(raw.get("buffer"))
    if buffer is None:
        raise OracleError(f"{where}: unknown buffer {raw.get('buffer')!r} "
                          f"(known: {', '.join(buffers)})")
    start, size = tuple(_list(raw, "start", where)), tuple(_list(raw, "size", where))
    if len(start) != len(buffer.access_dims) or len(size) != len(buffer.access_dims):
        raise OracleError(f"{where}: {buffer.name} has {len(buffer.access_dims)} access dims, "
                          f"the slice gives {len(start)} starts and {len(size)} sizes")
    return SliceSpec(buffer.name, start, size, compile_exprs(start + size))


def _instruction(raw: Any, buffers: Mapping[str, Buffer], source: str) -> Instruction:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise OracleError(f"{source}: malformed instruction entry")
    name = raw["name"]
    where = f"{source}: instruction {name}"
    comp = tuple(str(a) for a in _list(raw, "comp_attrs", where))
    addr = tuple(str(a) for a in _list(raw, "addr_attrs", where))
    if len(set(comp + addr)) != len(comp + addr):
        raise OracleError(f"{where}: an attribute name is used twice in {list(comp + addr)}")
    inputs = tuple(_slice(s, buffers, f"{where} input {i}")
                   for i, s in enumerate(_list(raw, "inputs", where)))
    outputs = tuple(_slice(s, buffers, f"{where} output {i}")
                    for i, s in enumerate(_list(raw, "outputs", where)))
    if len(outputs) != 1:
        # A semantics program has one ROOT value, so it can fill exactly one output slice.
        raise OracleError(f"{where}: has {len(outputs)} output slices; the oracle writes the "
                          "ROOT value to exactly one")
    semantics = tuple(_list(raw, "semantics", where))
    if not semantics:
        raise OracleError(f"{where}: has no semantics")
    cost = raw.get("cost", {"int": 1})
    if not isinstance(cost, Mapping):
        raise OracleError(f"{where}: cost must be an expression, got {cost!r}")
    constraints = tuple(raw.get("constraints", []))
    for c in constraints:
        if (not isinstance(c, Mapping) or c.get("op") not in COMPARISONS
                or not isinstance(c.get("args"), list) or len(c["args"]) != 2):
            raise OracleError(f"{where}: malformed constraint {c!r}")
    sides = [side for c in constraints for side in c["args"]]
    return Instruction(name, comp, addr, inputs, outputs, semantics, cost, constraints,
                       compile_exprs([cost]), compile_exprs(sides))


def cost_of(instr: Instruction, env: Mapping[str, int]) -> int:
    """The cost of one call of ``instr`` with attribute values ``env``."""
    (cost,) = evaluate_all([instr.cost], instr.cost_value, env, lambda _: f"{instr.name}: cost")
    return cost


COMPARISONS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}


def violated(instr: Instruction, env: Mapping[str, int]) -> str | None:
    """The first constraint of ``instr`` the attribute values ``env`` break, as text."""
    if instr.constraint_sides is not None:
        try:
            sides = instr.constraint_sides(env)
        except Exception:  # noqa: BLE001 - the loop below finds and names the fault
            sides = None
        if sides is not None and all(
                COMPARISONS[c["op"]](sides[2 * k], sides[2 * k + 1])
                for k, c in enumerate(instr.constraints)):
            return None
    for k, c in enumerate(instr.constraints):
        lhs, rhs = (evaluate(a, env, f"{instr.name}: constraint {k}") for a in c["args"])
        if not COMPARISONS[c["op"]](lhs, rhs):
            return f"constraint {k} of the table does not hold: {lhs} {c['op']} {rhs} is false"
    return None
