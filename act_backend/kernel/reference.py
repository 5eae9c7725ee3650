"""The NumPy reference: what an HLO kernel computes, independently of JAX and XLA.

``evaluate(module, inputs)`` runs the ENTRY computation instruction by instruction and rounds
every result to its HLO element type, as XLA does on the CPU: bf16 and f16 arithmetic is done
in float32 and rounded after each operation, a dot or a convolution accumulates in float32
and rounds once, and a reduce (or each window of a reduce-window) folds its inputs in index
order, rounding after each application of its reducer. Reducers and called computations are
evaluated as written, on whole arrays at once when they are elementwise and element by element
otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from act_backend.hlo.dtypes import numpy_dtype
from act_backend.hlo.ir import Computation, Instruction, Module, TupleType
from act_backend.kernel import reference_ops as ops
from act_backend.kernel.opcodes import ELEMENTWISE_BINARY, ELEMENTWISE_UNARY, supported_list

Value = Any  # np.ndarray, or a tuple of values


class UnsupportedOperator(ValueError):
    """The kernel uses an operator the reference does not evaluate."""


# Operators that can run on a batch of scalars at once (a reducer applied to every output
# element together): their result for a batch is the batch of their results.
_BATCHABLE = ELEMENTWISE_UNARY | ELEMENTWISE_BINARY | {
    "parameter", "constant", "compare", "select", "select_lt", "select_eq_var", "convert",
    "clamp", "is_finite", "reduce_precision",
    "tuple", "get_tuple_element", "call",
}


class _NotBatchable(Exception):
    pass


def evaluate(module: Module, inputs: Sequence[Any]) -> Value:
    """The value of ``module``'s ENTRY computation on ``inputs`` (one array per parameter,
    of exactly the parameter's shape and element type); a tuple for a tuple ROOT."""
    entry = module.entry
    params = entry.parameters()
    if len(inputs) != len(params):
        wanted = ", ".join(str(p.type) for p in params)
        raise ValueError(f"kernel '{module.name}' takes {len(params)} input(s) ({wanted}), "
                         f"got {len(inputs)}")
    args = [_input(module, param, value) for param, value in zip(params, inputs, strict=True)]
    with np.errstate(all="ignore"):
        return _Evaluator(module).run(entry, args, ())


def _input(module: Module, param: Instruction, value: Any) -> np.ndarray:
    if isinstance(param.type, TupleType):
        raise UnsupportedOperator(f"{param.span}: parameter '{param.name}' of kernel "
                                  f"'{module.name}' is a tuple; the reference takes arrays")
    dtype = numpy_dtype(param.type.dtype)
    array = np.asarray(value) if isinstance(value, np.ndarray) or hasattr(value, "dtype") \
        else np.asarray(value, dtype=dtype)
    if array.dtype != dtype or array.shape != param.type.shape:
        found = f"{array.dtype}[{','.join(map(str, array.shape))}]"
        raise ValueError(f"input {param.attrs['index']} of kernel '{module.name}' "
                         f"(parameter '{param.name}') must be {param.type}, got {found}")
    return array


