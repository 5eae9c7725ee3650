"""The points of a sweep, in the order of the results table: the whole grid (every
combination of the parameters' values, the last parameter varying fastest), or a random
sample of it drawn with a fixed seed; the cost models, when the sweep names several, are the
outermost axis (points of one cost library are neighbours, so its backend build is reused).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from act_backend.sweep.model import CostModel, Parameter, Point, Sweep, Value

# Random draws give up after this many attempts per wanted point when they keep repeating
# points already drawn (a small grid asked for nearly all of its points).
_DRAWS_PER_POINT = 100


def points_of(sweep: Sweep) -> list[Point]:
    """Every point ``sweep`` runs, indexed in table order."""
    if sweep.sampling is None:
        combos = grid(sweep.parameters)
    else:
        combos = sample(sweep.parameters, sweep.sampling.count, sweep.sampling.seed)
    costs: list[CostModel | None] = list(sweep.cost_models) or [None]
    points = []
    for cost in costs:
        for combo in combos:
            points.append(Point(len(points), combo, cost))
    return points


def grid(parameters: tuple[Parameter, ...]) -> list[tuple[tuple[str, Value], ...]]:
    """Every combination of the parameters' values, in the order of ``itertools.product``."""
    for p in parameters:
        if p.values is None:
            raise ValueError(f"parameter {p.name!r} is a range; a grid needs a list of values")
    names = [p.name for p in parameters]
    return [tuple(zip(names, values, strict=True))
            for values in itertools.product(*(p.values for p in parameters))]


def sample(parameters: tuple[Parameter, ...], count: int, seed: int
           ) -> list[tuple[tuple[str, Value], ...]]:
    """``count`` distinct points drawn with ``seed``. When every parameter is a list, they
    are drawn without replacement from the grid and listed in grid order (the whole grid when
    ``count`` is at least its size); with ranges, each value is drawn on its own (integers
    uniformly in [min, max], floats uniformly in [min, max)) and repeats are drawn again."""
    rng = np.random.default_rng(seed)
    if all(p.values is not None for p in parameters):
        size = math.prod(len(p.values) for p in parameters)
        if count >= size:
            return grid(parameters)
        chosen = sorted(int(i) for i in rng.choice(size, size=count, replace=False))
        everything = grid(parameters)
        return [everything[i] for i in chosen]
    drawn: list[tuple[tuple[str, Value], ...]] = []
    seen: set[tuple[tuple[str, Value], ...]] = set()
    for _ in range(count * _DRAWS_PER_POINT):
        if len(drawn) == count:
            break
        combo = tuple((p.name, _draw(rng, p)) for p in parameters)
        if combo not in seen:
            seen.add(combo)
            drawn.append(combo)
    return drawn


def _draw(rng: np.random.Generator, parameter: Parameter) -> Value:
    if parameter.values is not None:
        return parameter.values[int(rng.integers(len(parameter.values)))]
    if parameter.kind == "int":
        return int(rng.integers(int(parameter.low), int(parameter.high) + 1))
    return float(rng.uniform(float(parameter.low), float(parameter.high)))
