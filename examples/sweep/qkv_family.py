"""A family of QKV accelerators for design-space sweeps: ``qkv(d1_rows=..., ...)`` returns the
``Accelerator`` of one member.

The members are ``examples/QKV/QKV.py``'s accelerator, read from that file (the one place its
instructions are written), changed in what a sweep varies: the rows of the operand buffer
``d1`` and of the result buffer ``d2``, and whether the fused ``softmax`` is there. ``qkv()``
with its defaults is the QKV of ``examples/QKV``. ``sweep.toml`` beside this file sweeps it:
``act-backend sweep examples/sweep/sweep.toml``.
"""

from pathlib import Path

from act_backend import Accelerator
from act_backend.spec.load import load_spec

QKV_SPEC = Path(__file__).resolve().parents[1] / "QKV" / "QKV.py"


def qkv(d1_rows: int = 128, d2_rows: int = 64, softmax: bool = True,
        name: str = "QKV") -> Accelerator:
    """The QKV accelerator with ``d1_rows`` rows of operands in ``d1``, ``d2_rows`` rows of
    matrix-unit results in ``d2``, and the fused ``softmax`` instruction when ``softmax``.

    A ``gemm`` reads two 64-row tiles of ``d1`` and writes one of ``d2``: a member with fewer
    than 64 rows in either is refused by the generator (the slice does not fit the buffer).
    """
    example = load_spec(QKV_SPEC)
    rows = {"d1": d1_rows, "d2": d2_rows}
    acc = Accelerator(name)
    for model in example.data_models:
        acc.add_data_model(model.name, [rows[model.name]], model.unit_dims, model.dtype)
    for original in example.instructions:
        if original.name == "softmax" and not softmax:
            continue
        instr = acc.add_instruction(original.name, original.comp_attrs, original.addr_attrs,
                                    cost=original.cost, update=original.update,
                                    constraints=original.constraints)
        instr.set_inputs(original.inputs)
        instr.set_outputs(original.outputs)
        instr.add_semantics(original.semantics)
    return acc
