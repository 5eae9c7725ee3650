"""The kernel parser reads XLA HLO text, hand-written or printed by JAX, into the HLO IR."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import pytest
from jax import lax

from act_backend.hlo.ir import Span, TensorType
from act_backend.kernel import HloSyntaxError, TupleType, parse_hlo
from act_backend.kernel.parser import parse_with_declarations

ROOT = Path(__file__).resolve().parents[1]
ATTENTION = ROOT / "examples" / "QKV" / "kernels" / "attention.hlo"
KERNELS = Path(__file__).resolve().parent / "kernels"
BF16 = jnp.bfloat16


def jax_hlo(fn, *shapes, dtype=BF16, debug_info=False) -> str:
    """``fn`` lowered by JAX and printed as HLO; a shape may be a (shape, dtype) pair."""
    args = [jax.ShapeDtypeStruct(*s) if isinstance(s, list) else jax.ShapeDtypeStruct(s, dtype)
            for s in shapes]
    return jax.jit(fn).lower(*args).as_text(dialect="hlo", debug_info=debug_info)


def instr(module, name):
    for comp in module.computations:
        for i in comp.instructions:
            if i.name == name:
                return i
    raise KeyError(name)


# -- the hand-written style ----------------------------------------------------------------

def test_hand_written_attention_reads_every_instruction():
    module = parse_hlo(ATTENTION.read_text(), str(ATTENTION))
    assert module.name == "qkv"
    assert [c.name for c in module.computations] == ["add_bf16", "qkv"]
    entry = module.entry
    assert entry.name == "qkv" and entry.is_entry
    assert [i.name for i in entry.instructions] == [
        "Q", "K", "V", "Kt", "S", "E", "zero", "rowsum", "denom", "P", "O"]
    assert [p.name for p in entry.parameters()] == ["Q", "K", "V"]
    assert entry.root.name == "O"
    assert instr(module, "Kt").operands == ["K"]
    assert instr(module, "S").type == TensorType("bf16", (64, 64))
    assert instr(module, "rowsum").type == TensorType("bf16", (64,))
    assert instr(module, "zero").type == TensorType("bf16", ())


def test_hand_written_attention_attributes_use_the_architecture_encodings():
    module = parse_hlo(ATTENTION.read_text())
    assert instr(module, "Q").attrs == {"index": 0}
    assert instr(module, "Kt").attrs == {"dimensions": [1, 0]}
    assert instr(module, "S").attrs == {
        "lhs_contracting_dims": [1], "rhs_contracting_dims": [0],
        "lhs_batch_dims": [], "rhs_batch_dims": []}
    assert instr(module, "zero").attrs == {"value": 0}
    assert instr(module, "rowsum").attrs == {
        "dimensions": [1], "to_apply": "add_bf16", "computation": "add"}
    assert instr(module, "denom").attrs == {"dimensions": [0]}


def test_spans_point_at_name_type_opcode_operands_and_attributes():
    text = ATTENTION.read_text()
    module = parse_hlo(text, "attention.hlo")
    s = instr(module, "S")
    line = text.splitlines()[s.spans["name"].line - 1]

    def written(key):
        span = s.spans[key]
        assert span.file == "attention.hlo" and span.line == span.end_line
        return line[span.column - 1:span.end_column - 1]

    assert written("name") == "%S"
    assert written("type") == "bf16[64,64]{1,0}"
    assert written("opcode") == "dot"
    assert written("operand:0") == "bf16[64,64]{1,0} %Q"
    assert written("operand:1") == "bf16[64,64]{1,0} %Kt"
    assert written("attr:lhs_contracting_dims") == "lhs_contracting_dims={1}"
    assert written("attr:rhs_contracting_dims") == "rhs_contracting_dims={0}"
    assert s.span.line == s.spans["name"].line
    assert module.computation("qkv").span == Span("attention.hlo", 9, 7, 9, 11)


def test_parameter_index_and_constant_value_have_spans():
    module = parse_hlo(ATTENTION.read_text())
    assert "operand:0" not in instr(module, "Q").spans
    assert instr(module, "K").spans["attr:index"].column == 35
    assert instr(module, "zero").spans["attr:value"].column == 27


def test_the_dimension_numbers_fixture_keeps_rhs_contracting_dims():
    module = parse_hlo((KERNELS / "qkt_dimension_numbers.hlo").read_text())
    s = module.entry.root
    assert (s.opcode, s.operands) == ("dot", ["Q", "K"])
    assert s.attrs["rhs_contracting_dims"] == [1]
    assert all(i.opcode != "transpose" for i in module.entry.instructions)


# -- what JAX prints -----------------------------------------------------------------------

def test_jax_attention_fixture_reads_like_the_hand_written_one():
    module = parse_hlo((KERNELS / "attention_jax.hlo").read_text())
    assert module.name == "jit_attention"
    assert [c.name for c in module.computations] == ["region_0.1", "main.2"]
    assert module.entry.name == "main.2"
    ops = [i.opcode for i in module.entry.instructions]
    assert ops == ["parameter", "parameter", "dot", "exponential", "constant", "reduce",
                   "broadcast", "divide", "parameter", "dot"]
    reduce = instr(module, "reduce.5")
    assert reduce.attrs["to_apply"] == "region_0.1"
    assert reduce.attrs["computation"] == "add"
    assert [p.attrs["index"] for p in module.entry.parameters()] == [0, 1, 2]
    assert module.entry.parameters()[2].name == "v.1"


def test_lax_programs_printed_by_jax_parse():
    def program(x, y):
        z = lax.dot_general(x, y, (((1,), (0,)), ((), ())))
        return lax.max(z, lax.broadcast_in_dim(BF16(0), (8, 8), ())), lax.transpose(x, (1, 0))

    module = parse_hlo(jax_hlo(program, (8, 8), (8, 8)))
    root = module.entry.root
    assert root.opcode == "tuple"
    assert root.type == TupleType((TensorType("bf16", (8, 8)), TensorType("bf16", (8, 8))))
    opcodes = {i.opcode for i in module.entry.instructions}
    assert {"dot", "maximum", "broadcast", "transpose", "tuple"} <= opcodes


def test_debug_info_tables_and_metadata_are_read_and_kept_raw():
    text = jax_hlo(lambda x: lax.exp(x) + x, (4, 4), debug_info=True)
    assert "FileNames" in text and "metadata=" in text
    module = parse_hlo(text)
    add = module.entry.root
    assert add.opcode == "add"
    assert add.attrs["metadata"].startswith("{op_name=")


def test_index_comments_precision_and_six_outputs():
    def program(x, y):
        z = jnp.dot(x, y, precision=lax.Precision.HIGHEST)
        return z, x, y, z + x, z - y, z * x

    text = jax_hlo(program, (4, 4), (4, 4))
    assert "/*index=5*/" in text and "operand_precision={highest,highest}" in text
    module = parse_hlo(text)
    assert len(module.entry.root.operands) == 6
    dot = next(i for i in module.entry.instructions if i.opcode == "dot")
    assert dot.attrs["operand_precision"] == "{highest,highest}"


def test_an_optimised_module_with_fusions_parses():
    x = jax.ShapeDtypeStruct((8, 8), BF16)
    text = jax.jit(lambda a, b: a @ b + 1).lower(x, x).compile().as_text()
    assert "is_scheduled=true" in text and "backend_config=" in text
    module = parse_hlo(text)
    assert any(i.opcode == "fusion" for i in module.entry.instructions)
    fused = [c for c in module.computations if c.name.startswith("fused_computation")]
    assert fused and all(c.instructions for c in fused)


def test_hyphenated_opcodes_and_exp_are_normalised():
    def program(x, i):
        window = lax.dynamic_slice(x, (i, 0), (2, 4))
        return lax.dynamic_update_slice(x, window, (0, i)), lax.bitcast_convert_type(x, jnp.int16)

    module = parse_hlo(jax_hlo(program, (4, 4), [(), jnp.int32]))
    ops = {i.opcode for c in module.computations for i in c.instructions}
    assert {"dynamic_slice", "dynamic_update_slice", "bitcast_convert"} <= ops
    assert not any("-" in op for op in ops)
    ds = next(i for i in module.entry.instructions if i.opcode == "dynamic_slice")
    assert ds.attrs["dynamic_slice_sizes"] == [2, 4]

    text = ATTENTION.read_text().replace("exponential(", "exp(")
    assert instr(parse_hlo(text), "E").opcode == "exponential"


def test_slices_iota_compare_and_literals():
    def program(x):
        s = x[1:5, ::2]
        i = lax.broadcasted_iota(jnp.int32, (4, 4), 1)
        return s, i, x > 1.5, x + jnp.array([[1.5, -2.0, 0.0, 4.0]] * 8, BF16)

    module = parse_hlo(jax_hlo(program, (8, 4)))
    entry = module.entry
    sl = next(i for i in entry.instructions if i.opcode == "slice")
    assert sl.attrs["slice"] == [[1, 5, 1], [0, 4, 2]]
    iota = next(i for i in entry.instructions if i.opcode == "iota")
    assert iota.attrs["iota_dimension"] == 0
    assert iota.type == TensorType("s32", (4,))
    cmp = next(i for i in entry.instructions if i.opcode == "compare")
    assert cmp.attrs["direction"] == "GT"
    big = next(i for i in entry.instructions
               if i.opcode == "constant" and i.type.shape == (8, 4))
    assert big.attrs["value"] == [[1.5, -2, 0, 4]] * 8


def test_a_convolution_as_jax_prints_it_decodes_window_labels_and_groups():
    def program(x, w):
        return lax.conv_general_dilated(
            x, w, (2, 1), ((1, -1), (0, 2)), lhs_dilation=(1, 2), rhs_dilation=(2, 1),
            dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)

    conv = parse_hlo(jax_hlo(program, (2, 8, 8, 4), (3, 3, 2, 6))).entry.root
    assert conv.opcode == "convolution"
    assert conv.attrs["window"] == {"size": [3, 3], "stride": [2, 1], "pad": [[1, -1], [0, 2]],
                                    "lhs_dilate": [1, 2], "rhs_dilate": [2, 1]}
    assert conv.attrs["dim_labels"] == ("b01f", "01io", "b01f")
    assert conv.attrs["feature_group_count"] == 2


CONV = """HloModule k
ENTRY main {
  x = f32[1,8,8,2] parameter(0)
  w = f32[3,3,2,2] parameter(1)
  ROOT y = f32[1,6,6,2] convolution(x, w), window={size=3x3}, dim_labels=b01f_01io->b01f
}
"""


@pytest.mark.parametrize("window, decoded", [
    ("{size=3x3}", {"size": [3, 3]}),
    ("{size=3x3 rhs_reversal=1x0 pad=-1_2x0_0}",
     {"size": [3, 3], "rhs_reversal": [1, 0], "pad": [[-1, 2], [0, 0]]}),
    ("{size=3x3  /* spaced */  stride=2x1}", {"size": [3, 3], "stride": [2, 1]}),
    ("{size=3x-1 stride=0x0}", {"size": [3, -1], "stride": [0, 0]}),  # the type rule refuses
    ("{size=3}", {"size": [3]}),
    ("{}", {}),
])
def test_a_window_holds_the_fields_written_and_no_defaults(window, decoded):
    module = parse_hlo(CONV.replace("window={size=3x3}", f"window={window}"))
    assert module.entry.root.attrs["window"] == decoded


@pytest.mark.parametrize("window, message", [
    ("{size=3x3 size=3x3}", "the field 'size' is given twice"),
    ("{size=3x3 bogus=1x1}", "unknown field 'bogus'"),
    ("{size=3x3, stride=1x1}", "fields are separated by spaces, not commas"),
    ("{size=3x}", "size is one integer per dimension joined by 'x', such as 3x3, found '3x'"),
    ("{size=3.0x3}", "found '3.0x3'"),
    ("{size=+3x3}", "found '+3x3'"),
    ("{size = 3x3}", "'size' is not key=value"),
    ("{size=3x3 pad=1x1}", "pad is low_high per dimension joined by 'x'"),
    ("{size=3x3 pad=1_1_0x0_0}", "found '1_1_0x0_0'"),
    ("{size={3,3}}", "found a nested list"),
    ("3", "attribute 'window' reads {size=3x3 stride=1x1"),
])
def test_a_malformed_window_is_refused_at_its_value(window, message):
    err = _error(CONV.replace("window={size=3x3}", f"window={window}"))
    assert (err.code, err.line, err.column) == ("hlo-syntax", 5, 51)
    assert message in err.message
    assert err.message.startswith("in 'y': ")


@pytest.mark.parametrize("labels, message", [
    ("b01f", "expects lhs_rhs->out labels such as b01f_01io->b01f, found 'b01f'"),
    ("{b01f}", "found a '{...}' list"),
    ("3", "found '3'"),
])
def test_dim_labels_other_than_lhs_rhs_out_are_refused_at_their_value(labels, message):
    err = _error(CONV.replace("b01f_01io->b01f", labels))
    assert (err.code, err.line, err.column) == ("hlo-syntax", 5, 74)
    assert message in err.message


def test_special_float_and_boolean_literals():
    text = """HloModule lits
