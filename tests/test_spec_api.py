"""The TAIDL API records what a spec says, as given, and where each piece was written."""

from __future__ import annotations

import os
import runpy
import textwrap

import pytest

import act_backend
from act_backend import Accelerator
from act_backend.spec import HBM
from act_backend.spec import Accelerator as SpecAccelerator


def run_spec(tmp_path, source: str, name: str = "spec.py") -> dict:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return runpy.run_path(str(path))


def position(tmp_path, needle: str, name: str = "spec.py", nth: int = 0) -> tuple[int, int]:
    """1-based (line, column) of the nth occurrence of ``needle`` in the written spec."""
    lines = (tmp_path / name).read_text(encoding="utf-8").splitlines()
    hits = [(n, line.index(needle) + 1) for n, line in enumerate(lines, 1) if needle in line]
    return hits[nth]


def at(span) -> tuple[int, int]:
    return span.line, span.column


def test_the_package_exports_the_accelerator():
    assert Accelerator is SpecAccelerator
    assert act_backend.Accelerator is SpecAccelerator


def test_calls_record_their_arguments_as_given():
    acc = Accelerator("QKV")
    model = acc.add_data_model("d1", [128], [64], "bf16")
    instr = acc.add_instruction("mov", ["n"], ["addr_in", "addr_out"])
    instr.set_inputs([["d1", ["@a.addr_in"], ["@c.n"]]])
    instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])
    instr.add_semantics("ENTRY mov { ROOT %x = bf16[1] parameter(0); }")
    assert acc.name == "QKV"
    assert (model.name, model.access_dims, model.unit_dims, model.dtype) == (
        "d1", [128], [64], "bf16")
    assert instr.comp_attrs == ["n"] and instr.addr_attrs == ["addr_in", "addr_out"]
    assert instr.inputs == [["d1", ["@a.addr_in"], ["@c.n"]]]
    assert instr.outputs == [["d1", ["@a.addr_out"], ["@c.n"]]]
    assert instr.semantics.startswith("ENTRY mov")
    assert acc.data_models == [model] and acc.instructions == [instr]


def test_bad_data_is_recorded_not_raised():
    acc = Accelerator(42)
    model = acc.add_data_model(None, "many", {"x": 1}, 7)
    instr = acc.add_instruction(["x"], "n", None)
    instr.set_inputs("d1")
    instr.add_semantics(None)
    assert acc.name == 42 and model.access_dims == "many" and instr.inputs == "d1"


def test_d0_is_implicit_byte_addressed_and_unbounded():
    acc = Accelerator("T")
    acc.add_data_model("d1", [8], [4], "f32")
    assert [m.name for m in acc.data_models] == ["d1"]
    d0, d1 = acc.buffers
    assert (d0.name, d0.access_dims, d0.unit_dims, d0.dtype) == (HBM, [None], [], "u8")
    assert d1.name == "d1"


def test_accessors_keep_declaration_order_and_are_copies():
    acc = Accelerator("T")
    for name in ("d3", "d1", "d2"):
        acc.add_data_model(name, [1], [1], "u8")
    names = [m.name for m in acc.data_models]
    acc.data_models.clear()
    assert names == ["d3", "d1", "d2"] and len(acc.data_models) == 3


def test_base_dir_is_the_directory_of_the_creating_file(tmp_path):
    sub = tmp_path / "specs"
    sub.mkdir()
    spec = run_spec(sub, """
        from act_backend import Accelerator
        acc = Accelerator("T")
    """)
    assert spec["acc"].base_dir == str(sub)


def test_base_dir_without_a_file_is_the_working_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scope: dict = {}
    exec(compile("from act_backend import Accelerator\nacc = Accelerator('T')\n", "<string>",
                 "exec"), scope)
    assert scope["acc"].base_dir == os.getcwd()


