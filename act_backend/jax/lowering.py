"""Tracing and lowering: from a JAX function, a ``Lowered`` or kernel text to the HLO text a
backend compiles.

``lower(fn, *args)`` traces with ``jax.jit`` (every argument kept, used or not, so the kernel's
inputs are the function's arguments in order); ``program_of(source, *args)`` gives a
``Program``: the HLO the backend compiles (no debug information, so the text and the cache key
do not change when unrelated lines of the user's file move), the same HLO with its source
locations (to map a refusal back to the user's code), and how results are returned.
``hlo_text(text_or_lowered)`` accepts HLO text, StableHLO text (what ``Lowered.as_text()``
prints by default) or a ``Lowered``, and returns HLO text, converting StableHLO with XLA's own
converter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax


@dataclass(frozen=True)
class Program:
    """One kernel to compile.

    ``hlo`` is compiled and hashed; ``debug_hlo`` carries the source locations of the same
    instructions (instruction names agree between the two); ``out_tree`` rebuilds the
    function's results from the kernel's outputs (``None`` for kernel text: one output is
    returned as an array, several as a tuple).
    """

    name: str
    hlo: str
    debug_hlo: str
    out_tree: Any = None


def lower(fn: Callable[..., Any], *args: Any) -> jax.stages.Lowered:
    """``jax.jit(fn).lower(*args)``, keeping unused arguments as kernel inputs."""
    return jax.jit(fn, keep_unused=True).lower(*args)


def program_of(source: Any, *args: Any) -> Program:
    """The program of a function (traced with ``args``), a ``Lowered``, or kernel text."""
    if isinstance(source, str):
        if args:
            raise TypeError("kernel text takes no example arguments (its parameters have "
                            f"types already); got {len(args)}")
        text = hlo_text(source)
        return Program(_module_name(text), text, text)
    if isinstance(source, jax.stages.Lowered):
        if args:
            raise TypeError(f"a Lowered takes no example arguments; got {len(args)}")
        lowered = source
        name = "kernel"
    elif callable(source):
        lowered = lower(source, *args)
        name = getattr(source, "__name__", "kernel")
    else:
        raise TypeError("expected a function, a jax.stages.Lowered or kernel text (HLO or "
                        f"StableHLO), got {type(source).__name__}")
    hlo = lowered.as_text(dialect="hlo")
    return Program(name if name != "kernel" else _module_name(hlo), hlo,
                   lowered.as_text(dialect="hlo", debug_info=True), lowered.out_tree)


def hlo_text(text_or_lowered: Any, *, debug_info: bool = False) -> str:
    """HLO text for a ``Lowered``, HLO text (returned as it is) or StableHLO text.

    StableHLO (MLIR, ``module @...``) is converted in process by XLA's converter, the one JAX
    itself uses; a ``Lowered`` prints its HLO directly, with source locations when
    ``debug_info``. The converter is reached through jaxlib's internal modules, which may move
    between releases: tests/requirements.txt pins jax, and tests/test_jax_lowering.py holds
    the conversion to what JAX's own HLO printing gives.
    """
    if isinstance(text_or_lowered, jax.stages.Lowered):
        return text_or_lowered.as_text(dialect="hlo", debug_info=debug_info)
    if not isinstance(text_or_lowered, str):
        raise TypeError("expected HLO text, StableHLO text or a jax.stages.Lowered, got "
                        f"{type(text_or_lowered).__name__}")
    text = text_or_lowered
    if is_stablehlo(text):
        return stablehlo_to_hlo(text)
    return text


def is_stablehlo(text: str) -> bool:
    """Whether ``text`` is an MLIR module (StableHLO) rather than HLO text."""
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("//", "#")):
            continue
        return stripped.startswith("module")
    return False


def stablehlo_to_hlo(text: str) -> str:
    """Converts a StableHLO module to HLO text with XLA's converter.

    The HLO keeps each operation's location as ``source_file``/``source_line`` metadata:
    the location JAX recorded when the text was printed with ``debug_info=True``, else the
    operation's line in the StableHLO text (``source_file="-"``).
    """
    from jax._src.lib import _jax, hlo

    try:
        computation = _jax.mlir.mlir_module_to_xla_computation(
            text, use_tuple_args=False, return_tuple=False)
    except Exception as e:  # XLA raises its own error types; say what was being converted.
        raise ValueError(f"cannot convert the StableHLO module to HLO: {e}") from e
    options = hlo.HloPrintOptions.short_parsable()
    options.print_metadata = True
    return computation.as_hlo_module().to_string(options)


def _module_name(hlo: str) -> str:
    for line in hlo.splitlines():
        if line.startswith("HloModule "):
            return line.split()[1].rstrip(",")
    return "kernel"
