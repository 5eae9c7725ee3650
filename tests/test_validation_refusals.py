"""Refused specs: each row is a small spec, the problem code it must raise, words its message
must contain, and (marked ``#!`` or ``//!`` in the snippet) the line the problem points at.

Every row is written to a file and run as a spec, so that the positions are the ones a user
sees. ``validate`` must raise ``ValueError`` with the message; ``check`` must return the
problem at the marked line; a generator must refuse before writing anything.
"""

from __future__ import annotations

import runpy
import textwrap
from pathlib import Path

import pytest

from act_backend.validation import check, validate

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

PRELUDE = """\
from act_backend.spec import Accelerator

acc = Accelerator("T")
acc.add_data_model("d1", [128], [64], "bf16")
"""

# A valid instruction; rows replace one piece of it.
MOV = '''
i = acc.add_instruction("mov", ["n"], ["src", "dst"])
i.set_inputs([["d1", ["@a.src"], ["@c.n"]]])
i.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])
i.add_semantics("""
ENTRY mov {
    %In1 = bf16[`@c.n`,64] parameter(0);
    ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
}
""")
'''


def mov(**swap: str) -> str:
    """MOV with text replaced (``old=new`` pairs given as ``("old", "new")`` tuples)."""
    text = MOV
    for old, new in swap.values():
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def semantics(body: str, inputs: str = '[["d1", ["@a.src"], ["@c.n"]]]',
              outputs: str = '[["d1", ["@a.dst"], ["@c.n"]]]', comp: str = '["n"]') -> str:
    return (f'i = acc.add_instruction("op", {comp}, ["src", "dst"])\n'
            f"i.set_inputs({inputs})\n"
            f"i.set_outputs({outputs})\n"
            f'i.add_semantics("""\nENTRY op {{\n{textwrap.dedent(body).strip()}\n}}\n""")\n')


