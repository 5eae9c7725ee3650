"""``cost.png``: the cost of each kernel against each parameter of the sweep, one panel per
parameter (and one for the cost model when the sweep names cost libraries).

Along one parameter the other parameters vary too, so each line shows, at each value, the
lowest cost of the kernel over the ``ok`` rows with that value; a value where the kernel is
never ``ok`` leaves a gap in its line and a cross in its colour along the bottom. Numbers
are placed on a numeric axis, booleans and strings in the order the sweep file lists them.
Drawn with matplotlib's Agg canvas, without pyplot, so that no interactive backend is chosen
for the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from act_backend.sweep.model import Sweep

PLOT = "cost.png"


def write_plot(path: Path, sweep: Sweep, rows: Sequence[dict[str, Any]]) -> None:
    """Draws the panels into ``path`` (PNG)."""
    from act_backend.sweep.runner import require

    require("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    axes_of = _axes(sweep)
    figure = Figure(figsize=(5.0 * len(axes_of), 4.0), layout="constrained")
    FigureCanvasAgg(figure)
    panels = figure.subplots(1, len(axes_of), squeeze=False)[0]
    kernels = [k.name for k in sweep.kernels]
    for panel, (name, values, numeric) in zip(panels, axes_of, strict=True):
        if values is None:  # a range of a random sample, or the points themselves
            values = sorted({r[name] for r in rows})
        positions = list(values) if numeric else list(range(len(values)))
        for row_of_crosses, kernel in enumerate(kernels):
            best = [_lowest(rows, kernel, name, value) for value in values]
            ys = [float("nan") if cost is None else cost for cost in best]
            line, = panel.plot(positions, ys, marker="o", label=kernel)
            # Values where the kernel is never ok: crosses along the bottom of the panel, a
            # row per kernel.
            missing = [x for x, cost in zip(positions, best, strict=True) if cost is None]
            panel.plot(missing, [0.03 + 0.04 * row_of_crosses] * len(missing),
                       linestyle="none", marker="x", color=line.get_color(),
                       transform=panel.get_xaxis_transform())
        if len(positions) > 1:
            pad = (max(positions) - min(positions)) * 0.05
            panel.set_xlim(min(positions) - pad, max(positions) + pad)
        panel.set_xlabel(name)
        panel.set_ylabel("cost (lowest over the other parameters)")
        panel.set_title(f"cost per kernel against {name} (x: no ok row)")
        if not numeric:
            panel.set_xticks(positions, [str(v) for v in values])
        panel.grid(True, alpha=0.3)
        panel.legend(fontsize="small")
    figure.savefig(path, dpi=100)


def _axes(sweep: Sweep) -> list[tuple[str, list[Any] | None, bool]]:
    """(column, values in plotting order or None for the values the rows hold, whether the
    axis is numeric) per panel."""
    axes = []
    if sweep.cost_models:
        axes.append(("cost_model", [m.label for m in sweep.cost_models], False))
    for parameter in sweep.parameters:
        numeric = parameter.kind in ("int", "float")
        if parameter.values is not None:
            values = sorted(parameter.values) if numeric else list(parameter.values)
            axes.append((parameter.name, values, numeric))
        else:
            axes.append((parameter.name, None, numeric))
    if not axes:
        axes.append(("point", None, True))
    return axes


def _lowest(rows: Sequence[dict[str, Any]], kernel: str, column: str, value: Any
            ) -> float | None:
    costs = [r["cost"] for r in rows
             if r["kernel"] == kernel and r["status"] == "ok" and r[column] == value]
    return min(costs) if costs else None