ENTRY main {
  a = bf16[] constant(-inf)
  b = f32[] constant(nan)
  c = pred[] constant(true)
  d = f32[2] constant({1e-3, inf})
  ROOT t = (bf16[], f32[], pred[], f32[2]) tuple(a, b, c, d)
}
"""
    module = parse_hlo(text)
    a, b, c, d = (instr(module, n).attrs["value"] for n in "abcd")
    assert a == float("-inf") and b != b and c is True
    assert d == [0.001, float("inf")]


def test_a_tuple_typed_operand_and_get_tuple_element():
    text = """HloModule gte
ENTRY %main (p: (f32[2], s32[])) -> s32[] {
  %p = (f32[2]{0}, s32[]) parameter(0)
  ROOT %x = s32[] get-tuple-element((f32[2]{0}, s32[]) %p), index=1
}
"""
    module = parse_hlo(text)
    x = module.entry.root
    assert x.opcode == "get_tuple_element" and x.attrs == {"index": 1}
    assert module.entry.parameters()[0].type == TupleType(
        (TensorType("f32", (2,)), TensorType("s32", ())))


def test_unknown_attributes_are_kept_as_written():
    text = """HloModule keep
ENTRY main {
  x = f32[4] parameter(0), sharding={replicated}
  ROOT y = f32[4] add(x, x), frontend_attributes={_xla_compute_type="host"}, backend_config="{}"
}
"""
    module = parse_hlo(text)
    assert instr(module, "x").attrs == {"index": 0, "sharding": "{replicated}"}
    assert instr(module, "y").attrs == {
        "frontend_attributes": '{_xla_compute_type="host"}', "backend_config": '"{}"'}


def test_typed_operands_and_signatures_are_recorded_for_the_checker():
    module, declared = parse_with_declarations(ATTENTION.read_text(), "a.hlo")
    s = instr(module, "S")
    assert declared.operand_type(s, 1) == TensorType("bf16", (64, 64))
    signature = declared.signature(module.entry)
    assert [(n, t) for n, t, _ in signature.params] == [
        (name, TensorType("bf16", (64, 64))) for name in ("Q", "K", "V")]
    assert signature.result == TensorType("bf16", (64, 64))
    assert signature.result_span == Span("a.hlo", 9, 64, 9, 75)
    bare, nothing = parse_with_declarations((KERNELS / "attention_jax.hlo").read_text())
    assert nothing.signature(bare.entry) is None
    assert nothing.operand_type(bare.entry.root, 0) is None


def test_comments_and_taidl_style_semicolons_are_accepted():
    text = """HloModule k  // a kernel