ROWS = [
    # -- the accelerator and its data models ----------------------------------------------------
    ("bad-accelerator-name", "cannot name the targets/<name> directory",
     'acc2 = Accelerator("a/b")  #!\n'),
    ("bad-name", "not a Python identifier",
     'acc.add_data_model("2d", [4], [4], "u8")  #!\n'),
    ("keyword-name", "'class' is a Python keyword",
     'acc.add_data_model("class", [4], [4], "u8")  #!\n'),
    ("duplicate-buffer", "already declared (first declared at line 4)",
     'acc.add_data_model("d1", [4], [4], "u8")  #!\n'),
    ("duplicate-buffer", "d0 is the implicit byte-addressed HBM",
     'acc.add_data_model("d0", [4], [4], "u8")  #!\n'),
    ("bad-dims", "access_dims must be a list of positive integers",
     'acc.add_data_model("d2", 128, [4], "u8")  #!\n'),
    ("bad-dims", "a buffer needs at least one access dimension",
     'acc.add_data_model("d2", [], [4], "u8")  #!\n'),
    ("non-positive-dim", "unit_dims[1] is 0",
     'acc.add_data_model("d2", [4],\n                   [4, 0], "u8")  #!\n'),
    ("unknown-dtype", "dtype 'bf8' is not an element type TAIDL knows (accepted: s8",
     'acc.add_data_model("d2", [4], [4],\n                   "bf8")  #!\n'),
    # -- instruction names and attributes ---------------------------------------------------
    ("duplicate-instruction", "an instruction named 'mov' is already declared",
     MOV + 'j = acc.add_instruction("mov", [], [])  #!\n'),
    ("reserved-name", "taken by the oracle's api module",
     'j = acc.add_instruction("_hidden", [], [])  #!\n'),
    ("bad-name", "the instruction name 'load-rm' is not a Python identifier",
     'j = acc.add_instruction("load-rm", [], [])  #!\n'),
    ("keyword-name", "addressing attribute 'from' is a Python keyword",
     'j = acc.add_instruction("ld", [],\n    ["from"])  #!\n'),
    ("duplicate-attribute", "'n' is declared twice in comp_attrs",
     'j = acc.add_instruction("ld",\n    ["n", "n"], [])  #!\n'),
    ("attribute-clash", "'n' is both a computational and an addressing attribute",
     'j = acc.add_instruction("ld", ["n"],\n    ["n"])  #!\n'),
    ("bad-attributes", "comp_attrs must be a list of attribute names",
     'j = acc.add_instruction("ld",\n    "n", [])  #!\n'),
    # -- slices -----------------------------------------------------------------------------
    ("unknown-buffer", "buffer 'd9' is not a data model (known: d0, d1)",
     mov(a=('i.set_inputs([["d1"', 'i.set_inputs([["d9"'),
         b=('["@c.n"]]])\ni.set_outputs', '["@c.n"]]])  #!\ni.set_outputs'))),
    ("slice-arity", "buffer 'd1' has 1 access dimension, so the slice needs 1 start; found 2",
     mov(a=('i.set_inputs([["d1", ["@a.src"]', 'i.set_inputs([["d1", ["@a.src", "0"]'),
         b=('["@c.n"]]])\ni.set_outputs', '["@c.n"]]])  #!\ni.set_outputs'))),
    ("bad-slice", "a slice is [buffer, [start, ...], [size, ...]]",
     mov(a=('i.set_inputs([["d1", ["@a.src"], ["@c.n"]]])',
            'i.set_inputs([["d1", "@a.src", "@c.n"]])  #!'))),
    ("expression-syntax", "ends too early",
     mov(a=('i.set_outputs([["d1", ["@a.dst"]', 'i.set_outputs([["d1", ["@a.dst +"]'),
         b=('["@c.n"]]])\ni.add_semantics', '["@c.n"]]])  #!\ni.add_semantics'))),
    ("undeclared-attribute", "@a.dest is not declared (addressing attributes: src, dst)",
     mov(a=('["@a.dst"]', '["@a.dest"]'),
         b=('["@c.n"]]])\ni.add_semantics', '["@c.n"]]])  #!\ni.add_semantics'))),
    ("start-not-affine", "@a.src * @a.src is not affine in the addressing attributes",
     mov(a=('["@a.src"]', '["@a.src * @a.src"]'),
         b=('["@c.n"]]])\ni.set_outputs', '["@c.n"]]])  #!\ni.set_outputs'))),
    ("size-mentions-address", "mentions the addressing attribute @a.src",
     mov(a=('["@a.src"], ["@c.n"]', '["@a.src"], ["@a.src"]'),
         b=('["@a.src"]]])\ni.set_outputs', '["@a.src"]]])  #!\ni.set_outputs'))),
    ("non-positive-size", "the size 0 is never positive",
     mov(a=('["@a.dst"], ["@c.n"]', '["@a.dst"], [0]'),
         b=('[0]]])\ni.add_semantics', '[0]]])  #!\ni.add_semantics'))),
    ("slice-out-of-range", "never fits in d1, which has 128 units",
     mov(a=('["@a.dst"], ["@c.n"]', '["@a.dst + 100"], ["@c.n + 28"]'),
         b=('28"]]])\ni.add_semantics', '28"]]])  #!\ni.add_semantics'))),
    ("output-count", "2 output slices; an instruction writes exactly one",
     mov(a=('i.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])',
            'i.set_outputs([["d1", ["@a.dst"], ["@c.n"]],\n'
            '               ["d1", ["@a.src"], ["@c.n"]]])  #!'))),
    ("output-count", "no output slice; call set_outputs",
     mov(a=('i.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])\n', ''),
         b=('i = acc.add_instruction("mov", ["n"], ["src", "dst"])',
            'i = acc.add_instruction("mov", ["n"], ["src", "dst"])  #!'))),
    # -- semantics --------------------------------------------------------------------------
    ("bad-semantics", "add_semantics takes the semantics text",
     mov(a=('i.add_semantics("""', 'i.add_semantics(42)  #!\nx = ("""'))),
    ("semantics-syntax", "unexpected",
     mov(a=("ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);",
            "ROOT %Out0 = bf16[`@c.n`,64] copy(%In1)) //!"))),
    ("unknown-operator", "unknown operator 'negate'",
     mov(a=("copy(%In1);", "negate(%In1); //!"))),
    ("unknown-dtype", "unknown element type 'f64'",
     mov(a=("ROOT %Out0 = bf16[`@c.n`,64]", "ROOT %Out0 = f64[`@c.n`,64]"),
         b=("copy(%In1);", "copy(%In1); //!"))),
    ("expression-syntax", "'n' is not an attribute: write @c.n or @a.n",
     mov(a=("%In1 = bf16[`@c.n`,64] parameter(0);", "%In1 = bf16[`n`,64] parameter(0); //!"))),
    ("undefined-value", "operand 0 'In2' is used but not defined (defined so far: In1)",
     mov(a=("copy(%In1);", "copy(%In2); //!"))),
    ("duplicate-value", "'In1' is defined twice",
     semantics("""
        %In1 = bf16[`@c.n`,64] parameter(0);
        %In1 = bf16[`@c.n`,64] copy(%In1); //!
        ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
     """)),
    ("parameter-index", "parameter(1) has no input slice: the instruction has 1 input",
     mov(a=("parameter(0);", "parameter(1); //!"))),
    ("root-count", "exactly one instruction must be marked ROOT",
     mov(a=("ROOT %Out0", "%Out0"), b=("ENTRY mov {", "ENTRY mov { //!"))),
    ("root-not-last", "the ROOT 'a' must be the last instruction",
     semantics("""
        %In1 = bf16[`@c.n`,64] parameter(0);
        ROOT %a = bf16[`@c.n`,64] copy(%In1);
        %Out0 = bf16[`@c.n`,64] copy(%a); //!
     """)),
    ("dot-contracting-mismatch", "lhs contracting dimension 1 has size 64 but rhs "
     "contracting dimension 0 has size 32",
     semantics("""
        %In1 = bf16[64,64] parameter(0);
        %In2 = bf16[32,64] parameter(1);
        ROOT %Out0 = bf16[64,64] dot(%In1, %In2),
            lhs_contracting_dims={1}, rhs_contracting_dims={0}; //!
     """, inputs='[["d1", ["@a.src"], ["64"]], ["d1", ["@a.src"], ["32"]]]',
        outputs='[["d1", ["@a.dst"], ["64"]]]', comp="[]")),
    ("operand-count", "takes 2 operands, found 1",
     mov(a=("copy(%In1);", "add(%In1); //!"))),
    ("declared-type-mismatch", "declared shape [@c.n, 32] but the operator produces "
     "[@c.n, 64]",
     mov(a=("ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);",
            "ROOT %Out0 = bf16[`@c.n`,32] copy(%In1); //!"))),
    ("bad-attribute", "dimensions={0, 0} is not a permutation of 0..1",
     mov(a=("copy(%In1);", "transpose(%In1), dimensions={0,0}; //!"),
         b=("ROOT %Out0 = bf16[`@c.n`,64]", "ROOT %Out0 = bf16[64,`@c.n`]"))),
    ("unknown-attribute", "copy 'Out0' takes no attributes; found dimensions=",
     mov(a=("copy(%In1);", "copy(%In1), dimensions={0}; //!"))),
    ("missing-attribute", "transpose 'Out0' needs dimensions=",
     mov(a=("copy(%In1);", "transpose(%In1); //!"))),
    ("bad-attribute", "to_apply=avg is not a reducer",
     semantics("""
        %In1 = bf16[`@c.n`,64] parameter(0);
        %z = bf16[] constant(0);
        ROOT %Out0 = bf16[`@c.n`] reduce(%In1, %z), dimensions={1}, to_apply=avg; //!
     """, outputs='[["d0", ["@a.dst"], ["@c.n * 2"]]]')),
    ("bad-attribute", "to_apply=add_f32 reduces f32, but the reduce is bf16",
     semantics("""
        %In1 = bf16[`@c.n`,64] parameter(0);
        ROOT %Out0 = bf16[`@c.n`] reduce(%In1), dimensions={1}, to_apply=%add_f32; //!
     """, outputs='[["d0", ["@a.dst"], ["@c.n * 2"]]]')),
    ("address-in-semantics", "@a.src is an addressing attribute",
     mov(a=("%In1 = bf16[`@c.n`,64] parameter(0);",
            "%In1 = bf16[`@c.n + @a.src`,64] parameter(0); //!"))),
    ("non-positive-dim", "dimension 0 of the type bf16[0,64] is 0",
     mov(a=("%In1 = bf16[`@c.n`,64] parameter(0);", "%In1 = bf16[0,64] parameter(0); //!"))),
    ("undeclared-attribute", "@c.m is not declared (computational attributes: n)",
     mov(a=("ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);",
            "ROOT %Out0 = bf16[`@c.m`,64] copy(%In1); //!"))),
    ("parameter-type-mismatch", "parameter 'In1' has element type f32 but input 0 is in d1, "
     "which holds bf16",
     semantics("""
        %In1 = f32[`@c.n`,64] parameter(0); //!
        %a = bf16[`@c.n`,64] convert(%In1);
        ROOT %Out0 = bf16[`@c.n`,64] copy(%a);
     """)),
    ("parameter-type-mismatch", "the counts can never be equal",
     semantics("""
        %In1 = u8[`@c.n * 127`] parameter(0); //!
        ROOT %Out0 = u8[`@c.n * 127`] copy(%In1);
     """, inputs='[["d0", ["@a.src"], ["@c.n * 128"]]]',
        outputs='[["d0", ["@a.dst"], ["@c.n * 127"]]]')),
    ("root-type-mismatch", "ROOT 'Out0' has type bf16[65,64]",
     semantics("""
        %In1 = bf16[64,64] parameter(0);
        %z = bf16[1,64] constant(0);
        ROOT %Out0 = bf16[65,64] concatenate(%In1, %z), dimensions={0}; //!
     """, inputs='[["d1", ["@a.src"], ["64"]]]', outputs='[["d1", ["@a.dst"], ["64"]]]',
        comp="[]")),
    ("root-shape-mismatch", "ROOT 'Out0' has type bf16[64,32] but output 0, d1 [@a.dst, "
     "@a.dst + 32), holds bf16[32,64]",
     semantics("""
        %In1 = bf16[32,64] parameter(0);
        ROOT %Out0 = bf16[64,32] transpose(%In1), dimensions={1,0}; //!
     """, inputs='[["d1", ["@a.src"], ["32"]]]', outputs='[["d1", ["@a.dst"], ["32"]]]',
        comp="[]")),
    ("parameter-shape-mismatch", "parameter 'In1' has type bf16[64,32] but input 0",
     semantics("""
        %In1 = bf16[64,32] parameter(0); //!
        ROOT %Out0 = bf16[32,64] transpose(%In1), dimensions={1,0};
     """, inputs='[["d1", ["@a.src"], ["32"]]]', outputs='[["d1", ["@a.dst"], ["32"]]]',
        comp="[]")),
    ("root-shape-mismatch", "accepted: bf16[@c.n,64], or such as bf16[1,@c.n,64]",
     mov(a=("ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);",
            "ROOT %Out0 = bf16[`@c.n * 2`,32] reshape(%In1); //!"))),
]


