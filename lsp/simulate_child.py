"""The child process that simulates a compiled kernel on the oracle and compares it with
the NumPy reference of its HLO.

Started as ``python -m lsp.simulate_child``; reads one JSON request line
(``{"compiled", "oracle_dir", "data_files", "hlo"}``) and writes one result line, like
``lsp.spec.child``. The data files are raw little-endian arrays, one per kernel parameter
in order, each of the parameter's shape and element type.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import os
import sys
from typing import Any

from lsp.spec.child import RESULT_PREFIX


class SimulationError(Exception):
    """A problem with the inputs or the run, reported to the user as is."""


def load_inputs(module: Any, data_files: list[str]) -> list[Any]:
    import numpy as np

    from act_backend.hlo.dtypes import numpy_dtype

    params = module.entry.parameters()
    if len(params) != len(data_files):
        raise SimulationError(
            f"the kernel takes {len(params)} inputs "
            f"({', '.join(p.name for p in params)}) but {len(data_files)} data files were given")
    inputs = []
    for param, path in zip(params, data_files, strict=True):
        dtype = numpy_dtype(param.type.dtype)
        shape = tuple(int(d) for d in param.type.shape)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        with open(path, "rb") as handle:
            raw = handle.read()
        if len(raw) != count * dtype.itemsize:
            raise SimulationError(
                f"{path} holds {len(raw)} bytes but parameter {param.name} "
                f"({param.type}) needs {count * dtype.itemsize}")
        inputs.append(np.frombuffer(raw, dtype=dtype).reshape(shape))
    return inputs


def load_oracle(oracle_dir: str) -> tuple[Any, Any]:
    """The oracle's ``decorator`` and ``api`` modules, imported as a package named after its
    folder, with its parent on ``sys.path`` (how a generated oracle is meant to be used)."""
    oracle_dir = os.path.abspath(oracle_dir)
    sys.path.insert(0, os.path.dirname(oracle_dir))
    package = os.path.basename(oracle_dir)
    try:
        decorator = importlib.import_module(f"{package}.decorator")
        api = importlib.import_module(f"{package}.api")
    except ImportError as exc:
        raise SimulationError(f"{oracle_dir} is not a generated oracle: {exc}") from exc
    return decorator, api


def load_kernel(compiled: str) -> Any:
    """The assembly's outer function: the one top-level function taking (kernel, api)."""
    spec = importlib.util.spec_from_file_location("act_compiled_kernel", compiled)
    if spec is None or spec.loader is None:
        raise SimulationError(f"cannot load {compiled} as Python")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    candidates = [
        value for value in vars(module).values()
        if inspect.isfunction(value) and value.__module__ == module.__name__
        and len(inspect.signature(value).parameters) == 2
    ]
    if len(candidates) != 1:
        raise SimulationError(
            f"{compiled} should define one function taking (kernel, api); found "
            f"{', '.join(c.__name__ for c in candidates) or 'none'}")
    return candidates[0]


def compare(got: Any, want: Any) -> dict[str, Any]:
    import numpy as np

    got64 = np.asarray(got).astype(np.float64)
    want64 = np.asarray(want).astype(np.float64)
    if got64.shape != want64.shape:
        raise SimulationError(f"the oracle produced shape {list(got64.shape)}, the reference "
                              f"{list(want64.shape)}")
    both_nan = np.isnan(got64) & np.isnan(want64)
    difference = np.where(both_nan, 0.0, np.abs(got64 - want64))
    max_diff = float(np.max(difference)) if difference.size else 0.0
    if np.isnan(max_diff):
        max_diff = float("inf")  # NaN on one side only: as far apart as it gets
    return {"max_abs_diff": max_diff,
            "max_abs_reference": float(np.nanmax(np.abs(want64)))
            if want64.size and not np.isnan(want64).all() else 0.0,
            "shape": list(want64.shape)}


def simulate(compiled: str, oracle_dir: str, data_files: list[str], hlo: str) -> dict[str, Any]:
    from act_backend.kernel import parse_hlo
    from act_backend.kernel.reference import evaluate

    with open(hlo, encoding="utf-8") as handle:
        module = parse_hlo(handle.read(), file=hlo)
    inputs = load_inputs(module, data_files)
    decorator, api = load_oracle(oracle_dir)
    decorator.set_simulation_backend("CPU")
    outer = load_kernel(compiled)
    kernel = outer(decorator.kernel, api)
    outputs, run_ms = kernel("fsim")(*inputs)
    got = outputs[0] if isinstance(outputs, (list, tuple)) else outputs
    result = compare(got, evaluate(module, inputs))
    result["run_ms"] = float(run_ms)
    return result


def main() -> int:
    results = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    request = json.loads(sys.stdin.readline())
    try:
        payload: dict[str, Any] = {"result": simulate(
            request["compiled"], request["oracle_dir"], request["data_files"], request["hlo"])}
    except SimulationError as exc:
        payload = {"error": str(exc)}
    except Exception as exc:  # the oracle or the assembly failed: the user needs the why
        payload = {"error": f"{type(exc).__name__}: {exc}"}
    results.write(RESULT_PREFIX + json.dumps(payload) + "\n")
    results.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
