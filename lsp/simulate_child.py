"""The child process that simulates a compiled kernel on the oracle and compares it with
the NumPy reference of its HLO.

Started as ``python -m lsp.simulate_child``; reads one JSON request line
(``{"compiled", "oracle_dir", "data_files", "hlo"}``) and writes one result line, like
``lsp.spec.child``. The data files are raw little-endian arrays, one per kernel parameter
in order, each of the parameter's shape and element type.

The result says how far the oracle's output is from the reference: the largest absolute
difference, the largest difference in ulps of the output's element type (counted as
``act_backend.jax.check`` counts them; the integer difference for integers), where it is, and
heatmaps of the output and of the difference for the editor's simulation view. Values JSON
cannot carry (NaN, infinities) are ``null``: ``max_ulps`` is ``null`` when a NaN meets a
number, which is infinitely many ulps.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import math
import os
import sys
import warnings
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


# A heatmap has at most this many cells a side; larger outputs are shown in blocks.
HEATMAP_CELLS = 128


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def as_matrix(values: Any) -> Any:
    """``values`` as rows and columns: a vector is one row, higher ranks keep their last
    dimension as columns and stack the others as rows."""
    import numpy as np

    array = np.asarray(values)
    if array.ndim == 0:
        return array.reshape(1, 1)
    if array.ndim == 1:
        return array.reshape(1, -1)
    return array.reshape(-1, array.shape[-1])


def heatmap(values: Any, reduce: str) -> dict[str, Any]:
    """A heatmap of ``values`` (as :func:`as_matrix` lays them out), in blocks of cells when a
    side exceeds ``HEATMAP_CELLS``: each block shows the ``"mean"`` or the ``"max"`` of its
    finite cells (``null`` when it has none)."""
    import numpy as np

    matrix = as_matrix(values).astype(np.float64)
    rows, cols = matrix.shape
    block = (max(1, -(-rows // HEATMAP_CELLS)), max(1, -(-cols // HEATMAP_CELLS)))
    out_rows, out_cols = -(-rows // block[0]), -(-cols // block[1])
    padded = np.full((out_rows * block[0], out_cols * block[1]), np.nan)
    finite = np.where(np.isfinite(matrix), matrix, np.nan)
    padded[:rows, :cols] = finite
    blocks = padded.reshape(out_rows, block[0], out_cols, block[1])
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks become NaN: null
        cells = np.nanmean(blocks, axis=(1, 3)) if reduce == "mean" else \
            np.nanmax(blocks, axis=(1, 3))
    shown = cells[np.isfinite(cells)]
    return {
        "rows": out_rows, "cols": out_cols, "shape": [rows, cols], "block": list(block),
        "reduce": reduce,
        "min": float(shown.min()) if shown.size else None,
        "max": float(shown.max()) if shown.size else None,
        "non_finite": int(np.count_nonzero(~np.isfinite(matrix))),
        "values": [[_finite(float(v)) for v in row] for row in cells],
    }


def difference_view(got: Any, want: Any) -> dict[str, Any]:
    """The largest difference in ulps (integer difference for integers), where it is, the
    largest absolute difference in ulps of the largest reference magnitude (the measure that
    does not blow up where values near zero differ in sign), and heatmaps of the output and of
    the difference, element by element; as ``act_backend.jax.check`` measures them."""
    import numpy as np

    from act_backend.jax.check import difference, distances, is_float

    want = np.asarray(want)
    got = np.asarray(got).astype(want.dtype)
    measured = difference(0, want, got)
    at = measured.where
    return {
        "dtype": str(want.dtype),
        "difference_unit": "ulps" if is_float(want.dtype) else "integer difference",
        "max_ulps": _finite(measured.max_ulps),
        "where": None if at is None else list(at),
        "oracle_at": None if at is None else _finite(float(got[at])),
        "reference_at": None if at is None else _finite(float(want[at])),
        "max_abs_ulps_of_largest": _finite(measured.max_abs_ulps_of_largest),
        "heatmaps": {"output": heatmap(got, "mean"),
                     "difference": heatmap(distances(want, got), "max")},
    }


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
    want = evaluate(module, inputs)
    # Several results: the first one, as the oracle's output above.
    want = want[0] if isinstance(want, tuple) else want
    result = compare(got, want)
    result.update(difference_view(got, want))
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
