"""Recording the ``api.<instruction>(...)`` calls a kernel function makes into a program.

While a kernel body runs under ``recording(program)``, each api call is checked (attribute
names and integer values, slices inside their buffers, semantics types against the slices)
and appended to the program as a bound ``Call``. An api call outside a kernel is an error.
"""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from .semantics import Lowered, describe, lower, type_text
from .state import Region, bind_region
from .table import Instruction, OracleError, Table, cost_of, violated


@dataclass(frozen=True)
class Call:
    """One instruction of a program with every attribute bound."""

    instr: Instruction
    comp: dict[str, int]
    addr: dict[str, int]
    lowered: Lowered
    inputs: tuple[Region, ...]
    output: Region
    cost: int = 1


@dataclass
class Program:
    """The calls a kernel made, in order, for an HBM of ``hbm`` bytes."""

    table: Table
    hbm: int
    kernel: str
    calls: list[Call] = field(default_factory=list)

    def record(self, name: str, args: tuple, kwargs: Mapping[str, object]) -> None:
        number = len(self.calls) + 1
        try:
            self.calls.append(_bind(self.table, self.hbm, name, args, kwargs))
        except OracleError as err:
            # Say which call of the kernel it was: the assembly may call one instruction often.
            raise OracleError(f"{err} (call {number} of kernel {self.kernel})") from None


_active: list[Program] = []

# Lowering depends only on the instruction and its computational attributes, and a kernel
# repeats a few of those many times; the table of one oracle never changes.
_lowered: dict[tuple[str, tuple[tuple[str, int], ...]], Lowered] = {}


@contextlib.contextmanager
def recording(program: Program) -> Iterator[Program]:
    """Routes api calls into ``program`` while the body of the ``with`` runs."""
    if _active:
        raise OracleError(f"kernel {program.kernel} was run from inside kernel "
                          f"{_active[-1].kernel}; kernels do not nest")
    _active.append(program)
    try:
        yield program
    finally:
        _active.pop()


def record(name: str, args: tuple, kwargs: Mapping[str, object]) -> None:
    """What every ``api.<name>(...)`` does."""
    if not _active:
        raise OracleError(f"api.{name} was called outside a kernel: call the api inside a "
                          "function decorated with @kernel, run through k('fsim-compile'), "
                          "k('fsim') or k('cost')")
    _active[-1].record(name, args, kwargs)


def _bind(table: Table, hbm: int, name: str, args: tuple,
          kwargs: Mapping[str, object]) -> Call:
    instr = table.instructions[name]
    values = _attribute_values(instr, args, kwargs)
    comp = {a: values[a] for a in instr.comp_attrs}
    addr = {a: values[a] for a in instr.addr_attrs}
    env = {f"c.{k}": v for k, v in comp.items()} | {f"a.{k}": v for k, v in addr.items()}
    broken = violated(instr, env)
    if broken is not None:
        raise OracleError(f"{describe(comp, name)}: {broken}")
    inputs = tuple(
        bind_region(spec, table, env, hbm, f"{name} input {i} ({spec.buffer})")
        for i, spec in enumerate(instr.inputs))
    (out_spec,) = instr.outputs
    output = bind_region(out_spec, table, env, hbm, f"{name} output 0 ({out_spec.buffer})")
    lowered = _lower(instr, comp)
    _check_types(lowered, inputs, output)
    cost = cost_of(instr, env)
    return Call(instr, comp, addr, lowered, inputs, output, cost)


def _attribute_values(instr: Instruction, args: tuple,
                      kwargs: Mapping[str, object]) -> dict[str, int]:
    accepted = ", ".join(instr.attrs) or "none"
    if args:
        raise OracleError(f"{instr.name}: takes keyword arguments only ({accepted}), "
                          f"got {len(args)} positional")
    for key in kwargs:
        if key not in instr.attrs:
            raise OracleError(f"{instr.name}: unknown attribute '{key}' (accepted: {accepted})")
    values: dict[str, int] = {}
    for key in instr.attrs:
        if key not in kwargs:
            raise OracleError(f"{instr.name}: missing attribute '{key}'")
        value = kwargs[key]
        # bool is an int to Python but never a meaningful size or address.
        if isinstance(value, bool):
            raise OracleError(f"{instr.name}: attribute '{key}' must be an integer, "
                              f"got {value!r} (bool)")
        try:
            values[key] = operator.index(value)
        except TypeError:
            raise OracleError(f"{instr.name}: attribute '{key}' must be an integer, got "
                              f"{value!r} ({type(value).__name__})") from None
    return values


def _lower(instr: Instruction, comp: dict[str, int]) -> Lowered:
    key = (instr.name, tuple(comp.items()))
    if key not in _lowered:
        _lowered[key] = lower(instr, comp)
    return _lowered[key]


def _check_types(lowered: Lowered, inputs: tuple[Region, ...], output: Region) -> None:
    for i, (param, region) in enumerate(zip(lowered.params, inputs, strict=True)):
        if param is None:
            continue
        size = _count(region.shape)
        if param.dtype != region.dtype or _count(param.shape) != size:
            raise OracleError(
                f"{lowered.label} input {i} ({region.buffer.name}): parameter({i}) is "
                f"{type_text(param.dtype, param.shape)} but rows {region.rows()} hold "
                f"{type_text(region.dtype, region.shape)}")
    root = lowered.root
    if root.dtype != output.dtype or _count(root.shape) != _count(output.shape):
        raise OracleError(
            f"{lowered.label} output 0 ({output.buffer.name}): the ROOT value is "
            f"{type_text(root.dtype, root.shape)} but rows {output.rows()} hold "
            f"{type_text(output.dtype, output.shape)}")


def _count(shape: tuple[int, ...]) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count
