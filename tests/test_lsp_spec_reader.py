"""Reading a spec without running it: which TAIDL calls it makes, with what values, and
when it cannot tell."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from lsp.spec.reader import MAX_LOOP_ITERATIONS, read_spec

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def read(source: str):
    return read_spec(ast.parse(textwrap.dedent(source)))


def calls(reading) -> list[tuple]:
    return [(c.method, *c.args) for c in reading.calls]


def test_the_examples_are_read_completely():
    for name, instructions in (("QKV", 7), ("QKV_new", 10)):
        reading = read((EXAMPLES / name / f"{name}.py").read_text())
        assert [r.incomplete for r in reading.accelerators] == [False]
        assert sum(1 for c in reading.calls if c.method == "add_instruction") == instructions
        assert sum(1 for c in reading.calls if c.method == "add_semantics") == instructions
        assert not any(c.opaque for c in reading.calls if c.method.startswith("add_"))
        assert [c.method for c in reading.calls[-2:]] == ["generate_oracle", "generate_backend"]


def test_loops_over_literals_are_unrolled_and_templates_formatted():
    reading = read("""
        from act_backend import Accelerator
        acc = Accelerator("A")
        TEMPLATE = "ENTRY {name} {{ }}"
        for name, width in (("x", 2), ("y", 3)):
            i = acc.add_instruction(name, ["n"], [f"addr_{name}"])
            i.set_inputs([["d1", ["@a.addr"], [str(width * 4)]]])
            i.add_semantics(TEMPLATE.format(name=name))
    """)
    assert calls(reading)[1:] == [
        ("add_instruction", "x", ["n"], ["addr_x"]),
        ("set_inputs", [["d1", ["@a.addr"], ["8"]]]),
        ("add_semantics", "ENTRY x { }"),
        ("add_instruction", "y", ["n"], ["addr_y"]),
        ("set_inputs", [["d1", ["@a.addr"], ["12"]]]),
        ("add_semantics", "ENTRY y { }"),
    ]
    assert not reading.accelerators[0].incomplete


def test_literal_arguments_remember_their_source_node():
    reading = read("""
        acc = Accelerator("A")
        SEM = '''ENTRY a { }'''
        i = acc.add_instruction("a", [], [])
        i.add_semantics(SEM)
        i.add_semantics(SEM.format())
    """)
    direct, formatted = [c for c in reading.calls if c.method == "add_semantics"]
    assert isinstance(direct.literal_args[0], ast.Constant)
    assert direct.literal_args[0].lineno == 3
    assert formatted.literal_args == {}


def test_values_only_known_at_run_time_make_the_call_opaque_and_the_object_incomplete():
    reading = read("""
        import json
        acc = Accelerator("A")
        acc.add_data_model("d1", [128], [64], "bf16")
        dims = json.load(open("dims.json"))
        acc.add_data_model("d2", dims, [64], "bf16")
    """)
    assert [c.opaque for c in reading.calls] == [False, False, True]
    assert reading.accelerators[0].incomplete


def test_handing_an_object_to_user_code_makes_it_incomplete():
    reading = read("""
        def fill(instr):
            instr.add_semantics("ENTRY x { }")
        acc = Accelerator("A")
        i = acc.add_instruction("x", [], [])
        fill(i)
    """)
    assert reading.accelerators[0].incomplete
    harmless = read("""
        acc = Accelerator("A")
        print(acc)
        generate_backend(acc)
    """)
    assert not harmless.accelerators[0].incomplete


def test_a_loop_of_unknown_length_is_read_once_and_marked_incomplete():
    reading = read("""
        acc = Accelerator("A")
        for name in open("names.txt"):
            acc.add_instruction(name, [], [])
    """)
    assert [c.method for c in reading.calls] == ["Accelerator", "add_instruction"]
    assert reading.calls[1].opaque and reading.accelerators[0].incomplete


def test_work_is_bounded_and_giving_up_is_reported():
    reading = read(f"""
        acc = Accelerator("A")
        for i in range({MAX_LOOP_ITERATIONS + 5}):
            acc.add_data_model("d1", [1], [1], "u8")
    """)
    assert reading.gave_up is not None and "loop iterations" in reading.gave_up
    assert reading.accelerators[0].incomplete
    huge = read("""
        acc = Accelerator("A")
        dims = [1] * 10**12
        text = "x" * (10**12)
        acc.add_data_model("d1", dims, [1], text)
    """)
    assert huge.calls[1].opaque  # neither product was computed


def test_module_level_conditions_are_evaluated_when_they_can_be():
    reading = read("""
        acc = Accelerator("A")
        if __name__ == "__main__":
            acc.add_data_model("main", [1], [1], "u8")
        else:
            acc.add_data_model("imported", [1], [1], "u8")
    """)
    assert [c.args[0] for c in reading.calls[1:]] == ["main"]
