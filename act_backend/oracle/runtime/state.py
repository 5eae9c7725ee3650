"""The simulated machine state and the slices instructions read and write in it.

The state is one flat ``u8`` HBM of the kernel's ``hbm`` bytes followed by one array per
on-chip data model, ``dtype[*access_dims, *unit_dims]``, in table order, a floating ``dtype``
held as its bits (``bits.storage``: XLA's CPU would quiet NaNs written into bf16 arrays). A
region is the part of a buffer one operand of one call occupies: rows
``[start_k, start_k + size_k)`` along each access dim, unit dims whole. Regions are bound (and
bounds-checked) when an instruction is called, so reading and writing them inside the compiled
program never clamps. A region is read and written either at its bound starts (``read``,
``write``) or at starts given at run time (``read_at``, ``write_at``), which lets one compiled
step serve every address. Reads give the buffer's element type; writes take it.

``TracedState`` follows the state while a whole program is traced: a read of a region that an
earlier call wrote whole takes that call's value itself, and HBM bytes no call has written yet
are read from parameters holding just those bytes, so that XLA is given only the data movement
the program needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np
from jax import lax

from .bits import from_bits, moved, storage, to_bits
from .table import HBM, Buffer, OracleError, SliceSpec, Table, evaluate_all, numpy_dtype


@dataclass(frozen=True)
class Region:
    buffer: Buffer
    start: tuple[int, ...]
    size: tuple[int, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the value read from (or written to) the region."""
        return self.size + self.buffer.unit_dims

    @property
    def dtype(self) -> np.dtype:
        return numpy_dtype(self.buffer.dtype, self.buffer.name)

    def rows(self, k: int | None = None) -> str:
        """``[32, 96)``: the rows along access dim ``k``, or along every one (joined by x)."""
        dims = range(len(self.start)) if k is None else [k]
        return " x ".join(f"[{self.start[d]}, {self.start[d] + self.size[d]})" for d in dims)


def bind_region(spec: SliceSpec, table: Table, env: Mapping[str, int], hbm: int,
                where: str) -> Region:
    """Evaluates a slice for one call and checks it lies inside its buffer.

    ``where`` names the operand, e.g. ``load_rm input 0 (d0)``; ``hbm`` is the kernel's HBM
    size in bytes, the extent of d0's unbounded access dim.
    """
    buffer = table.buffers[spec.buffer]
    rank = len(spec.start)
    bounds = evaluate_all(
        spec.start + spec.size, spec.bounds, env,
        lambda k: f"{where}: start {k}" if k < rank else f"{where}: size {k - rank}")
    start, size = tuple(bounds[:rank]), tuple(bounds[rank:])
    region = Region(buffer, start, size)
    for k, capacity in enumerate(buffer.access_dims):
        limit = hbm if capacity is None else capacity
        if size[k] > 0 and start[k] >= 0 and start[k] + size[k] <= limit:
            continue
        along = f" along access dim {k}" if len(buffer.access_dims) > 1 else ""
        if size[k] <= 0:
            raise OracleError(f"{where}: size {size[k]}{along} is not positive")
        if start[k] < 0:
            raise OracleError(f"{where}: rows {region.rows(k)}{along} start below 0")
        extent = (f"HBM of {hbm} bytes" if buffer.is_hbm
                  else f"{buffer.name} of {capacity} rows{along}")
        raise OracleError(f"{where}: rows {region.rows(k)} exceed {extent}")
    return region


def state_structs(table: Table, hbm: int, sharding: jax.sharding.Sharding | None = None
                  ) -> list[jax.ShapeDtypeStruct]:
    """The abstract types of the state arrays: HBM, then each on-chip buffer (as its bits)."""
    structs = [jax.ShapeDtypeStruct((hbm,), np.uint8, sharding=sharding)]
    for buffer in table.on_chip:
        shape = tuple(buffer.access_dims) + buffer.unit_dims
        dtype = storage(numpy_dtype(buffer.dtype, buffer.name))
        structs.append(jax.ShapeDtypeStruct(shape, dtype, sharding=sharding))
    return structs


def contents(table: Table, arrays: Sequence[Any]) -> dict[str, np.ndarray]:
    """Each buffer's contents by name (HBM first), as NumPy arrays of its element type, from
    the state ``arrays``."""
    buffers = [table.buffers[HBM], *table.on_chip]
    return {b.name: np.asarray(a).view(numpy_dtype(b.dtype, b.name))
            for b, a in zip(buffers, arrays, strict=True)}


def state_index(table: Table) -> dict[str, int]:
    """Where each buffer's array sits in the state: HBM first, then on-chip in table order."""
    return {HBM: 0, **{b.name: i + 1 for i, b in enumerate(table.on_chip)}}


def read(state: Sequence[jax.Array], index: int, region: Region) -> jax.Array:
    """The value of ``region`` of state array ``index``, shaped ``region.shape``."""
    array = state[index]
    unit = region.buffer.unit_dims
    starts = list(region.start) + [0] * len(unit)
    limits = [s + z for s, z in zip(region.start, region.size, strict=True)] + list(unit)
    return from_bits(lax.slice(array, starts, limits), region.dtype)


