"""The TAIDL v2.3 Python API: ``Accelerator``, its data models and instructions, as records.

The TAIDL v2.2 surface is accepted too: ``Accelerator(name, base_dir=...)``,
``add_instruction(name, comp_attrs, addr_attrs, cost=..., update=..., constraints=...)`` and
``Instruction.add_constraints(text)`` (one constraint a line).

Calls record what they are given, exactly as given, and where each call and argument was
written (``act_backend.spec.sites``); nothing here raises on bad data, so that validation
(``act_backend.validation``) can report every problem of a spec at once, at its place.

Every change made through the API (a call, or assigning a public attribute of an accelerator,
data model or instruction) bumps the accelerator's ``revision``, so that its analysis is run
once per state and reused until the next change (``act_backend.validation.analysis_of``).
Lists handed to the API are kept as given: changing one in place afterwards is not a change
the revision sees.
"""

from __future__ import annotations

from typing import Any

from act_backend.hlo.ir import Span
from act_backend.spec.sites import CallSite, caller_directory, capture

HBM = "d0"


class _Record:
    """A part of an accelerator: assigning one of its public attributes changes the
    accelerator that owns it (the one it was added to)."""

    _owner: Accelerator | None = None

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if not name.startswith("_") and self._owner is not None:
            self._owner._changed()


class DataModel(_Record):
    """``add_data_model(name, access_dims, unit_dims, dtype)``: a buffer of
    ``access_dims`` addressable units, each a ``dtype[*unit_dims]`` tensor."""

    def __init__(self, name: Any, access_dims: Any, unit_dims: Any, dtype: Any,
                 site: CallSite | None):
        self.name = name
        self.access_dims = access_dims
        self.unit_dims = unit_dims
        self.dtype = dtype
        self.site = site or CallSite(None)

    @property
    def span(self) -> Span | None:
        """Where the ``add_data_model`` call was written."""
        return self.site.span

    @property
    def arg_spans(self) -> dict[str, Span]:
        return self.site.arg_spans()

    @property
    def is_implicit(self) -> bool:
        return self.site.span is None and self.name == HBM

    def __repr__(self) -> str:
        return (f"DataModel({self.name!r}, {self.access_dims!r}, {self.unit_dims!r}, "
                f"{self.dtype!r})")


def hbm() -> DataModel:
    """``d0``: the byte-addressed HBM every accelerator has, unbounded (capacity None)."""
    return DataModel(HBM, [None], [], "u8", None)


class Instruction(_Record):
    """``add_instruction(name, comp_attrs, addr_attrs, cost=None, update=None,
    constraints=None)``; then ``set_inputs``, ``set_outputs`` and ``add_semantics`` fill it
    in, and ``add_constraints`` adds constraints.

    ``inputs``/``outputs`` are the slice lists as given (``[[buffer, [start..], [size..]],
    ...]``), ``semantics`` the text; each ``*_site`` says where it was written. Every call
    is also kept in ``calls`` (in order), so that a repeated call can be reported.
    ``cost`` is the instruction's cost, an integer or an expression over its computational
    attributes (``None``: 1); ``constraints`` are the conditions its attribute values must
    meet (``"@c.rows <= 16"``, ``"@a.addr % 16 == 0"``), as given; ``update`` (state
    updates of TAIDL v2.2) is kept as given for validation to judge.
    """

    def __init__(self, name: Any, comp_attrs: Any, addr_attrs: Any, site: CallSite | None,
                 cost: Any = None, update: Any = None, constraints: Any = None):
        self.name = name
        self.comp_attrs = comp_attrs
        self.addr_attrs = addr_attrs
        self.site = site or CallSite(None)
        self.cost = cost
        self.update = update
        self.constraints: Any = [] if constraints is None else constraints
        self.constraints_site: CallSite | None = None
        self.inputs: Any = None
        self.outputs: Any = None
        self.semantics: str | None = None
        self.inputs_site: CallSite | None = None
        self.outputs_site: CallSite | None = None
        self.semantics_site: CallSite | None = None
        self.calls: list[tuple[str, CallSite]] = []

    @property
    def span(self) -> Span | None:
        """Where the ``add_instruction`` call was written."""
        return self.site.span

    @property
    def arg_spans(self) -> dict[str, Span]:
        return self.site.arg_spans()

    @property
    def semantics_text(self) -> str | None:
        return self.semantics if isinstance(self.semantics, str) else None

    def set_inputs(self, slices: Any) -> None:
        """The slices the instruction reads: ``[[buffer, [start exprs], [size exprs]], ..]``
        with one start and one size per access dimension of the buffer."""
        self.inputs_site = capture("set_inputs", ("slices",))
        self.inputs = slices
        self.calls.append(("set_inputs", self.inputs_site))

    def set_outputs(self, slices: Any) -> None:
        """The slice the instruction writes, in the same form as ``set_inputs``."""
        self.outputs_site = capture("set_outputs", ("slices",))
        self.outputs = slices
        self.calls.append(("set_outputs", self.outputs_site))

    def add_semantics(self, text: Any) -> None:
        """What the instruction computes: an ``ENTRY`` computation in the TAIDL semantics
        language whose parameter ``i`` is input slice ``i`` and whose ROOT is the output."""
        self.semantics_site = capture("add_semantics", ("text",))
        self.semantics = text
        self.calls.append(("add_semantics", self.semantics_site))

    def add_constraints(self, constraints: Any) -> None:
        """Adds constraints on the attribute values: a text with one constraint a line (as
        TAIDL v2.2 writes them) or a list of constraint strings. A constraint is comparisons
        of integer expressions (``==``, ``!=``, ``<``, ``<=``, ``>``, ``>=``) joined by
        ``and``."""
        self.constraints_site = capture("add_constraints", ("constraints",))
        if isinstance(constraints, str):
            added: Any = [line.strip() for line in constraints.splitlines() if line.strip()]
        else:
            added = constraints
        if isinstance(self.constraints, list) and isinstance(added, list):
            self.constraints = [*self.constraints, *added]
        else:
            self.constraints = added
        self.calls.append(("add_constraints", self.constraints_site))

    def __repr__(self) -> str:
        return f"Instruction({self.name!r}, {self.comp_attrs!r}, {self.addr_attrs!r})"