def _ids():
    return [f"{i:02d}-{code}" for i, (code, _, _) in enumerate(ROWS)]


def build(tmp_path, snippet: str):
    """Writes PRELUDE + snippet as a spec file, runs it, returns (accelerator, path, line of
    the marker)."""
    source = PRELUDE + snippet
    path = tmp_path / "spec.py"
    path.write_text(source, encoding="utf-8")
    marked = [n for n, line in enumerate(source.splitlines(), 1)
              if line.rstrip().endswith(("#!", "//!"))]
    assert len(marked) == 1, f"the row must mark exactly one line, found {marked}"
    spec = runpy.run_path(str(path))
    return spec["acc"] if "acc2" not in spec else spec["acc2"], path, marked[0]


def test_there_are_at_least_thirty_refusals():
    assert len(ROWS) >= 30
    assert len({code for code, _, _ in ROWS}) >= 30


@pytest.mark.parametrize("code, words, snippet", ROWS, ids=_ids())
def test_refused_with_code_message_and_place(tmp_path, code, words, snippet):
    acc, path, line = build(tmp_path, snippet)

    with pytest.raises(ValueError) as refusal:
        validate(acc)
    assert words in str(refusal.value)
    assert f"accelerator '{acc.name}'" in str(refusal.value)

    found = [p for p in check(acc) if p.code == code and words in p.message]
    assert found, f"no {code} problem with {words!r}; got {check(acc)}"
    problem = found[0]
    assert problem.severity == "error"
    assert problem.span is not None and problem.span.file == str(path)
    assert problem.span.line == line, (problem, line)


