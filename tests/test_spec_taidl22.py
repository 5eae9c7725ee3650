"""Spec forms of the public TAIDL specs: constants whose value is a computational attribute,
``broadcast`` of a one-element array with ``dimensions={}`` (a splat), and the TAIDL v2.2 API
(``base_dir``, ``cost``, ``constraints``, ``add_constraints``), from the spec through the
table to the oracle."""

from __future__ import annotations

import sys

import jax.numpy as jnp
import numpy as np
import pytest
from helpers.oracle_harness import load_oracle

from act_backend import Accelerator
from act_backend.oracle import write_oracle
from act_backend.table import isa_table
from act_backend.validation import check

SCALED_LOAD = """
ENTRY mvin {
    %In1 = u8[`@c.rows*16`] parameter(0);
    %data = u8[`@c.rows`,16] reshape(%In1);
    %val = s8[`@c.rows`,16] bitcast_convert(%data);
    %scale = s8[1] constant(`@c.scale`);
    %scale_bc = s8[`@c.rows`,16] broadcast(%scale), dimensions={};
    ROOT %Out0 = s8[`@c.rows`,16] multiply(%val, %scale_bc);
}
"""

STORE = """
ENTRY mvout {
    %In1 = s8[`@c.rows`,16] parameter(0);
    %data = u8[`@c.rows`,16] bitcast_convert(%In1);
    ROOT %Out0 = u8[`@c.rows*16`] reshape(%data);
}
"""


def scaled(semantics: str = SCALED_LOAD, **options) -> Accelerator:
    """An int8 scratchpad with a scaled load and a store; ``options`` go to the load."""
    acc = Accelerator("Scaled")
    acc.add_data_model("spad", [64, 16], [], "s8")
    load = acc.add_instruction("mvin", ["rows", "scale"], ["hbm_addr", "sp_addr"], **options)
    load.set_inputs([["d0", ["@a.hbm_addr"], ["@c.rows * 16"]]])
    load.set_outputs([["spad", ["@a.sp_addr", 0], ["@c.rows", 16]]])
    load.add_semantics(semantics)
    store = acc.add_instruction("mvout", ["rows"], ["hbm_addr", "sp_addr"])
    store.set_inputs([["spad", ["@a.sp_addr", 0], ["@c.rows", 16]]])
    store.set_outputs([["d0", ["@a.hbm_addr"], ["@c.rows * 16"]]])
    store.add_semantics(STORE)
    return acc


def errors(acc) -> list[tuple[str, str]]:
    return [(p.code, p.message) for p in check(acc) if p.severity == "error"]


def codes(acc) -> list[str]:
    return [code for code, _ in errors(acc)]


def load_entry(acc) -> dict:
    return next(i for i in isa_table(acc)["instructions"] if i["name"] == "mvin")


# -- constants and splats -----------------------------------------------------------------------


def test_a_constant_valued_by_an_attribute_is_an_expression_in_the_table():
    ops = {op["name"]: op for op in load_entry(scaled())["semantics"]}
    assert ops["scale"]["attrs"] == {"value": {"attr": "c.scale"}}
    assert ops["scale"]["shape"] == [{"int": 1}]


def test_a_one_element_broadcast_without_dimensions_is_read_as_a_splat():
    ops = [(op["name"], op["op"], op["shape"], op["operands"], op["attrs"])
           for op in load_entry(scaled())["semantics"]]
    rows = {"attr": "c.rows"}
    assert ("scale_bc.scalar", "reshape", [], ["scale"], {}) in ops
    assert ("scale_bc", "broadcast", [rows, {"int": 16}], ["scale_bc.scalar"],
            {"dimensions": []}) in ops
    names = [name for name, *_ in ops]
    assert names.index("scale") < names.index("scale_bc.scalar") < names.index("scale_bc")


