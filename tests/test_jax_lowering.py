"""act_backend.jax without a backend: lowering a function to the HLO a backend compiles,
StableHLO converted by XLA's own converter, HLO metadata read back to source lines, and a
backend's refusal turned into an error at the user's line."""

from __future__ import annotations

import inspect

import jax
import jax.numpy as jnp
import pytest

from act_backend.jax import CompileError, hlo_text
from act_backend.jax.compiler import refusal
from act_backend.jax.lowering import is_stablehlo, program_of
from act_backend.jax.source_map import instruction_at, line_of, locations
from act_backend.kernel import parse_hlo

X = jax.ShapeDtypeStruct((64, 64), jnp.bfloat16)


def softmax_then_tanh(x):
    e = jnp.exp(x)
    p = e / jnp.sum(e, axis=1, keepdims=True)
    return jnp.tanh(p)


def first_line(fn) -> int:
    return inspect.getsourcelines(fn)[1]


EXP_LINE = first_line(softmax_then_tanh) + 1
TANH_LINE = first_line(softmax_then_tanh) + 3


def instructions(text: str) -> list[tuple[str, str]]:
    """(opcode, type) of the entry computation's instructions, in order."""
    module = parse_hlo(text)
    return [(i.opcode, str(i.type)) for i in module.entry.instructions]


# -- HLO text -------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("HloModule m\n\nENTRY e {\n}\n", False),
    ("module @jit_f attributes {} {\n}\n", True),
    ("// a comment\n\nmodule {\n}\n", True),
    ("#loc = loc(unknown)\nmodule @m {\n}\n", True),
    ("", False),
])
def test_stablehlo_is_told_from_hlo_by_its_first_line(text, expected):
    assert is_stablehlo(text) is expected


def test_a_lowered_function_gives_its_hlo():
    lowered = jax.jit(softmax_then_tanh).lower(X)
    assert hlo_text(lowered) == lowered.as_text(dialect="hlo")


def test_hlo_text_is_returned_as_it_is():
    text = jax.jit(softmax_then_tanh).lower(X).as_text(dialect="hlo")
    assert hlo_text(text) is text


def test_stablehlo_converts_to_the_hlo_jax_prints():
    """The converter is XLA's (pinned with jax 0.10.2): its HLO has the instructions JAX's own
    HLO printing has, in order, and parses with the kernel front end."""
    lowered = jax.jit(softmax_then_tanh).lower(X)
    stablehlo = lowered.as_text()
    assert is_stablehlo(stablehlo)
    converted = hlo_text(stablehlo)
    assert converted.startswith("HloModule jit_softmax_then_tanh")
    assert instructions(converted) == instructions(lowered.as_text(dialect="hlo"))


def test_a_stablehlo_module_that_does_not_parse_is_a_value_error():
    with pytest.raises(ValueError, match="cannot convert the StableHLO module"):
        hlo_text("module @m {\n  func.func @main( {\n}\n")


def test_hlo_text_refuses_other_things():
    with pytest.raises(TypeError, match="expected HLO text, StableHLO text"):
        hlo_text(42)


def test_unused_arguments_stay_kernel_inputs():
    program = program_of(lambda a, b: jnp.exp(a), X, X)
    parameters = [i for i in parse_hlo(program.hlo).entry.instructions
                  if i.opcode == "parameter"]
    assert len(parameters) == 2


def test_the_compiled_hlo_has_no_debug_information_the_debug_hlo_has():
    program = program_of(softmax_then_tanh, X)
    assert "metadata=" not in program.hlo and "stack_frame_id" in program.debug_hlo
    assert program.name == "softmax_then_tanh"


# -- source locations -----------------------------------------------------------------------

def located(text: str, opcode: str) -> tuple[str, int]:
    name = next(i.name for i in parse_hlo(text).entry.instructions if i.opcode == opcode)
    where = locations(text)[name]
    return where.file, where.line


@pytest.mark.parametrize("form", ["stack frames", "stablehlo with locations"])
@pytest.mark.parametrize(("opcode", "line"), [("exponential", EXP_LINE), ("tanh", TANH_LINE)])
def test_instructions_are_located_at_the_line_that_made_them(form, opcode, line):
    lowered = jax.jit(softmax_then_tanh).lower(X)
    text = (lowered.as_text(dialect="hlo", debug_info=True) if form == "stack frames"
            else hlo_text(lowered.as_text(debug_info=True)))
    assert located(text, opcode) == (__file__, line)