ENTRY %k {
  /* the input */ %x = f32[4] parameter(0);
  ROOT %y = f32[4] negate(%x);
}
"""
    module = parse_hlo(text)
    assert [(i.name, i.opcode) for i in module.entry.instructions] == [
        ("x", "parameter"), ("y", "negate")]


def test_a_module_without_header_takes_its_entry_name():
    module = parse_hlo("ENTRY %k { ROOT %c = f32[] constant(1) }")
    assert module.name == "k"


# -- errors --------------------------------------------------------------------------------

def _error(text: str) -> HloSyntaxError:
    with pytest.raises(HloSyntaxError) as caught:
        parse_hlo(text, "k.hlo")
    return caught.value


BASE = ATTENTION.read_text()


@pytest.mark.parametrize("old, new, line, column, message", [
    ("transpose(bf16[64,64]{1,0} %K)", "transpose(, %K)", 13, 36,
     "expected an operand name after '(', found ','"),
    ("add(bf16[] %x, bf16[] %y)", "add(bf16[] %x, )", 6, 37,
     "expected an operand name after ',', found ')'"),
    ("%E = bf16", "%E bf16", 15, 6, "expected '=' after '%E', found 'bf16'"),
    ("%E = bf16[64,64]", "%E = bf16[64,]", 15, 16, "expected a dimension size after ','"),
    ("%E = bf16[64,64]", "%E = bf17[64,64]", 15, 8, "unknown element type 'bf17'"),
    ("%E = bf16[64,64]", "%E = bf16[64,6.5]", 15, 16,
     "a dimension must be a non-negative integer, found '6.5'"),
    ("%E =", "%E @=", 15, 6, "unexpected character '@'"),
    ("dimensions={1,0}", "dimensions={a,0}", 13, 70,
     "in 'Kt': each entry of 'dimensions' must be an integer, found 'a'"),
    ("dimensions={1,0}", "dimensions=7", 13, 69,
     "attribute 'dimensions' expects a list of integers such as {1,0}"),
    ("bf16[64,64]{1,0} exponential", "bf16[64,64]{1,0} ", 15, 25,
     "expected an opcode between the type and '('"),
    ("parameter(0)", "parameter(x)", 4, 25, "parameter 'x' needs its index"),
    ("constant(0)", "constant({...})", 16, 28, "the constant's value was left out"),
    ("transpose(bf16[64,64]{1,0} %K)", "transpose(3)", 13, 36,
     "expected an operand name in 'Kt', found the literal 3"),
    ("dimensions={1,0}", "dimensions={1,0}, dimensions={0,1}", 13, 76,
     "attribute 'dimensions' is given twice in 'Kt'"),
])
def test_syntax_errors_say_what_is_wrong_where(old, new, line, column, message):
    assert old in BASE
    err = _error(BASE.replace(old, new, 1))
    assert (err.line, err.column) == (line, column)
    assert message in err.message
    assert str(err).startswith(f"k.hlo:{line}:{column}: ")


def test_an_unclosed_computation_is_reported_at_the_end_of_the_input():
    err = _error(BASE.rstrip()[:-1])
    assert err.message == "unexpected end of the input: a computation is not closed with '}'"
    assert err.line == len(BASE.rstrip().splitlines())


def test_errors_without_a_file_name_the_string():
    with pytest.raises(HloSyntaxError, match=r"^<string>:1:1: "):
        parse_hlo("@")


def test_syntax_errors_are_value_errors_with_a_span():
    err = _error("HloModule m\nENTRY e {\n  x = f32[] parameter(0)\n  ROOT y = f32[] add(x,)\n}")
    assert isinstance(err, ValueError)
    assert err.span == Span("k.hlo", 4, 24, 4, 25)
    assert err.code == "hlo-syntax"
