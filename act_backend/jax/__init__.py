"""JAX in one call: from a JAX function to a kernel simulated on an accelerator.

``k = act_backend.jax.compile(fn, *example_args, backend=...)`` lowers ``fn`` with JAX,
compiles its HLO with the accelerator's generated backend and returns a kernel that runs on
the accelerator's oracle (``k(*arrays)``); ``@act_backend.jax.jit(backend=...)`` is the
decorator form; ``act_backend.jax.check(fn, *args, backend=...)`` compares the accelerator
with JAX on the CPU, in ulps.

The modules follow JAX's own split between tracing and execution: ``lowering`` (tracing and
HLO text, StableHLO conversion), ``source_map`` (HLO metadata back to source lines),
``target`` (which backend and oracle), ``compiler`` and ``cache`` (running the backend,
keeping its kernels), ``execution`` and ``kernel`` (the oracle, the compiled kernel),
``check`` (comparison with JAX).
"""

from act_backend.jax.api import compile, jit
from act_backend.jax.cache import cache_dir
from act_backend.jax.check import CheckReport, ResultDifference, check
from act_backend.jax.errors import CompileError
from act_backend.jax.kernel import Assembly, CompiledKernel
from act_backend.jax.lowering import hlo_text, lower
from act_backend.jax.source_map import SourceLocation
from act_backend.jax.target import Target, resolve

__all__ = [
    "Assembly",
    "CheckReport",
    "CompileError",
    "CompiledKernel",
    "ResultDifference",
    "SourceLocation",
    "Target",
    "cache_dir",
    "check",
    "compile",
    "hlo_text",
    "jit",
    "lower",
    "resolve",
]
