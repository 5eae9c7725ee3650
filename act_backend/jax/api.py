"""The one-call entry points: ``compile`` (a JAX function to a kernel simulated on the
accelerator) and ``jit`` (the same as a decorator, compiling on first call per argument
shapes and dtypes)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from act_backend.jax.compiler import compile_program
from act_backend.jax.kernel import CompiledKernel
from act_backend.jax.lowering import program_of
from act_backend.jax.target import Target, resolve


def compile(fn: Any, *example_args: Any, backend: Any, time_limit: float | None = None,
            regenerate: bool = False) -> CompiledKernel:
    """Compiles ``fn`` for an accelerator and returns the kernel.

    ``fn`` is a JAX function (lowered with ``jax.jit(fn).lower(*example_args)``; the arguments
    may be arrays or ``jax.ShapeDtypeStruct``), a ``jax.stages.Lowered``, or kernel text, HLO
    or StableHLO. ``backend`` is an ``Accelerator``, a spec file or a built
    ``backends/<name>``; an Accelerator or spec is generated on first use (``regenerate``
    forces it). ``time_limit`` (seconds) is the backend's ``--time-limit`` safety net.
    Kernels are cached by HLO text and backend (see ``act_backend.jax.cache``).

    Raises ``CompileError`` (a ``ValueError``) when the backend refuses the kernel.
    """
    target = resolve(backend, regenerate=regenerate)
    program = program_of(fn, *example_args)
    entry, hit = compile_program(program, target, time_limit=time_limit)
    return CompiledKernel(program, target, entry, hit)


def jit(fn: Callable[..., Any] | None = None, *, backend: Any,
        time_limit: float | None = None) -> Any:
    """``@jit(backend=...)``: ``fn`` run on the accelerator, compiled on the first call for
    each structure, shapes and dtypes of its arguments. The backend is resolved (and
    generated, for a spec) on the first call. ``f.compiled(*args)`` returns the kernel."""
    if fn is None:
        return functools.partial(jit, backend=backend, time_limit=time_limit)
    return _Jitted(fn, backend, time_limit)


class _Jitted:
    def __init__(self, fn: Callable[..., Any], backend: Any, time_limit: float | None):
        functools.update_wrapper(self, fn)
        self._fn = fn
        self._backend = backend
        self._time_limit = time_limit
        self._target: Target | None = None
        self._kernels: dict[Any, CompiledKernel] = {}

    def compiled(self, *args: Any) -> CompiledKernel:
        """The kernel for arguments like ``args``, compiled on first use."""
        leaves, tree = jax.tree_util.tree_flatten(args)
        signature = (tree, tuple(_signature(leaf) for leaf in leaves))
        kernel = self._kernels.get(signature)
        if kernel is None:
            if self._target is None:
                self._target = resolve(self._backend)
            kernel = compile(self._fn, *args, backend=self._target, time_limit=self._time_limit)
            self._kernels[signature] = kernel
        return kernel

    def __call__(self, *args: Any) -> Any:
        return self.compiled(*args)(*args)


def _signature(leaf: Any) -> tuple[tuple[int, ...], str]:
    shape = getattr(leaf, "shape", None)
    dtype = getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        array = jnp.asarray(leaf)
        shape, dtype = array.shape, array.dtype
    return tuple(shape), str(np.dtype(dtype))