def row(code: str) -> tuple[str, str, str]:
    """The first row refused with ``code``."""
    return next(r for r in ROWS if r[0] == code)


@pytest.mark.parametrize("code", ["bad-accelerator-name", "unknown-buffer", "semantics-syntax",
                                  "dot-contracting-mismatch", "parameter-type-mismatch"])
def test_the_oracle_generator_refuses_before_writing(tmp_path, code):
    from act_backend.oracle import generate_oracle

    _, words, snippet = row(code)
    acc, _, _ = build(tmp_path, snippet)
    out = tmp_path / "out"
    out.mkdir()
    acc.base_dir = str(out)
    with pytest.raises(ValueError) as refusal:
        generate_oracle(acc)
    assert words in str(refusal.value)
    assert list(out.iterdir()) == []


def test_the_isa_table_refuses_what_validate_refuses(tmp_path):
    from act_backend.table import write_isa_table

    acc, _, _ = build(tmp_path, row("unknown-buffer")[2])
    target = tmp_path / "isa.json"
    with pytest.raises(ValueError, match="buffer 'd9' is not a data model"):
        write_isa_table(acc, target)
    assert not target.exists()


def test_every_error_is_in_the_refusal_one_per_line(tmp_path):
    acc, _, _ = build(tmp_path, 'acc.add_data_model("d2", [0], [4], "bf8")  #!\n')
    errors = [p for p in check(acc) if p.severity == "error"]
    assert len(errors) == 2
    with pytest.raises(ValueError) as refusal:
        validate(acc)
    # Each line is file:line:col: message, the place the error was written.
    assert str(refusal.value) == "\n".join(
        f"{p.span.file}:{p.span.line}:{p.span.column}: {p.message}" for p in errors)


