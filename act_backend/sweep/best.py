"""The best configurations of a sweep, read from its table: per kernel, the ``ok`` row of
lowest cost (ties to fewer instructions, then to the earlier point); overall, the point on
which every kernel is ``ok`` with the lowest total cost (ties to the earlier point). Written
as ``best.json``, as deterministic as the table it is read from.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from act_backend.sweep.model import Sweep

BEST_JSON = "best.json"


def best_configurations(sweep: Sweep, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{"per_kernel": {kernel: best or None}, "overall": best or None}``, each best naming
    its point, parameters (and cost model) and cost."""
    kernels = [k.name for k in sweep.kernels]
    per_kernel: dict[str, Any] = {}
    for kernel in kernels:
        ok = [r for r in rows if r["kernel"] == kernel and r["status"] == "ok"]
        if not ok:
            per_kernel[kernel] = None
            continue
        best = min(ok, key=lambda r: (r["cost"], r["instructions"], r["point"]))
        per_kernel[kernel] = {**_configuration(sweep, best), "cost": best["cost"],
                              "instructions": best["instructions"]}
    by_point: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_point.setdefault(row["point"], []).append(row)
    complete = [(sum(r["cost"] for r in point_rows), index, point_rows)
                for index, point_rows in by_point.items()
                if len(point_rows) == len(kernels)
                and all(r["status"] == "ok" for r in point_rows)]
    overall = None
    if complete:
        total, _, point_rows = min(complete, key=lambda c: (c[0], c[1]))
        overall = {**_configuration(sweep, point_rows[0]), "total_cost": total,
                   "costs": {r["kernel"]: r["cost"] for r in point_rows}}
    return {"tolerance_ulps": sweep.tolerance_ulps, "per_kernel": per_kernel,
            "overall": overall}


def _configuration(sweep: Sweep, row: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"point": row["point"]}
    if sweep.cost_models:
        found["cost_model"] = row["cost_model"]
    found["parameters"] = {p.name: row[p.name] for p in sweep.parameters}
    return found


def write_best(path: Path, best: dict[str, Any]) -> None:
    path.write_text(json.dumps(best, indent=2) + "\n", encoding="utf-8")


def describe(best: dict[str, Any]) -> list[str]:
    """The best configurations as lines for the terminal."""
    lines = []
    for kernel, found in best["per_kernel"].items():
        if found is None:
            lines.append(f"  {kernel}: no point compiles it within tolerance")
        else:
            lines.append(f"  {kernel}: cost {found['cost']:g} on point {found['point']} "
                         f"({_parameters(found)})")
    overall = best["overall"]
    if overall is None:
        lines.append("  overall: no point compiles every kernel within tolerance")
    else:
        lines.append(f"  overall: total cost {overall['total_cost']:g} on point "
                     f"{overall['point']} ({_parameters(overall)})")
    return lines


def _parameters(found: dict[str, Any]) -> str:
    items = [f"{name}={value!r}" for name, value in found["parameters"].items()]
    if "cost_model" in found:
        items.append(f"cost={found['cost_model']}")
    return ", ".join(items) or "no parameters"