@pytest.mark.parametrize(("value", "code"), [
    ("`@a.hbm_addr`", "address-in-semantics"),
    ("`@c.gain`", "undeclared-attribute"),
    ("`@c.scale +`", "expression-syntax"),
])
def test_a_constant_expression_names_declared_computational_attributes(value, code):
    acc = scaled(SCALED_LOAD.replace("`@c.scale`", value))
    assert code in codes(acc)


def test_a_broadcast_without_dimensions_of_a_longer_array_stays_an_error():
    text = SCALED_LOAD.replace("s8[1] constant(`@c.scale`)", "s8[2] constant({1, 2})")
    assert codes(scaled(text)) == ["bad-attribute"]


# -- the TAIDL v2.2 API -------------------------------------------------------------------------


def test_base_dir_is_taken_as_given(tmp_path):
    assert Accelerator("A", base_dir=tmp_path).base_dir == str(tmp_path)
    assert Accelerator("A", base_dir=None).base_dir  # the creating file's directory


def test_cost_and_constraints_reach_the_table():
    acc = scaled(cost="2 * @c.rows + 1", constraints=["@c.rows <= 16 and @c.scale >= 1"])
    entry = load_entry(acc)
    rows = {"attr": "c.rows"}
    assert entry["cost"] == {"op": "+", "args": [{"op": "*", "args": [{"int": 2}, rows]},
                                                 {"int": 1}]}
    assert entry["constraints"] == [
        {"op": "<=", "args": [rows, {"int": 16}]},
        {"op": ">=", "args": [{"attr": "c.scale"}, {"int": 1}]},
    ]
    store = next(i for i in isa_table(acc)["instructions"] if i["name"] == "mvout")
    assert store["cost"] == {"int": 1} and store["constraints"] == []


def test_add_constraints_takes_one_constraint_a_line_and_accumulates():
    acc = scaled(constraints=["@c.rows <= 16"])
    load = acc.instructions[0]
    load.add_constraints("""
        @a.sp_addr % 16 == 0
        @a.hbm_addr + @c.rows * 16 <= 4096
    """)
    load.add_constraints(["@c.scale != 0"])
    assert load.constraints == ["@c.rows <= 16", "@a.sp_addr % 16 == 0",
                                "@a.hbm_addr + @c.rows * 16 <= 4096", "@c.scale != 0"]
    assert [c["op"] for c in load_entry(acc)["constraints"]] == ["<=", "==", "<=", "!="]
    assert not [p for p in check(acc) if p.code == "repeated-call"]


@pytest.mark.parametrize(("options", "code"), [
    ({"constraints": ["@c.rows"]}, "bad-constraint"),
    ({"constraints": ["@c.rows <= 16 <= 32"]}, "bad-constraint"),
    ({"constraints": "@c.rows <= 16"}, "bad-constraint"),
    ({"constraints": ["@c.depth <= 16"]}, "undeclared-attribute"),
    ({"constraints": ["@a.sp_addr != 3"]}, "bad-constraint"),
    ({"constraints": ["@a.sp_addr * @a.hbm_addr <= 3"]}, "constraint-not-affine"),
    ({"constraints": ["@s.preload == 1"]}, "state-update"),
    ({"cost": "@a.sp_addr"}, "cost-mentions-address"),
    ({"cost": 1.5}, "bad-cost"),
    ({"cost": -1}, "bad-cost"),
    ({"update": ["@s.preload = 1"]}, "state-update"),
])
def test_constraints_cost_and_updates_the_backend_cannot_honour_are_refused(options, code):
    assert codes(scaled(**options)) == [code]


def test_empty_update_and_public_default_cost_are_accepted():
    assert not errors(scaled(cost="0", update=[], constraints=[]))
    assert load_entry(scaled(cost="0"))["cost"] == {"int": 0}


# -- the oracle -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def oracle(tmp_path_factory):
    acc = scaled(cost="@c.rows", constraints=["@c.rows <= 8", "@a.sp_addr % 16 == 0"])
    module = load_oracle(write_oracle(isa_table(acc), tmp_path_factory.mktemp("s") / "oracle"))
    return (sys.modules[f"{module.__name__}.decorator"].kernel,
            sys.modules[f"{module.__name__}.api"])


