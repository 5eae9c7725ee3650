"""The results table and the timings beside it.

The table (``results.csv``, ``results.parquet``) has one row per point and kernel, ordered
by point then by the sweep's kernel order, never by when a point finished. It holds only what
the same sweep file gives again, so two runs write byte-identical files: the point and its
parameters, the kernel, the status, the cost, the instruction count, the largest difference
from the reference and whether the result is exact, and the refusal or error message (with
the output directory written as ``.``). Wall-clock figures (generation, compile and
simulation times, which worker ran a point) differ from run to run and go to
``timings.csv`` instead, keyed by the same point and kernel.
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from act_backend.sweep.model import Point, PointResult, Sweep

TABLE_CSV = "results.csv"
TABLE_PARQUET = "results.parquet"
TIMINGS_CSV = "timings.csv"

# The table's columns after the parameters, with their Arrow types.
_ROW_COLUMNS = (("kernel", "string"), ("status", "string"), ("cost", "float64"),
                ("instructions", "int64"), ("error_ulps", "float64"),
                ("max_abs_error", "float64"), ("exact", "bool"), ("message", "string"))
_KINDS = {"bool": "bool", "int": "int64", "float": "float64", "str": "string"}
TIMING_COLUMNS = ("point", "kernel", "worker", "point_wall_s", "generate_s", "compile_ms",
                  "backend_ms", "simulate_ms", "cached")


def columns(sweep: Sweep) -> list[tuple[str, str]]:
    """The table's columns and their Arrow types: the point, the cost model (when the sweep
    names cost libraries), the parameters in the file's order, then the kernel's figures."""
    head = [("point", "int64")]
    if sweep.cost_models:
        head.append(("cost_model", "string"))
    head += [(p.name, _KINDS[p.kind]) for p in sweep.parameters]
    return head + list(_ROW_COLUMNS)


def table_rows(sweep: Sweep, results: Sequence[PointResult]) -> list[dict[str, Any]]:
    """The table's rows in table order: by point, then by the sweep's kernel order."""
    order = {k.name: i for i, k in enumerate(sweep.kernels)}
    rows = []
    for result in sorted(results, key=lambda r: r.point.index):
        head = _point_columns(result.point)
        for row in sorted(result.rows, key=lambda r: order.get(r.kernel, len(order))):
            rows.append({**head, "kernel": row.kernel, "status": row.status,
                         "cost": row.cost, "instructions": row.instructions,
                         "error_ulps": row.error_ulps, "max_abs_error": row.max_abs_error,
                         "exact": row.exact, "message": row.message})
    return rows


def _point_columns(point: Point) -> dict[str, Any]:
    head: dict[str, Any] = {"point": point.index}
    if point.cost_model is not None:
        head["cost_model"] = point.cost_model.label
    head.update(point.parameters)
    return head


def write_csv(path: Path, names: Sequence[str], rows: Sequence[dict[str, Any]]) -> None:
    """``rows`` as CSV: empty cells for missing values, ``true``/``false``, floats as Python
    writes them (the shortest text that reads back the same number)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(names)
        for row in rows:
            writer.writerow([_cell(row.get(name)) for name in names])


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    return str(value)


def write_parquet(path: Path, schema: Sequence[tuple[str, str]],
                  rows: Sequence[dict[str, Any]]) -> None:
    """``rows`` as Parquet with the table's column types (nulls where values are missing)."""
    from act_backend.sweep.runner import require

    pa = require("pyarrow")
    parquet = require("pyarrow.parquet")
    types = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(),
             "string": pa.string()}
    arrow_schema = pa.schema([(name, types[kind]) for name, kind in schema])
    table = pa.Table.from_pylist([{name: row.get(name) for name, _ in schema} for row in rows],
                                 schema=arrow_schema)
    parquet.write_table(table, path)


def timing_rows(results: Sequence[PointResult]) -> list[dict[str, Any]]:
    """One row per point and kernel (in table order) with the run's wall-clock figures."""
    rows = []
    for result in sorted(results, key=lambda r: r.point.index):
        timings = {t.kernel: t for t in result.timings}
        for row in result.rows:
            t = timings.get(row.kernel)
            rows.append({
                "point": result.point.index, "kernel": row.kernel, "worker": result.worker,
                "point_wall_s": _round(result.wall_s), "generate_s": _round(result.generate_s),
                "compile_ms": _round(t.compile_ms if t else None),
                "backend_ms": _round(t.backend_ms if t else None),
                "simulate_ms": _round(t.simulate_ms if t else None),
                "cached": t.cached if t else None,
            })
    return rows


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)