def test_calls_and_arguments_know_where_they_were_written(tmp_path):
    spec = run_spec(tmp_path, """
        from act_backend import Accelerator

        acc = Accelerator("T")
        acc.add_data_model("d1", [128],
                           [64], "bf16")
        i = acc.add_instruction(name="ld", comp_attrs=["n"], addr_attrs=["src", "dst"])
        i.set_inputs([["d0", ["@a.src"], ["@c.n * 128"]]])
    """)
    acc = spec["acc"]
    path = str(tmp_path / "spec.py")
    assert acc.span.file == path
    assert at(acc.span) == position(tmp_path, 'Accelerator("T")')
    assert at(acc.arg_spans["name"]) == position(tmp_path, '"T"')
    model = acc.data_models[0]
    assert at(model.span) == position(tmp_path, "acc.add_data_model")
    assert (model.span.end_line, at(model.arg_spans["unit_dims"])) == (
        6, position(tmp_path, "[64]"))
    instr = acc.instructions[0]
    assert at(instr.arg_spans["name"]) == position(tmp_path, '"ld"')
    assert at(instr.site.arg("addr_attrs").item(1).span) == position(tmp_path, '"dst"')
    slices = instr.inputs_site.arg("slices")
    assert at(slices.at(0, 0).span) == position(tmp_path, '"d0"')
    size = slices.at(0, 2, 0)
    assert at(size.span) == position(tmp_path, '"@c.n * 128"')
    # A character of a string argument maps to its own column: '@' of "@c.n * 128".
    line, column = position(tmp_path, "@c.n * 128")
    assert at(size.text_span(0, 4)) == (line, column)


def test_a_part_not_written_as_a_literal_falls_back_to_the_whole_argument(tmp_path):
    spec = run_spec(tmp_path, """
        from act_backend import Accelerator
        SLICES = [["d0", ["@a.src"], ["1"]]]
        acc = Accelerator("T")
        i = acc.add_instruction("ld", [], ["src"])
        i.set_inputs(SLICES)
    """)
    slices = spec["acc"].instructions[0].inputs_site.arg("slices")
    assert at(slices.at(0, 1, 0).span) == position(tmp_path, "SLICES", nth=1)


def test_semantics_tokens_map_into_triple_quoted_strings(tmp_path):
    spec = run_spec(tmp_path, '''
        from act_backend import Accelerator
        acc = Accelerator("T")
        i = acc.add_instruction("mv", [], [])
        i.add_semantics("""
        ENTRY mv {
            %In1 = bf16[64] parameter(0);
            ROOT %Out0 = bf16[64] copy(%In1);
        }
        """)
    ''')
    instr = spec["acc"].instructions[0]
    text = instr.semantics
    offset = text.index("copy")
    span = instr.semantics_site.arg("text").text_span(offset, offset + 4)
    assert at(span) == position(tmp_path, "copy")
    assert (span.end_line, span.end_column) == (span.line, span.column + 4)


def test_escapes_and_implicit_concatenation_keep_columns_exact(tmp_path):
    spec = run_spec(tmp_path, r'''
        from act_backend import Accelerator
        acc = Accelerator("T")
        i = acc.add_instruction("mv", [], [])
        i.add_semantics("ENTRY mv {\n\t%In1 = u8[1] parameter(0);\n"
                        "  ROOT %Out0 = u8[1] copy(%In1); }")
    ''')
    instr = spec["acc"].instructions[0]
    text = instr.semantics
    site = instr.semantics_site.arg("text")
    first = text.index("%In1")
    assert at(site.text_span(first, first + 4)) == position(tmp_path, "%In1")
    root = text.index("ROOT")
    assert at(site.text_span(root, root + 4)) == position(tmp_path, "ROOT")


def test_built_strings_fall_back_to_the_argument(tmp_path):
    spec = run_spec(tmp_path, '''
        from act_backend import Accelerator
        TEMPLATE = "ENTRY {name} {{ ROOT %x = u8[1] parameter(0); }}"
        acc = Accelerator("T")
        i = acc.add_instruction("mv", [], [])
        i.add_semantics(TEMPLATE.format(name="mv"))
    ''')
    site = spec["acc"].instructions[0].semantics_site.arg("text")
    assert site.text is None
    assert at(site.text_span(3, 9)) == position(tmp_path, "TEMPLATE.format")