def test_the_oracle_scales_by_the_attribute_value_with_int8_wrap_around(oracle):
    kernel, api = oracle
    x = np.arange(-64, 64, dtype=np.int8).reshape(8, 16)

    @kernel(hbm=512, input=[{"addr": 0, "shape": (8, 16), "dtype": jnp.int8}],
            output=[{"addr": 256, "shape": (8, 16), "dtype": jnp.int8}])
    def triple():
        api.mvin(rows=8, scale=3, hbm_addr=0, sp_addr=16)
        api.mvout(rows=8, hbm_addr=256, sp_addr=16)

    (out,), _ = triple("fsim")(x)
    np.testing.assert_array_equal(np.asarray(out), (x.astype(np.int32) * 3).astype(np.int8))
    assert triple("cost")() == 8 + 1  # mvin costs @c.rows, mvout the default 1


@pytest.mark.parametrize(("attrs", "message"), [
    ({"rows": 16, "sp_addr": 0}, "rows=16.*constraint 0 of the table does not hold: 16 <= 8"),
    ({"rows": 4, "sp_addr": 8}, "constraint 1 of the table does not hold: 8 == 0"),
])
def test_the_oracle_refuses_a_call_that_breaks_a_constraint(oracle, attrs, message):
    kernel, api = oracle

    @kernel(hbm=512, input=[], output=[])
    def broken():
        api.mvin(scale=1, hbm_addr=0, **attrs)

    with pytest.raises(Exception, match=message):
        broken("cost")()


def test_a_spec_in_the_public_taidl_form_validates_unchanged():
    # Written as the public ACT specs write them: no space before '{', spaces in shapes,
    # empty batch dimension lists, a ReLU through a one-element zero broadcast.
    acc = Accelerator("Public")
    acc.add_data_model("sp", [64, 16], [], "s8")
    acc.add_data_model("ac", [64, 16], [], "s32")
    relu = acc.add_instruction("mvout_relu", ["rows", "cols"], ["hbm_addr", "sp_addr"])
    relu.set_inputs([["sp", ["@a.sp_addr", 0], ["@c.rows", "@c.cols"]]])
    relu.set_outputs([["d0", ["@a.hbm_addr"], ["@c.rows * @c.cols"]]])
    relu.add_semantics("""
ENTRY mvout_relu{
    %In1 = s8[`@c.rows`, `@c.cols`] parameter(0);
    %zero = s8[1] constant(0);
    %zeros = s8[`@c.rows`,`@c.cols`] broadcast(%zero), dimensions={};
    %relu = s8[`@c.rows`,`@c.cols`] maximum(%In1, %zeros);
    %data = u8[`@c.rows`,`@c.cols`] bitcast_convert(%relu);
    ROOT %Out0 = u8[`@c.rows*@c.cols`] reshape(%data);
}
""")
    mm = acc.add_instruction("matmul32", ["I", "J", "K"], ["C", "A", "B"])
    mm.set_inputs([["sp", ["@a.A", 0], ["@c.I", "@c.K"]], ["sp", ["@a.B", 0], ["@c.K", "@c.J"]]])
    mm.set_outputs([["ac", ["@a.C", 0], ["@c.I", "@c.J"]]])
    mm.add_semantics("""
ENTRY matmul_32{
    %In1 = s8[`@c.I`, `@c.K`] parameter(0);
    %In2 = s8[`@c.K`, `@c.J`] parameter(1);
    %a = s32[`@c.I`, `@c.K`] convert(%In1);
    %b = s32[`@c.K`, `@c.J`] convert(%In2);
    ROOT %Out0 = s32[`@c.I`,`@c.J`] dot(%a, %b), lhs_batch_dims={},
        lhs_contracting_dims={1}, rhs_batch_dims={}, rhs_contracting_dims={0};
}
""")
    assert not errors(acc)
    names = [i["name"] for i in isa_table(acc)["instructions"]]
    assert names == ["mvout_relu", "matmul32"]
