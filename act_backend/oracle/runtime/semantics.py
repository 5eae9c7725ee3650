"""Lowering one instruction's semantics (an SSA list of HLO operators) to a JAX function.

Given the values of the computational attributes, every declared shape is concrete; the
lowered function maps the instruction's input slices to its ROOT value using ``jax.lax``
operators, so that XLA decides the arithmetic (bf16 rounding included). Each operator's
result is checked against its declared type, and every failure names the instruction, its
attribute values and the SSA value at fault.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import lax

from .bits import UNSIGNED, moved
from .table import Instruction, OracleError, dtype_name, evaluate, numpy_dtype

_REDUCERS = {"add": lax.add, "max": lax.max, "min": lax.min, "mul": lax.mul}

_BINARY = {
    "add": lax.add,
    "subtract": lax.sub,
    "multiply": lax.mul,
    "divide": lax.div,
    "maximum": lax.max,
    "minimum": lax.min,
    "xor": lax.bitwise_xor,
}

_SELECT = {"select_lt": lax.lt, "select_eq_var": lax.eq}


@dataclass(frozen=True)
class Lowered:
    """An instruction with its computational attributes fixed.

    ``params[i]`` is the declared type of parameter ``i`` (None where the semantics never
    reads input slice ``i``); ``fn(inputs)`` takes one array per input slice, with any shape
    holding the parameter's element count, and returns the ROOT value of type ``root``.
    """

    label: str
    params: tuple[jax.ShapeDtypeStruct | None, ...]
    root: jax.ShapeDtypeStruct
    fn: Callable[[Sequence[jax.Array]], jax.Array]


def describe(comp: Mapping[str, int], name: str) -> str:
    """``load_rm (n=64)``: how errors name an instruction with its attribute values."""
    if not comp:
        return name
    return f"{name} ({', '.join(f'{k}={v}' for k, v in comp.items())})"


def type_text(dtype: np.dtype | str, shape: Sequence[int]) -> str:
    name = dtype if isinstance(dtype, str) else (dtype_name(dtype) or str(dtype))
    return f"{name}[{','.join(str(d) for d in shape)}]"


@dataclass(frozen=True)
class _Op:
    """One SSA instruction with its declared type evaluated."""

    name: str
    op: str
    dtype: np.dtype
    shape: tuple[int, ...]
    operands: tuple[str, ...]
    attrs: Mapping[str, Any]
    where: str  # "load_rm (n=64): %a = reshape(%In1)"

    def fail(self, message: str) -> OracleError:
        return OracleError(f"{self.where}: {message}")

    def dims(self, key: str) -> list[int]:
        value = self.attrs.get(key)
        if not isinstance(value, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise self.fail(f"attribute '{key}' must be a list of integers, got {value!r}")
        return value

    def arity(self, args: Sequence[Any], count: int) -> None:
        if len(args) != count:
            raise self.fail(f"takes {count} operand(s), got {len(args)}")


def lower(instr: Instruction, comp: Mapping[str, int]) -> Lowered:
    """Lowers ``instr`` for the computational attribute values ``comp`` (name -> int)."""
    label = describe(comp, instr.name)
    env = {f"c.{k}": int(v) for k, v in comp.items()}
    ops = [_declare(raw, env, label, i) for i, raw in enumerate(instr.semantics)]
    root = _root(instr, ops, label)
    params = _params(instr, ops, label)

    def fn(inputs: Sequence[jax.Array]) -> jax.Array:
        values: dict[str, jax.Array] = {}
        for op in ops:
            args = [values[name] for name in op.operands]
            values[op.name] = _run(op, args, inputs, env)
        return values[root.name]

    # Tracing once with abstract values finds every shape disagreement now, at the assembly
    # line that asked for these attribute values, rather than deep inside the program's jit.
    structs = [p if p is not None else jax.ShapeDtypeStruct((0,), np.uint8) for p in params]
    result = jax.eval_shape(fn, structs)
    return Lowered(label, params, jax.ShapeDtypeStruct(result.shape, result.dtype), fn)


def _declare(raw: Any, env: Mapping[str, int], label: str, index: int) -> _Op:
    if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
        raise OracleError(f"{label}: semantics entry {index} is malformed: {raw!r}")
    name, op = raw["name"], str(raw.get("op"))
    operands = tuple(str(o) for o in raw.get("operands", []))
    where = f"{label}: %{name} = {op}({', '.join('%' + o for o in operands)})"
    dtype = numpy_dtype(str(raw.get("dtype")), where)
    shape = []
    for k, dim in enumerate(raw.get("shape", [])):
        value = evaluate(dim, env, f"{where}: dim {k}")
        if value < 0:
            raise OracleError(f"{where}: dim {k} of the declared shape is {value}, below 0")
        shape.append(value)
    attrs = raw.get("attrs") or {}
    return _Op(name, op, dtype, tuple(shape), operands, attrs, where)


def _root(instr: Instruction, ops: list[_Op], label: str) -> _Op:
    seen: set[str] = set()
    for op in ops:
        for operand in op.operands:
            if operand not in seen:
                raise op.fail(f"operand %{operand} is not defined before it")
        if op.name in seen:
            raise op.fail(f"%{op.name} is defined twice")
        seen.add(op.name)
    roots = [op for op, raw in zip(ops, instr.semantics, strict=True) if raw.get("root")]
    if len(roots) > 1:
        names = ", ".join("%" + op.name for op in roots)
        raise OracleError(f"{label}: more than one ROOT ({names})")
    # Without a ROOT mark, the last instruction is the result, as in HLO.
    return roots[0] if roots else ops[-1]


def _params(instr: Instruction, ops: list[_Op], label: str) -> tuple:
    params: list[jax.ShapeDtypeStruct | None] = [None] * len(instr.inputs)
    for op in ops:
        if op.op != "parameter":
            continue
        index = op.attrs.get("index")
        if not isinstance(index, int) or not 0 <= index < len(instr.inputs):
            raise op.fail(f"parameter index {index!r} does not name one of the "
                          f"{len(instr.inputs)} input slices")
        if params[index] is not None:
            raise op.fail(f"parameter({index}) is declared twice")
        params[index] = jax.ShapeDtypeStruct(op.shape, op.dtype)
    return tuple(params)


def _run(op: _Op, args: list[jax.Array], inputs: Sequence[jax.Array],
         env: Mapping[str, int]) -> jax.Array:
    impl = _IMPLS.get(op.op)
    if impl is None:
        raise op.fail(f"operator '{op.op}' is not one the oracle knows "
                      f"(known: {', '.join(sorted(_IMPLS))})")
    try:
        result = impl(op, args, inputs, env)
    except OracleError:
        raise
    except (TypeError, ValueError) as err:
        # JAX's own shape and type checks: keep their text, say where it happened.
        raise op.fail(str(err).split("\n")[0]) from None
    if tuple(result.shape) != op.shape or result.dtype != op.dtype:
        raise op.fail(f"declared {type_text(op.dtype, op.shape)} but the operands give "
                      f"{type_text(result.dtype, result.shape)}")
    return result


# ---------------------------------------------------------------------------------------------
# Operators. Each takes the evaluated op, its operand values, the instruction inputs and the
# attribute environment, and returns the result; _run checks it against the declaration.


def _parameter(op: _Op, args, inputs, env):
    op.arity(args, 0)
    value = inputs[op.attrs["index"]]
    if value.dtype != op.dtype:
        raise op.fail(f"the input slice holds {type_text(value.dtype, value.shape)}, "
                      f"not {type_text(op.dtype, op.shape)}")
    if value.size != int(np.prod(op.shape, dtype=np.int64)):
        raise op.fail(f"the input slice holds {value.size} elements, the parameter "
                      f"{type_text(op.dtype, op.shape)} needs {int(np.prod(op.shape))}")
    return moved(lambda v: lax.reshape(v, op.shape), value)


def _constant(op: _Op, args, inputs, env):
    op.arity(args, 0)
    if "value" not in op.attrs:
        raise op.fail("constant has no 'value' attribute")
    raw = op.attrs["value"]
    if isinstance(raw, Mapping):
        # constant(`@c.scale`): the attribute expression's value, wrapped to the element
        # type as the hardware's register would hold it.
        raw = evaluate(raw, env, f"{op.where}: value")
        value = np.asarray(raw).astype(op.dtype)
    else:
        value = np.asarray(_numbers(raw), dtype=op.dtype)
    if value.shape != op.shape:
        if value.ndim != 0:
            raise op.fail(f"value of shape {list(value.shape)} does not fill "
                          f"{type_text(op.dtype, op.shape)}")
        # A scalar literal for a shaped constant means every element holds it.
        value = np.broadcast_to(value, op.shape)
    return jax.numpy.asarray(value)


def _numbers(raw):
    """A literal as the table writes it, infinities and NaN named (``"-inf"``), as numbers."""
    if isinstance(raw, list):
        return [_numbers(item) for item in raw]
    return float(raw) if isinstance(raw, str) else raw


def _reshape(op: _Op, args, inputs, env):
    op.arity(args, 1)
    (x,) = args
    if x.size != int(np.prod(op.shape, dtype=np.int64)):
        raise op.fail(f"cannot reshape {type_text(x.dtype, x.shape)} ({x.size} elements) "
                      f"to {type_text(op.dtype, op.shape)}")
    return moved(lambda v: lax.reshape(v, op.shape), x)


def _bitcast_convert(op: _Op, args, inputs, env):
    # XLA's rule: a wider source gains a trailing dim of the width ratio, a narrower source
    # loses its trailing dim (which must equal the ratio), least significant bytes first.
    op.arity(args, 1)
    (x,) = args
    source, target = np.dtype(x.dtype), np.dtype(op.dtype)
    if (source.itemsize == target.itemsize or source.itemsize not in UNSIGNED
            or target.itemsize not in UNSIGNED or np.bool_ in (source.type, target.type)):
        return lax.bitcast_convert_type(x, target)
    if source.itemsize > target.itemsize:
        return _bitcast_split(x, target)
    ratio = target.itemsize // source.itemsize
    if x.ndim == 0 or x.shape[-1] != ratio:
        raise op.fail(f"a bitcast from {type_text(x.dtype, x.shape)} to the {ratio} times "
                      f"wider {dtype_name(target)} needs a last dim of {ratio}")
    return _bitcast_join(x, target)


# A width-changing bitcast is written with shifts of same-width integers: XLA expands its own
# into a reduction (joining) or a broadcast (splitting) that it does not fuse with the values
# around it, which costs a kernel to compile per load or store. The bits are the same.


def _bitcast_split(x: jax.Array, target: np.dtype) -> jax.Array:
    """``x`` as ``target`` values, each element split into a trailing dim of parts."""
    wide, narrow = UNSIGNED[np.dtype(x.dtype).itemsize], UNSIGNED[target.itemsize]
    bits = lax.bitcast_convert_type(x, wide)
    mask = np.array(np.iinfo(narrow).max, wide)
    parts = []
    for k in range(np.dtype(x.dtype).itemsize // target.itemsize):
        shifted = lax.shift_right_logical(bits, np.array(8 * target.itemsize * k, wide))
        part = lax.convert_element_type(lax.bitwise_and(shifted, mask), narrow)
        parts.append(lax.expand_dims(part, (x.ndim,)))
    # Joined as integers: XLA computes a concatenation of bf16 in f32, which would quiet NaNs.
    return lax.bitcast_convert_type(lax.concatenate(parts, x.ndim), target)


def _bitcast_join(x: jax.Array, target: np.dtype) -> jax.Array:
    """The trailing dim of ``x`` joined into ``target`` values, its first part lowest."""
    width = np.dtype(x.dtype).itemsize
    narrow, wide = UNSIGNED[width], UNSIGNED[target.itemsize]
    bits = lax.bitcast_convert_type(x, narrow)
    joined = None
    for k in range(target.itemsize // width):
        part = lax.squeeze(lax.slice_in_dim(bits, k, k + 1, axis=x.ndim - 1), (x.ndim - 1,))
        part = lax.shift_left(lax.convert_element_type(part, wide), np.array(8 * width * k, wide))
        joined = part if joined is None else lax.bitwise_or(joined, part)
    return lax.bitcast_convert_type(joined, target)


def _convert(op: _Op, args, inputs, env):
    op.arity(args, 1)
    return lax.convert_element_type(args[0], op.dtype)


def _copy(op: _Op, args, inputs, env):
    op.arity(args, 1)
    return args[0]


def _transpose(op: _Op, args, inputs, env):
    op.arity(args, 1)
    perm = op.dims("dimensions")
    if sorted(perm) != list(range(args[0].ndim)):
        raise op.fail(f"dimensions={perm} is not a permutation of the operand's "
                      f"{args[0].ndim} dims")
    return moved(lambda v: lax.transpose(v, perm), args[0])


def _slice(op: _Op, args, inputs, env):
    op.arity(args, 1)
    (x,) = args
    bounds = op.attrs.get("slice")
    if not isinstance(bounds, list) or len(bounds) != x.ndim:
        raise op.fail(f"attribute 'slice' must give [start, limit, stride] for each of the "
                      f"operand's {x.ndim} dims, got {bounds!r}")
    starts, limits, strides = [], [], []
    for k, triple in enumerate(bounds):
        if not isinstance(triple, list) or len(triple) not in (2, 3):
            raise op.fail(f"slice entry {k} must be [start, limit, stride], got {triple!r}")
        start, limit, *rest = (evaluate(e, env, f"{op.where}: slice dim {k}") for e in triple)
        stride = rest[0] if rest else 1
        if not (0 <= start <= limit <= x.shape[k]) or stride <= 0:
            raise op.fail(f"slice [{start}:{limit}:{stride}] of dim {k} does not fit its "
                          f"size {x.shape[k]}")
        starts.append(start)
        limits.append(limit)
        strides.append(stride)
    return moved(lambda v: lax.slice(v, starts, limits, strides), x)


def _concatenate(op: _Op, args, inputs, env):
    if not args:
        raise op.fail("takes at least one operand")
    dims = op.dims("dimensions")
    if len(dims) != 1:
        raise op.fail(f"dimensions={dims} must name exactly one dim")
    _same_types(op, args, "operands")
    return moved(lambda *values: lax.concatenate(values, dims[0]), *args)


def _dot(op: _Op, args, inputs, env):
    op.arity(args, 2)
    numbers = ((op.dims("lhs_contracting_dims"), op.dims("rhs_contracting_dims")),
               (_optional_dims(op, "lhs_batch_dims"), _optional_dims(op, "rhs_batch_dims")))
    # HIGHEST keeps f32 products exact on GPUs that would otherwise use TF32; the result
    # type is the declared one, as HLO's dot states it.
    return lax.dot_general(args[0], args[1], numbers, precision=lax.Precision.HIGHEST,
                           preferred_element_type=op.dtype)


def _optional_dims(op: _Op, key: str) -> list[int]:
    return op.dims(key) if key in op.attrs else []


def _broadcast(op: _Op, args, inputs, env):
    op.arity(args, 1)
    (x,) = args
    dims = op.dims("dimensions")
    if len(dims) != x.ndim or len(set(dims)) != len(dims) or not all(
            0 <= d < len(op.shape) for d in dims):
        raise op.fail(f"dimensions={dims} must map each of the operand's {x.ndim} dims to a "
                      f"distinct dim of the {len(op.shape)}-dim result")
    for i, d in enumerate(dims):
        # As in XLA, a size-1 operand dim stretches to its result dim.
        if x.shape[i] not in (1, op.shape[d]):
            raise op.fail(f"operand dim {i} (size {x.shape[i]}) maps to result dim {d} "
                          f"(size {op.shape[d]})")
    # Operand dim i lands on result dim dims[i]; ordering the operand's dims by their target
    # first makes the mapping monotone, which every broadcast_in_dim implementation accepts.
    order = sorted(range(x.ndim), key=lambda i: dims[i])
    return moved(lambda v: lax.broadcast_in_dim(lax.transpose(v, order), op.shape, sorted(dims)),
                 x)


def _reduce(op: _Op, args, inputs, env):
    op.arity(args, 2)
    x, init = args
    if init.ndim != 0:
        raise op.fail(f"the init value must be a scalar, got {type_text(init.dtype, init.shape)}")
    return _reduce_with(op, x, init, op.attrs.get("computation"))


def _reduce_add(op: _Op, args, inputs, env):
    op.arity(args, 1)
    computation = op.attrs.get("computation", "add")
    if computation != "add":
        raise op.fail(f"reduce_add adds; computation {computation!r} is not 'add'")
    return _reduce_with(op, args[0], np.zeros((), args[0].dtype), "add")


def _reduce_with(op: _Op, x, init, computation):
    reducer = _REDUCERS.get(computation)
    if reducer is None:
        raise op.fail(f"computation {computation!r} is not one of {', '.join(_REDUCERS)}")
    dims = op.dims("dimensions")
    if len(set(dims)) != len(dims) or not all(0 <= d < x.ndim for d in dims):
        raise op.fail(f"dimensions={dims} must be distinct dims of the {x.ndim}-dim operand")
    return lax.reduce(x, lax.convert_element_type(init, x.dtype), reducer, tuple(dims))


def _exponential(op: _Op, args, inputs, env):
    op.arity(args, 1)
    return lax.exp(args[0])


def _binary(op: _Op, args, inputs, env):
    op.arity(args, 2)
    a, b = args
    if a.shape != b.shape or a.dtype != b.dtype:
        raise op.fail(f"operands {type_text(a.dtype, a.shape)} and "
                      f"{type_text(b.dtype, b.shape)} differ; HLO elementwise operators take "
                      "equal types")
    return _BINARY[op.op](a, b)


def _select(op: _Op, args, inputs, env):
    op.arity(args, 4)
    a, b, on_true, on_false = args
    if a.shape != b.shape or a.shape != on_true.shape or on_true.shape != on_false.shape:
        raise op.fail("operands [a, b, on_true, on_false] must all have one shape, got "
                      + ", ".join(type_text(v.dtype, v.shape) for v in args))
    _same_types(op, [on_true, on_false], "on_true and on_false")
    pick = _SELECT[op.op](a, b)
    return moved(lambda t, f: lax.select(pick, t, f), on_true, on_false)


def _dynamic_update_slice(op: _Op, args, inputs, env):
    if len(args) < 2:
        raise op.fail("takes [operand, update, index...]")
    operand, update, *indices = args
    if len(indices) != operand.ndim or any(i.ndim != 0 for i in indices):
        raise op.fail(f"needs {operand.ndim} scalar indices after [operand, update], got "
                      + ", ".join(type_text(v.dtype, v.shape) for v in indices))
    _same_types(op, [operand, update], "operand and update")
    # Indices are run-time values, so they cannot be refused here; HLO clamps them so that
    # the update fits (a negative index to 0, where JAX would count it from the end).
    return moved(lambda o, u: lax.dynamic_update_slice(o, u, indices,
                                                       allow_negative_indices=False),
                 operand, update)


def _same_types(op: _Op, values: Sequence[jax.Array], what: str) -> None:
    """Refuses ``values`` (which ``op`` moves as one) unless they share an element type."""
    if len({v.dtype for v in values}) > 1:
        raise op.fail(f"{what} {', '.join(type_text(v.dtype, v.shape) for v in values)} "
                      "differ in element type")


_IMPLS: dict[str, Callable] = {
    "parameter": _parameter,
    "constant": _constant,
    "reshape": _reshape,
    "bitcast_convert": _bitcast_convert,
    "convert": _convert,
    "copy": _copy,
    "transpose": _transpose,
    "slice": _slice,
    "concatenate": _concatenate,
    "dot": _dot,
    "broadcast": _broadcast,
    "reduce": _reduce,
    "reduce_add": _reduce_add,
    "exponential": _exponential,
    "exp": _exponential,
    "select_lt": _select,
    "select_eq_var": _select,
    "dynamic_update_slice": _dynamic_update_slice,
    **{name: _binary for name in _BINARY},
}