def test_calls_inside_loops_point_at_the_loop_body(tmp_path):
    spec = run_spec(tmp_path, """
        from act_backend import Accelerator
        acc = Accelerator("T")
        for name in ("a", "b"):
            acc.add_instruction(name, [], [])
    """)
    spans = {at(i.span) for i in spec["acc"].instructions}
    assert spans == {position(tmp_path, "acc.add_instruction")}


def test_wrappers_around_the_api_are_skipped(tmp_path, monkeypatch):
    # A tool that records accelerators wraps __init__; the span stays on the user's line.
    original = SpecAccelerator.__init__

    def recording_init(acc, *args, **kwargs):
        original(acc, *args, **kwargs)

    monkeypatch.setattr(SpecAccelerator, "__init__", recording_init)
    spec = run_spec(tmp_path, """
        from act_backend import Accelerator

        acc = Accelerator("T")
    """)
    acc = spec["acc"]
    assert at(acc.span) == position(tmp_path, 'Accelerator("T")')
    assert acc.base_dir == str(tmp_path)


def test_text_an_editor_registered_in_linecache_is_what_is_read(tmp_path):
    import linecache

    path = str(tmp_path / "unsaved.py")
    text = 'from act_backend import Accelerator\n\n\nacc = Accelerator("T")\n'
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    try:
        scope: dict = {}
        exec(compile(text, path, "exec"), scope)
    finally:
        linecache.cache.pop(path, None)
    assert at(scope["acc"].span) == (4, 7)
    assert at(scope["acc"].arg_spans["name"]) == (4, 19)


LOADED_SPEC = """
from act_backend import Accelerator, generate_backend, generate_oracle

acc = Accelerator("Tiny")
acc.add_data_model("d1", [8], [4], "bf16")
generate_oracle(acc)
generate_backend(acc)
"""


def test_load_spec_returns_the_accelerator_without_generating(tmp_path):
    from act_backend.spec.load import load_spec

    path = tmp_path / "tiny.py"
    path.write_text(LOADED_SPEC, encoding="utf-8")
    generators = ("generate_oracle", "generate_backend")
    before = {name: vars(act_backend).get(name) for name in generators}
    acc = load_spec(path)
    assert (acc.name, [m.name for m in acc.data_models]) == ("Tiny", ["d1"])
    assert acc.base_dir == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.py"]
    # The generators are put back as they were (lazy attributes, unless set), not stand-ins.
    assert {name: vars(act_backend).get(name) for name in generators} == before


def test_specs_may_call_the_generators_as_methods(tmp_path, monkeypatch):
    from act_backend.spec.load import load_spec

    path = tmp_path / "tiny.py"
    path.write_text(LOADED_SPEC.replace("generate_oracle(acc)", "acc.generate_oracle()")
                    .replace("generate_backend(acc)", "acc.generate_backend()"), encoding="utf-8")
    acc = load_spec(path)  # held back as the functions are
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.py"]
    calls = []
    monkeypatch.setattr(act_backend, "generate_oracle", lambda *a: calls.append(("oracle", a)))
    monkeypatch.setattr(act_backend, "generate_backend", lambda *a: calls.append(("backend", a)))
    acc.generate_oracle()
    acc.generate_backend(cost="model.o")
    assert calls == [("oracle", (acc,)), ("backend", (acc, "model.o"))]


@pytest.mark.parametrize(("source", "found"), [
    ("x = 1\n", 0),
    ("from act_backend import Accelerator\na = Accelerator('A')\nb = Accelerator('B')\n", 2),
], ids=["none", "two"])
def test_load_spec_wants_exactly_one_accelerator(tmp_path, source, found):
    from act_backend.spec.load import load_spec

    path = tmp_path / "spec.py"
    path.write_text(source, encoding="utf-8")
    with pytest.raises(ValueError, match=f"spec.py: expected a spec building one Accelerator, "
                                         f"found {found}"):
        load_spec(path)