def test_an_instruction_on_a_data_model_with_an_unknown_dtype_reports_the_dtype(tmp_path):
    # The instructions reading d2 have no slice type; the problem is d2's dtype, said once.
    import act_backend

    source = (EXAMPLES / "QKV" / "QKV.py").read_text()
    spec = tmp_path / "QKV.py"
    spec.write_text(source.replace('add_data_model("d2", [64], [64], "bf16")',
                                   'add_data_model("d2", [64], [64], "bf17")'))
    saved = act_backend.generate_oracle, act_backend.generate_backend
    act_backend.generate_oracle = act_backend.generate_backend = lambda acc, **_: None
    try:
        accelerator = runpy.run_path(str(spec))["qkv"]
    finally:
        act_backend.generate_oracle, act_backend.generate_backend = saved
    codes = [p.code for p in check(accelerator) if p.severity == "error"]
    assert codes == ["unknown-dtype"]


def test_an_input_that_does_not_reach_the_root_is_refused_naming_it(tmp_path):
    # Selection could never bind such an input: the backend could not use the table.
    spec = tmp_path / "spec.py"
    spec.write_text(PRELUDE + textwrap.dedent('''
        i = acc.add_instruction("first", [], ["a", "b", "o"])
        i.set_inputs([["d1", ["@a.a"], ["64"]], ["d1", ["@a.b"], ["64"]]])
        i.set_outputs([["d1", ["@a.o"], ["64"]]])
        i.add_semantics("""
        ENTRY first {
            %In1 = bf16[64,64] parameter(0);
            %In2 = bf16[64,64] parameter(1);
            ROOT %Out0 = bf16[64,64] copy(%In1);
        }
        """)
    '''))
    accelerator = runpy.run_path(str(spec))["acc"]
    problems = check(accelerator)
    assert [p.code for p in problems] == ["unused-input"]
    [error] = problems
    assert error.severity == "error"
    assert "input 1 ('In2') does not reach the ROOT value" in error.message
    assert error.span is not None and error.span.line == spec.read_text().splitlines().index(
        '    %In2 = bf16[64,64] parameter(1);') + 1
    with pytest.raises(ValueError, match="does not reach the ROOT value"):
        validate(accelerator)