class _Evaluator:
    def __init__(self, module: Module) -> None:
        self.module = module
        self.computations = {c.name: c for c in module.computations}
        self.unbatchable: set[str] = set()

    def run(self, comp: Computation, args: Sequence[Value], batch: tuple[int, ...]) -> Value:
        """Evaluate ``comp``; with a non-empty ``batch`` every value carries ``batch`` as
        leading dimensions (one evaluation per batch element, done together)."""
        env: dict[str, Value] = {}
        for instr in comp.instructions:
            if batch and instr.opcode not in _BATCHABLE:
                raise _NotBatchable
            operands = []
            for name in instr.operands:
                if name not in env:
                    raise ValueError(f"{instr.span}: operand '{name}' of '{instr.name}' has "
                                     f"no value before it is used in '{comp.name}'")
                operands.append(env[name])
            try:
                value = self.compute(instr, operands, args, batch)
            except KeyError as missing:
                raise ValueError(f"{instr.span}: {instr.opcode} '{instr.name}' needs the "
                                 f"attribute {missing}") from None
            env[instr.name] = self.finish(instr, value, batch)
        return env[comp.root.name]

    def apply(self, comp: Computation, args: Sequence[Value],
              batch: tuple[int, ...]) -> Value:
        """``comp`` applied to batched ``args``, element by element if it must be."""
        if comp.name not in self.unbatchable:
            try:
                return self.run(comp, args, batch)
            except _NotBatchable:
                self.unbatchable.add(comp.name)
        results = [self.run(comp, [_index(a, idx) for a in args], ())
                   for idx in np.ndindex(*batch)]
        return _stack(results, batch)

    def finish(self, instr: Instruction, value: Value, batch: tuple[int, ...]) -> Value:
        """Round to the instruction's element type and check the shape it was declared."""
        if isinstance(instr.type, TupleType):
            if not isinstance(value, tuple) or len(value) != len(instr.type.elements):
                raise ValueError(f"{instr.span}: '{instr.name}' ({instr.opcode}) is declared "
                                 f"{instr.type} but does not compute a tuple of that size")
            return value
        array = np.asarray(value)
        shape = batch + tuple(instr.type.shape)
        if array.shape != shape:
            try:
                array = np.broadcast_to(array, shape)
            except ValueError:
                raise ValueError(f"{instr.span}: '{instr.name}' ({instr.opcode}) computed a "
                                 f"value of shape {list(array.shape)} but is declared "
                                 f"{instr.type}") from None
        return array.astype(numpy_dtype(instr.type.dtype))

    # -- operators ---------------------------------------------------------------------

    def compute(self, instr: Instruction, x: list[Value], args: Sequence[Value],
                batch: tuple[int, ...]) -> Value:
        op, attrs, t = instr.opcode, instr.attrs, instr.type
        if op in ops.UNARY_WITH_ATTRIBUTES:
            return ops.UNARY_WITH_ATTRIBUTES[op](x[0], attrs)
        if op in ELEMENTWISE_UNARY:
            return ops.UNARY[op](ops.widen(x[0]))
        if op in ELEMENTWISE_BINARY:
            return ops.BINARY[op](ops.widen(x[0]), ops.widen(x[1]))
        if op == "parameter":
            return args[attrs["index"]]
        if op == "constant":
            return np.asarray(attrs["value"])
        if op == "iota":
            return ops.iota(t.shape, attrs["iota_dimension"], t.dtype)
        if op == "compare":
            if str(attrs.get("type", "")).upper() == "TOTALORDER":
                raise UnsupportedOperator(f"{instr.span}: compare '{instr.name}' with "
                                          "type=TOTALORDER is not supported by the reference")
            return ops.COMPARE[attrs["direction"]](ops.widen(x[0]), ops.widen(x[1]))
        if op == "select":
            return np.where(x[0], x[1], x[2])
        if op == "clamp":
            return np.minimum(np.maximum(ops.widen(x[1]), ops.widen(x[0])), ops.widen(x[2]))
        if op == "is_finite":
            return np.isfinite(ops.widen(x[0]))
        if op == "select_lt":
            return np.where(ops.widen(x[0]) < ops.widen(x[1]), x[2], x[3])
        if op == "select_eq_var":
            return np.where(ops.widen(x[0]) == ops.widen(x[1]), x[2], x[3])
        if op == "convert":
            return ops.convert(x[0], t.dtype)
        if op == "bitcast_convert":
            return ops.bitcast_convert(x[0], t.dtype, t.shape)
        if op == "reshape":
            return x[0].reshape(t.shape)
        if op == "transpose":
            return np.transpose(x[0], attrs["dimensions"])
        if op == "broadcast":
            return ops.broadcast(x[0], attrs["dimensions"], t.shape)
        if op == "reverse":
            return np.flip(x[0], axis=tuple(attrs["dimensions"])).copy()
        if op == "pad":
            return ops.pad(x[0], x[1], attrs["padding"])
        if op == "slice":
            return ops.slice_(x[0], attrs["slice"])
        if op == "concatenate":
            return np.concatenate(x, axis=attrs["dimensions"][0])
        if op == "dynamic_slice":
            return ops.dynamic_slice(x[0], x[1:], attrs["dynamic_slice_sizes"])
        if op == "dynamic_update_slice":
            return ops.dynamic_update_slice(x[0], x[1].astype(x[0].dtype), x[2:])
        if op == "dot":
            return ops.dot(x[0], x[1], attrs.get("lhs_contracting_dims", []),
                           attrs.get("rhs_contracting_dims", []),
                           attrs.get("lhs_batch_dims", []), attrs.get("rhs_batch_dims", []))
        if op == "convolution":
            return ops.convolution(x[0], x[1], attrs.get("window", {}), attrs["dim_labels"],
                                   attrs.get("feature_group_count", 1),
                                   attrs.get("batch_group_count", 1))
        if op == "reduce":
            return self.reduce(instr, x)
        if op == "reduce_add":
            zero = np.zeros((), dtype=x[0].dtype)
            return self.reduce(instr, [x[0], zero])
        if op == "reduce_window":
            return self.reduce_window(instr, x)
        if op == "tuple":
            return tuple(x)
        if op == "get_tuple_element":
            return x[0][attrs["index"]]
        if op == "call":
            return self.apply(self.computation(instr), x, batch)
        raise UnsupportedOperator(
            f"{instr.span}: the reference does not evaluate operator '{op}' (instruction "
            f"'{instr.name}', line {instr.span.line if instr.span else '?'}); it evaluates: "
            f"{supported_list()}")

    def computation(self, instr: Instruction) -> Computation:
        name = instr.attrs.get("to_apply")
        if name not in self.computations:
            raise ValueError(f"{instr.span}: '{instr.name}' applies computation {name!r}, "
                             "which is not defined")
        return self.computations[name]

    def reduce(self, instr: Instruction, x: list[Value]) -> Value:
        """Fold the reduced dimensions in index order, rounding after every step."""
        count = len(x) // 2
        inputs, inits = x[:count], x[count:]
        dims = sorted(instr.attrs["dimensions"])
        kept = [d for d in range(inputs[0].ndim) if d not in dims]
        kept_shape = tuple(inputs[0].shape[d] for d in kept)
        steps = int(np.prod([inputs[0].shape[d] for d in dims], dtype=np.int64))
        columns = [np.transpose(a, kept + dims).reshape(*kept_shape, steps) for a in inputs]
        acc = [np.broadcast_to(init, kept_shape).copy() for init in inits]

        kind = instr.attrs.get("computation")
        if count == 1 and kind in _FOLDS:
            fold = _FOLDS[kind]
            (column,), (total,) = columns, acc
            for k in range(steps):
                total = fold(ops.widen(total), ops.widen(column[..., k])).astype(total.dtype)
            return total

        region = self.computation(instr)
        for k in range(steps):
            result = self.apply(region, [*acc, *(c[..., k] for c in columns)], kept_shape)
            acc = list(result) if count > 1 else [result]
        return tuple(acc) if count > 1 else acc[0]


    def reduce_window(self, instr: Instruction, x: list[Value]) -> Value:
        """Fold each window from the init value, its positions in row-major order, rounding
        after every step; positions in the padding or between the elements of a dilated
        operand are left out (XLA's order)."""
        operand, init = x
        window = instr.attrs["window"]
        rank = operand.ndim
        field = lambda key, default: window.get(key, [default] * rank)  # noqa: E731
        size, stride, pad = field("size", 1), field("stride", 1), field("pad", (0, 0))
        lhs_dilate, rhs_dilate = field("lhs_dilate", 1), field("rhs_dilate", 1)
        out_shape = tuple(instr.type.shape)
        acc = np.broadcast_to(init, out_shape).copy()
        region = self.computation(instr)
        for position in np.ndindex(*size):
            indices, valid = [], []
            for d, k in enumerate(position):
                at = np.arange(out_shape[d]) * stride[d] + k * rhs_dilate[d] - pad[d][0]
                element = at // lhs_dilate[d]
                valid.append((at >= 0) & (at % lhs_dilate[d] == 0)
                             & (element < operand.shape[d]))
                indices.append(np.clip(element, 0, operand.shape[d] - 1))
            covered = np.ones(out_shape, dtype=bool)
            for d, v in enumerate(valid):
                covered &= v.reshape([-1 if j == d else 1 for j in range(rank)])
            if not covered.any():
                continue
            folded = self.apply(region, [acc, operand[np.ix_(*indices)]], out_shape)
            acc = np.where(covered, folded, acc).astype(acc.dtype)
        return acc


_FOLDS = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


def _index(value: Value, idx: tuple[int, ...]) -> Value:
    if isinstance(value, tuple):
        return tuple(_index(v, idx) for v in value)
    return np.asarray(value[idx])


def _stack(results: list[Value], batch: tuple[int, ...]) -> Value:
    if results and isinstance(results[0], tuple):
        return tuple(_stack([r[i] for r in results], batch) for i in range(len(results[0])))
    return np.stack(results).reshape(batch + np.asarray(results[0]).shape)