class Accelerator:
    """A tensor accelerator described in TAIDL: named buffers (data models) and instructions.

    ``base_dir`` (where generators write ``targets/`` and ``backends/``) defaults to the
    directory of the file that created the accelerator.
    """

    def __init__(self, name: Any, base_dir: Any = None):
        self._revision = 0
        self.site = capture("Accelerator", ("name", "base_dir"))
        self.name = name
        self.base_dir = caller_directory(self.site) if base_dir is None else str(base_dir)
        self._data_models: list[DataModel] = []
        self._instructions: list[Instruction] = []

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if not name.startswith("_"):
            self._changed()

    def _changed(self) -> None:
        self._revision += 1

    @property
    def revision(self) -> int:
        """Counts the changes made to the accelerator: equal revisions, equal specs."""
        return self._revision

    @property
    def span(self) -> Span | None:
        """Where the accelerator was created."""
        return self.site.span

    @property
    def arg_spans(self) -> dict[str, Span]:
        return self.site.arg_spans()

    @property
    def data_models(self) -> list[DataModel]:
        """The declared data models, in declaration order (without the implicit ``d0``)."""
        return list(self._data_models)

    @property
    def buffers(self) -> list[DataModel]:
        """Every buffer: the implicit ``d0`` first, then the data models in order."""
        return [hbm(), *self._data_models]

    @property
    def instructions(self) -> list[Instruction]:
        """The instructions, in declaration order."""
        return list(self._instructions)

    def add_data_model(self, name: Any, access_dims: Any, unit_dims: Any,
                       dtype: Any) -> DataModel:
        site = capture("add_data_model", ("name", "access_dims", "unit_dims", "dtype"))
        model = DataModel(name, access_dims, unit_dims, dtype, site)
        model._owner = self
        self._data_models.append(model)
        self._changed()
        return model

    def add_instruction(self, name: Any, comp_attrs: Any, addr_attrs: Any, cost: Any = None,
                        update: Any = None, constraints: Any = None) -> Instruction:
        site = capture("add_instruction", ("name", "comp_attrs", "addr_attrs", "cost",
                                           "update", "constraints"))
        instr = Instruction(name, comp_attrs, addr_attrs, site, cost, update, constraints)
        instr._owner = self
        self._instructions.append(instr)
        self._changed()
        return instr

    def generate_oracle(self) -> Any:
        """``act_backend.generate_oracle(self)``, for specs that call it as a method."""
        import act_backend

        return act_backend.generate_oracle(self)

    def generate_backend(self, cost: Any = None) -> Any:
        """``act_backend.generate_backend(self, cost)``, for specs that call it as a method."""
        import act_backend

        return act_backend.generate_backend(self, cost)

    def __repr__(self) -> str:
        return (f"Accelerator({self.name!r}: {len(self._data_models)} data models, "
                f"{len(self._instructions)} instructions)")