def test_an_attribute_nothing_determines_is_a_warning_saying_the_backend_sets_it_to_0(tmp_path):
    # A computational attribute in no shape is free: selection gives it 0. An addressing
    # attribute in no slice start is free too: allocation pins it to 0 (alloc.rs).
    spec = tmp_path / "spec.py"
    spec.write_text(PRELUDE + textwrap.dedent('''
        i = acc.add_instruction("scaled", ["n", "scale"], ["src", "dst", "spare"])
        i.set_inputs([["d1", ["@a.src"], ["@c.n"]]])
        i.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])
        i.add_semantics("""
        ENTRY scaled {
            %In1 = bf16[`@c.n`,64] parameter(0);
            ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
        }
        """)
    '''))
    accelerator = runpy.run_path(str(spec))["acc"]
    problems = check(accelerator)
    assert [(p.code, p.severity) for p in problems] == [("unused-attribute", "warning")] * 2
    scale, spare = problems
    assert scale.message.endswith("the computational attribute 'scale' is used by no slice and "
                                  "no shape, so nothing determines it; the backend sets it to 0")
    assert spare.message.endswith("the addressing attribute 'spare' is used by no slice and no "
                                  "shape, so nothing determines it; allocation sets it to 0")
    line = spec.read_text().splitlines().index(
        'i = acc.add_instruction("scaled", ["n", "scale"], ["src", "dst", "spare"])') + 1
    assert scale.span.line == spare.span.line == line
    assert validate(accelerator) == problems  # warnings: nothing is refused


def test_a_value_may_differ_from_its_slice_by_dimensions_of_size_1(tmp_path):
    # d1 holds rows of bf16[64]: a slice of one row is bf16[1,64], read as bf16[64] and
    # written back as bf16[1,1,64]; and n rows are bf16[n,64], written as bf16[n,1,64].
    spec = tmp_path / "spec.py"
    spec.write_text(PRELUDE + textwrap.dedent('''
        i = acc.add_instruction("row", [], ["src", "dst"])
        i.set_inputs([["d1", ["@a.src"], ["1"]]])
        i.set_outputs([["d1", ["@a.dst"], ["1"]]])
        i.add_semantics("""
        ENTRY row {
            %In1 = bf16[64] parameter(0);
            ROOT %Out0 = bf16[1,1,64] reshape(%In1);
        }
        """)
        j = acc.add_instruction("rows", ["n"], ["src", "dst"])
        j.set_inputs([["d1", ["@a.src"], ["@c.n"]]])
        j.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])
        j.add_semantics("""
        ENTRY rows {
            %In1 = bf16[`@c.n`,64] parameter(0);
            ROOT %Out0 = bf16[`@c.n`,1,64] reshape(%In1);
        }
        """)
    '''))
    assert check(runpy.run_path(str(spec))["acc"]) == []


def test_a_computational_attribute_only_a_slice_size_mentions_is_refused(tmp_path):
    # Selection reads attribute values off the semantics; a size it cannot know would make
    # every match of the instruction undetermined.
    spec = tmp_path / "spec.py"
    spec.write_text(PRELUDE + textwrap.dedent('''
        i = acc.add_instruction("rows", ["n", "m"], ["src", "dst"])
        i.set_inputs([["d1", ["@a.src"], ["@c.m"]]])
        i.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])
        i.add_semantics("""
        ENTRY rows {
            %In1 = bf16[`@c.n`,64] parameter(0);
            ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
        }
        """)
    '''))
    accelerator = runpy.run_path(str(spec))["acc"]
    errors = [p for p in check(accelerator) if p.severity == "error"]
    assert [p.code for p in errors] == ["undetermined-attribute"]
    assert "attribute 'm' sizes a slice but no shape or attribute of the semantics" \
        in errors[0].message


def test_a_computational_attribute_only_a_slice_start_mentions_is_free(tmp_path):
    spec = tmp_path / "spec.py"
    spec.write_text(PRELUDE + textwrap.dedent('''
        i = acc.add_instruction("rows", ["n", "k"], ["src", "dst"])
        i.set_inputs([["d1", ["@a.src + @c.k"], ["@c.n"]]])
        i.set_outputs([["d1", ["@a.dst"], ["@c.n"]]])
        i.add_semantics("""
        ENTRY rows {
            %In1 = bf16[`@c.n`,64] parameter(0);
            ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);
        }
        """)
    '''))
    accelerator = runpy.run_path(str(spec))["acc"]
    [warning] = check(accelerator)
    assert (warning.code, warning.severity) == ("unused-attribute", "warning")
    assert warning.message.endswith("the computational attribute 'k' appears only in slice "
                                    "starts and in no shape or attribute of the semantics, so "
                                    "selection does not determine it; the backend sets it to 0")