def write(state: list[jax.Array], index: int, region: Region, value: jax.Array) -> None:
    """Replaces ``region`` of state array ``index`` with ``value`` (same element count)."""
    array = state[index]
    update = lax.reshape(to_bits(value), region.shape)
    starts = list(region.start) + [0] * len(region.buffer.unit_dims)
    # The region was bounds-checked when bound, so dynamic_update_slice's clamping never acts.
    state[index] = lax.dynamic_update_slice(array, update, starts)


def read_at(array: jax.Array, region: Region, starts: Sequence[jax.Array]) -> jax.Array:
    """The value of a region of ``region``'s size at ``starts`` (one per access dim, traced)."""
    unit = region.buffer.unit_dims
    value = lax.dynamic_slice(array, list(starts) + [0] * len(unit), region.shape)
    return from_bits(value, region.dtype)


def write_at(array: jax.Array, region: Region, starts: Sequence[jax.Array],
             value: jax.Array) -> jax.Array:
    """``array`` with the region of ``region``'s size at ``starts`` replaced by ``value``."""
    update = lax.reshape(to_bits(value), region.shape)
    unit = region.buffer.unit_dims
    # As in write: the starts were bounds-checked when the call was bound, so no clamping.
    return lax.dynamic_update_slice(array, update, list(starts) + [0] * len(unit))


# How TracedState finds a region: inside a value written earlier, initial contents (no earlier
# write touches it), or mixed (partly written, or beside what was written).
WRITTEN, INITIAL, MIXED = "written", "initial", "mixed"


class TracedState:
    """The state arrays of a program being traced, and the values last written to regions.

    ``arrays`` are the state arrays, each the chain of its writes; a value written to a region
    is also kept, with the regions written earlier that it overlaps forgotten, so the kept
    regions of one buffer never overlap. A read of a region inside a kept one is a slice of
    that value, exactly the bytes the chain would give; ``initial`` maps HBM regions no call
    has written to arrays of their initial bytes; every other read slices the chain. Each value
    written to HBM is listed in ``hbm_writes``, in call order.
    """

    def __init__(self, arrays: Sequence[jax.Array | None],
                 initial: Mapping[tuple[tuple[int, ...], tuple[int, ...]], jax.Array]
                 | None = None):
        self.arrays: list[Any] = list(arrays)  # None while only planning (no values)
        self.initial = dict(initial or {})
        self.hbm_writes: list[jax.Array] = []
        self._kept: list[list[tuple[Region, jax.Array | None]]] = [[] for _ in self.arrays]

    def find(self, index: int, region: Region) -> tuple[str, Region | None, jax.Array | None]:
        """Where a read of ``region`` of array ``index`` takes its value: ``(WRITTEN, the kept
        region holding it, its value)``, ``(INITIAL, None, None)`` or ``(MIXED, None, None)``."""
        touched = False
        for kept, value in self._kept[index]:
            if _inside(region, kept):
                return WRITTEN, kept, value
            touched = touched or _overlap(region, kept)
        return (MIXED if touched else INITIAL), None, None

    def read(self, index: int, region: Region) -> jax.Array:
        """The value of ``region`` of state array ``index``, shaped ``region.shape``."""
        where, kept, value = self.find(index, region)
        if where == WRITTEN:
            assert kept is not None and value is not None
            if kept.start == region.start and kept.size == region.size:
                return value
            unit = region.buffer.unit_dims
            starts = [a - b for a, b in zip(region.start, kept.start, strict=True)]
            limits = [a + z for a, z in zip(starts, region.size, strict=True)]
            return moved(lambda v: lax.slice(v, starts + [0] * len(unit), limits + list(unit)),
                         value)
        if where == INITIAL and index == 0 and (region.start, region.size) in self.initial:
            return self.initial[region.start, region.size]
        return read(self.arrays, index, region)

    def write(self, index: int, region: Region, value: jax.Array | None) -> None:
        """Writes ``value`` (any shape of ``region``'s element count) to ``region`` of state
        array ``index``; ``value`` None records only that the region was written."""
        update = None if value is None else moved(lambda v: lax.reshape(v, region.shape), value)
        if update is not None:
            write(self.arrays, index, region, update)
            if index == 0:
                self.hbm_writes.append(update)
        kept = [(k, v) for k, v in self._kept[index] if not _overlap(k, region)]
        kept.append((region, update))
        self._kept[index] = kept


def _inside(inner: Region, outer: Region) -> bool:
    return all(o <= i and i + n <= o + m for i, n, o, m in
               zip(inner.start, inner.size, outer.start, outer.size, strict=True))


def _overlap(a: Region, b: Region) -> bool:
    return all(x < y + m and y < x + n for x, n, y, m in
               zip(a.start, a.size, b.start, b.size, strict=True))