def test_stablehlo_without_locations_points_into_its_own_text():
    stablehlo = jax.jit(softmax_then_tanh).lower(X).as_text()
    file, line = located(hlo_text(stablehlo), "tanh")
    assert file == "<StableHLO>"
    assert "stablehlo.tanh" in stablehlo.splitlines()[line - 1]


def test_parameters_and_hlo_without_metadata_have_no_location():
    text = jax.jit(softmax_then_tanh).lower(X).as_text(dialect="hlo", debug_info=True)
    parameter = next(i.name for i in parse_hlo(text).entry.instructions
                     if i.opcode == "parameter")
    assert parameter not in locations(text)
    assert locations(jax.jit(softmax_then_tanh).lower(X).as_text(dialect="hlo")) == {}


def test_instruction_at_names_what_a_line_defines():
    text = "HloModule m\n\nENTRY e {\n  %p = f32[2] parameter(0)\n  ROOT t.1 = f32[2] tanh(p)\n}\n"
    assert [instruction_at(text, n) for n in range(1, 8)] == [
        None, None, None, "p", "t.1", None, None]
    assert line_of(text, "t.1") == "ROOT t.1 = f32[2] tanh(p)"


# -- refusals -------------------------------------------------------------------------------

def hlo_line_of(text: str, opcode: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), 1) if f" {opcode}(" in line)


def test_a_refusal_names_the_source_line_then_the_backend_message_and_the_hlo_line():
    program = program_of(softmax_then_tanh, X)
    line = hlo_line_of(program.hlo, "tanh")
    message = "no instruction of QKV computes `tanh`"
    error = refusal(program, "QKV", f"error: kernel.hlo:{line}: {message}\n", 1)
    assert isinstance(error, CompileError) and isinstance(error, ValueError)
    text = str(error)
    assert text.startswith(f"{__file__}:{TANH_LINE}: ")
    assert message in text
    assert program.hlo.splitlines()[line - 1].strip() in text
    assert (error.source.line, error.hlo_line) == (TANH_LINE, line)


def test_a_refusal_with_a_column_is_read_too():
    program = program_of(softmax_then_tanh, X)
    line = hlo_line_of(program.hlo, "exponential")
    error = refusal(program, "QKV", f"error: kernel.hlo:{line}:7: bad\n", 1)
    assert str(error).startswith(f"{__file__}:{EXP_LINE}: ")


def test_a_refusal_at_no_instruction_keeps_the_hlo_position():
    program = program_of(softmax_then_tanh, X)
    error = refusal(program, "QKV", "error: kernel.hlo:1: the module is odd\n", 1)
    assert error.source is None
    assert str(error).startswith("the QKV backend refused the kernel: the module is odd")
    assert "HLO line 1: " in str(error)


def test_a_refusal_without_a_position_keeps_the_whole_message():
    program = program_of(softmax_then_tanh, X)
    error = refusal(program, "QKV", "error: time limit reached before any candidate\n", 1)
    assert (error.source, error.hlo_line) == (None, None)
    assert "time limit reached before any candidate" in str(error)


def clipped(x):
    y = x * 2
    return jnp.clip(y, 0, 127)


CLIP_LINE = first_line(clipped) + 2


def test_inside_an_applied_computation_the_applying_line_is_the_location():
    """JAX prints jnp.clip as a call of a computation whose instructions carry no location:
    they are located at the line that applies it."""
    x32 = jax.ShapeDtypeStruct((16, 16), jnp.int32)
    text = jax.jit(clipped).lower(x32).as_text(dialect="hlo", debug_info=True)
    module = parse_hlo(text)
    callee = next(c for c in module.computations if not c.is_entry
                  and any(i.opcode == "maximum" for i in c.instructions))
    maximum = next(i.name for i in callee.instructions if i.opcode == "maximum")
    where = locations(text)[maximum]
    assert (where.file, where.line) == (__file__, CLIP_LINE)


def test_a_refusal_inside_a_call_names_the_line_that_applies_it():
    program = program_of(clipped, jax.ShapeDtypeStruct((16, 16), jnp.int32))
    line = hlo_line_of(program.hlo, "maximum")
    error = refusal(program, "Gemmini", f"error: kernel.hlo:{line}: no instruction computes "
                    "`maximum`\n", 1)
    assert str(error).startswith(f"{__file__}:{CLIP_LINE}: ")
