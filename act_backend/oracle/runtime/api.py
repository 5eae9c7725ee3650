"""One function per instruction of the ISA table, created when this module is imported.

``api.load_rm(n=64, addr_in=0, addr_out=0)`` records one call into the kernel being traced;
its keyword arguments are the instruction's computational then addressing attributes.
"""

from __future__ import annotations

import inspect as _inspect
from collections.abc import Callable as _Callable

from . import table as _table
from . import tracing as _tracing


def _make(instr: _table.Instruction) -> _Callable[..., None]:
    name = instr.name

    def call(*args: object, **attrs: object) -> None:
        _tracing.record(name, args, attrs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = __name__
    comp = ", ".join(instr.comp_attrs) or "none"
    addr = ", ".join(instr.addr_attrs) or "none"
    call.__doc__ = (f"Instruction {name}: computational attributes {comp}; addressing "
                    f"attributes {addr}.")
    call.__signature__ = _inspect.Signature(  # type: ignore[attr-defined]
        [_inspect.Parameter(a, _inspect.Parameter.KEYWORD_ONLY, annotation=int)
         for a in instr.attrs], return_annotation=None)
    return call


def _install() -> list[str]:
    names = []
    for instr in _table.current().instructions.values():
        if instr.name in globals():
            raise _table.OracleError(f"instruction {instr.name!r} clashes with a name the api "
                                     "module already defines")
        globals()[instr.name] = _make(instr)
        names.append(instr.name)
    return names


__all__ = _install()
