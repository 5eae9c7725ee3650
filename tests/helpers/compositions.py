"""Random kernels for differential testing: compositions of a few matrix operations over
square bf16 inputs, printed as HLO text that both XLA and the backend read.

``random_composition(rng, steps, inputs)`` draws a DAG: each step applies one operation of
``OPERATIONS`` to inputs or earlier results (inputs that no step has used yet are preferred,
so every input reaches the ROOT), and the last step is the ROOT. The operations are the ones
QKV's instructions compute: a product, a product with the transpose written out or written as
dimension numbers, and a row softmax as the attention kernel writes it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

OPERATIONS = ("dot", "dot_transpose", "dot_rhs_contracting_1", "softmax")


@dataclass
class _Printer:
    size: int
    dtype: str = "bf16"
    lines: list[str] = field(default_factory=list)
    count: int = 0

    @property
    def matrix(self) -> str:
        return f"{self.dtype}[{self.size},{self.size}]{{1,0}}"

    def fresh(self, stem: str) -> str:
        self.count += 1
        return f"%{stem}{self.count}"

    def emit(self, name: str, text: str) -> str:
        self.lines.append(f"  {name} = {text}")
        return name

    def dot(self, a: str, b: str, rhs_contracting: int = 0) -> str:
        m = self.matrix
        return self.emit(self.fresh("dot"), f"{m} dot({m} {a}, {m} {b}), "
                         f"lhs_contracting_dims={{1}}, rhs_contracting_dims={{{rhs_contracting}}}")

    def transpose(self, a: str) -> str:
        m = self.matrix
        return self.emit(self.fresh("t"), f"{m} transpose({m} {a}), dimensions={{1,0}}")

    def softmax(self, a: str) -> str:
        m, n, d = self.matrix, self.size, self.dtype
        e = self.emit(self.fresh("exp"), f"{m} exponential({m} {a})")
        zero = self.emit(self.fresh("zero"), f"{d}[] constant(0)")
        total = self.emit(self.fresh("sum"), f"{d}[{n}]{{0}} reduce({m} {e}, {d}[] {zero}), "
                          f"dimensions={{1}}, to_apply=%add")
        wide = self.emit(self.fresh("den"), f"{m} broadcast({d}[{n}]{{0}} {total}), "
                         f"dimensions={{0}}")
        return self.emit(self.fresh("sm"), f"{m} divide({m} {e}, {m} {wide})")

    def apply(self, operation: str, operands: list[str]) -> str:
        if operation == "dot":
            return self.dot(operands[0], operands[1])
        if operation == "dot_transpose":
            return self.dot(operands[0], self.transpose(operands[1]))
        if operation == "dot_rhs_contracting_1":
            return self.dot(operands[0], operands[1], rhs_contracting=1)
        if operation == "softmax":
            return self.softmax(operands[0])
        raise ValueError(f"unknown operation {operation!r}")


ARITY = {"dot": 2, "dot_transpose": 2, "dot_rhs_contracting_1": 2, "softmax": 1}


@dataclass(frozen=True)
class Composition:
    """A random kernel: its HLO text, its number of inputs, and the operations it applies."""

    text: str
    inputs: int
    steps: tuple[str, ...]


def random_composition(rng: np.random.Generator, steps: int, inputs: int, size: int = 64,
                       name: str = "fuzz", operations: tuple[str, ...] = OPERATIONS
                       ) -> Composition:
    """A DAG of ``steps`` operations over ``inputs`` bf16[size,size] parameters."""
    printer = _Printer(size)
    params = [f"%p{i}" for i in range(inputs)]
    for i, p in enumerate(params):
        printer.emit(p, f"{printer.matrix} parameter({i})")
    values = list(params)
    unused = list(params)
    chosen = []
    for step in range(steps):
        last = step == steps - 1
        operation = str(rng.choice(operations))
        if last and len(unused) > 1:
            # The ROOT must consume what is left.
            operation = str(rng.choice([o for o in operations if ARITY[o] == 2]))
        operands = []
        for _ in range(ARITY[operation]):
            if unused and (last or rng.random() < 0.6):
                pick = unused.pop(int(rng.integers(len(unused))))
            elif len(values) > len(params) and rng.random() < 0.7:
                pick = values[-1 - int(rng.integers(min(2, len(values) - len(params))))]
            else:
                pick = values[int(rng.integers(len(values)))]
            if pick in unused:
                unused.remove(pick)
            operands.append(pick)
        chosen.append(operation)
        values.append(printer.apply(operation, operands))
    body = printer.lines
    root = body[-1].replace(f"  {values[-1]} =", f"  ROOT {values[-1]} =", 1)
    m = f"bf16[{size},{size}]"
    signature = ", ".join(f"p{i}: {m}" for i in range(inputs))
    text = "\n".join([
        f"HloModule {name}",
        "",
        "%add (x: bf16[], y: bf16[]) -> bf16[] {",
        "  %x = bf16[] parameter(0)",
        "  %y = bf16[] parameter(1)",
        "  ROOT %s = bf16[] add(bf16[] %x, bf16[] %y)",
        "}",
        "",
        f"ENTRY %{name} ({signature}) -> {m} {{",
        *body[:-1],
        root,
        "}",
        "",
    ])
    return Composition(text, inputs, tuple(chosen))


def random_inputs(rng: np.random.Generator, count: int, size: int = 64) -> list[np.ndarray]:
    """bf16 inputs small enough that chains of products and exponentials stay finite."""
    import ml_dtypes

    return [(rng.standard_normal((size, size)) / 8).astype(ml_dtypes.bfloat16)
            for _ in range(count)]
