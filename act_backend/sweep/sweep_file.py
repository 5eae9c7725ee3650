"""Reading a sweep file (TOML) into a ``Sweep``: every key checked, every path resolved
against the file's directory, the kernels' HLO parsed and the spec function imported, so that
a mistake is reported once, before any point runs, as ``file:line: [table] key: what is
wrong``.

The format (``docs/architecture.md``, section 7, and the README have the whole of it)::

    [spec]                        # the parameterised spec: file = "x.py" or module = "pkg.mod"
    file = "qkv_family.py"
    function = "qkv"              # called with one point's parameters, returns an Accelerator

    [parameters]                  # the grid: every combination, the last one varying fastest
    d1_rows = [64, 128, 256]
    softmax = [true, false]

    [sample]                      # optional: a random sample of the grid instead of all of it
    count = 4
    seed = 0

    [backend]                     # optional
    cost = ["default", "model.o"] # cost libraries, an outermost axis of the sweep
    time_limit = 60               # seconds, the backend's --time-limit safety net per kernel

    [[kernels]]
    hlo = "attention.hlo"         # an HLO file ...
    [[kernels]]
    jax = "kernels.py:scores"     # ... or a JAX function (file.py:name or module:name)
    args = ["bf16[64,64]", "bf16[64,64]"]

    [inputs]                      # optional: seeded random inputs
    seed = 0
    scale = 0.5
    [check]                       # optional: largest difference from the reference, in ulps
    tolerance_ulps = 4            # of the reference's largest magnitude, for an "ok" row
    [run]                         # optional
    workers = 2                   # local Ray CPUs (default: all of this machine's)
    retries = 2                   # times a point is retried when its worker dies
    output = "results"            # default: <file stem>-results beside the file
"""

from __future__ import annotations

import inspect
import math
import re
import tomllib
from pathlib import Path
from typing import Any

from act_backend.sweep.locations import line_of
from act_backend.sweep.model import (
    RESERVED_COLUMNS,
    ArgSpec,
    CostModel,
    Inputs,
    KernelSource,
    Parameter,
    Sampling,
    SpecRef,
    Sweep,
    SweepFileError,
)
from act_backend.sweep.user_code import load_function

KeyPath = tuple[str | int, ...]
TABLES = ("spec", "parameters", "sample", "backend", "kernels", "inputs", "check", "run")
_ARG = re.compile(r"^\s*([A-Za-z0-9]+)\s*\[\s*((?:\d+\s*(?:,\s*\d+\s*)*)?)\]\s*$")


def load_sweep(path: str | Path, *, import_code: bool = True) -> Sweep:
    """The sweep in ``path``. ``import_code`` imports the spec function (and the JAX
    kernels' functions) to check that they exist and take the parameters: the driver does,
    before any point runs. Raises ``SweepFileError`` naming the file, line and key."""
    path = Path(path).expanduser().resolve()
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise SweepFileError(f"{path}: cannot read the sweep file: {e.strerror or e}") from e
    return _Reader(path, text).sweep(import_code)


def _where(key: KeyPath) -> str:
    """A key path as the error names it: ``[spec]: function``, ``[[kernels]] 2: hlo``."""
    head, rest = key[0], list(key[1:])
    if head == "kernels":
        text = "[[kernels]]"
        if rest and isinstance(rest[0], int):
            text += f" {rest.pop(0) + 1}"
    else:
        text = f"[{head}]"
    if rest:
        text += ": " + ".".join(str(part) for part in rest)
    return text


class _Reader:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.text = text
        self.base = path.parent

    def error(self, key: KeyPath, message: str) -> SweepFileError:
        line = line_of(self.text, key)
        where = f"{self.path}:{line}" if line is not None else str(self.path)
        what = f"{_where(key)}: " if key else ""
        return SweepFileError(f"{where}: {what}{message}")

    # -- the whole file -----------------------------------------------------------------

    def sweep(self, import_code: bool) -> Sweep:
        try:
            data = tomllib.loads(self.text)
        except tomllib.TOMLDecodeError as e:
            match = re.search(r"\(at line (\d+), column (\d+)\)", str(e))
            where = f"{self.path}:{match.group(1)}:{match.group(2)}" if match else str(self.path)
            message = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(e))
            raise SweepFileError(f"{where}: not valid TOML: {message}") from None
        self.known(data, (), TABLES)
        spec = self.spec(self.table(data, "spec", required=True))
        sampling = self.sampling(self.table(data, "sample"))
        parameters = self.parameters(self.table(data, "parameters"), sampling is not None)
        backend = self.table(data, "backend")
        self.known(backend, ("backend",), ("cost", "time_limit"))
        kernels = self.kernels(data.get("kernels"))
        inputs = self.table(data, "inputs")
        self.known(inputs, ("inputs",), ("seed", "scale"))
        check = self.table(data, "check")
        self.known(check, ("check",), ("tolerance_ulps",))
        run = self.table(data, "run")
        self.known(run, ("run",), ("workers", "retries", "output"))
        output = self.string(run, ("run", "output"))
        sweep = Sweep(
            path=self.path, spec=spec, parameters=parameters, kernels=kernels,
            sampling=sampling,
            cost_models=self.cost_models(backend.get("cost")),
            time_limit=self.number(backend, ("backend", "time_limit"), minimum=0.0,
                                   strict=True),
            inputs=Inputs(seed=self.integer(inputs, ("inputs", "seed"), default=0),
                          scale=self.number(inputs, ("inputs", "scale"), default=0.5,
                                            minimum=0.0, strict=True)),
            tolerance_ulps=self.number(check, ("check", "tolerance_ulps"), default=4.0,
                                       minimum=0.0),
            workers=self.integer(run, ("run", "workers"), minimum=1),
            retries=self.integer(run, ("run", "retries"), default=2, minimum=0),
            output=(self.base / output).resolve() if output is not None else None,
        )
        if import_code:
            self.check_spec_function(sweep)
            self.check_jax_kernels(sweep)
        return sweep

    # -- tables and scalars -------------------------------------------------------------

    def table(self, data: dict, name: str, required: bool = False) -> dict:
        value = data.get(name)
        if value is None:
            if required:
                raise self.error((), f"the [{name}] table is missing")
            return {}
        if not isinstance(value, dict):
            raise self.error((name,), f"must be a table ([{name}]), got {_kind(value)}")
        return value

    def known(self, table: dict, key: KeyPath, allowed: tuple[str, ...]) -> None:
        for name in table:
            if name not in allowed:
                what = "table" if not key else "key"
                raise self.error((*key, name), f"unknown {what}; expected one of "
                                 f"{', '.join(allowed)}")

    def string(self, table: dict, key: KeyPath, *, required: bool = False) -> str | None:
        value = table.get(key[-1])
        if value is None:
            if required:
                raise self.error(key, "missing")
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"must be a non-empty string, got {_kind(value)}")
        return value

    def integer(self, table: dict, key: KeyPath, *, default: int | None = None,
                minimum: int | None = None) -> Any:
        value = table.get(key[-1])
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {_kind(value)}")
        if minimum is not None and value < minimum:
            raise self.error(key, f"must be at least {minimum}, got {value}")
        return value

    def number(self, table: dict, key: KeyPath, *, default: float | None = None,
               minimum: float | None = None, strict: bool = False) -> Any:
        value = table.get(key[-1])
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not math.isfinite(value):
            raise self.error(key, f"must be a finite number, got {_kind(value)}")
        if minimum is not None and (value < minimum or (strict and value == minimum)):
            bound = "greater than" if strict else "at least"
            raise self.error(key, f"must be {bound} {minimum:g}, got {value}")
        return float(value)

    def existing_file(self, key: KeyPath, value: str) -> Path:
        path = (self.base / value).resolve()
        if not path.is_file():
            raise self.error(key, f"{value!r}: no such file ({path})")
        return path

    # -- [spec], [parameters], [sample], [backend] --------------------------------------

    def spec(self, table: dict) -> SpecRef:
        self.known(table, ("spec",), ("file", "module", "function"))
        function = self.string(table, ("spec", "function"), required=True)
        file = self.string(table, ("spec", "file"))
        module = self.string(table, ("spec", "module"))
        if (file is None) == (module is None):
            raise self.error(("spec",), "give the spec function's file (file = \"x.py\") "
                             "or its module (module = \"package.module\"), one of the two")
        if file is not None:
            return SpecRef(function, file=str(self.existing_file(("spec", "file"), file)))
        return SpecRef(function, module=module)

    def sampling(self, table: dict) -> Sampling | None:
        if not table:
            return None
        self.known(table, ("sample",), ("count", "seed"))
        count = self.integer(table, ("sample", "count"), minimum=1)
        if count is None:
            raise self.error(("sample", "count"), "missing: how many points to draw")
        return Sampling(count, self.integer(table, ("sample", "seed"), default=0))

    def parameters(self, table: dict, sampled: bool) -> tuple[Parameter, ...]:
        return tuple(self.parameter(name, value, sampled) for name, value in table.items())

    def parameter(self, name: str, value: Any, sampled: bool) -> Parameter:
        key = ("parameters", name)
        if not name.isidentifier():
            raise self.error(key, "a parameter name must be a Python identifier (it is "
                             "passed to the spec function as a keyword argument)")
        if name in RESERVED_COLUMNS:
            raise self.error(key, f"{name!r} names a column of the results table; rename "
                             "the parameter")
        if isinstance(value, dict):
            return self.parameter_range(name, value, sampled)
        if not isinstance(value, list) or not value:
            raise self.error(key, "must be a non-empty list of values (or, with [sample], "
                             f"a range {{ min = ..., max = ... }}), got {_kind(value)}")
        kinds = {_value_kind(v) for v in value}
        if None in kinds:
            bad = next(v for v in value if _value_kind(v) is None)
            raise self.error(key, f"values must be booleans, numbers or strings, got "
                             f"{_kind(bad)}")
        if kinds == {"int", "float"}:
            kinds = {"float"}
            value = [float(v) for v in value]
        if len(kinds) != 1:
            raise self.error(key, f"values must all be of one type, got {sorted(kinds)}")
        if len(set(value)) != len(value):
            repeated = next(v for v in value if value.count(v) > 1)
            raise self.error(key, f"the value {repeated!r} is listed twice")
        return Parameter(name, kinds.pop(), values=tuple(value))

    def parameter_range(self, name: str, value: dict, sampled: bool) -> Parameter:
        key = ("parameters", name)
        if not sampled:
            raise self.error(key, "a range needs [sample] (a grid takes a list of values)")
        self.known(value, key, ("min", "max"))
        low, high = value.get("min"), value.get("max")
        for bound, which in ((low, "min"), (high, "max")):
            if isinstance(bound, bool) or not isinstance(bound, (int, float)):
                raise self.error((*key, which), f"must be a number, got {_kind(bound)}")
        if low > high:
            raise self.error(key, f"min ({low}) is greater than max ({high})")
        kind = "int" if isinstance(low, int) and isinstance(high, int) else "float"
        return Parameter(name, kind, low=low, high=high)

    def cost_models(self, value: Any) -> tuple[CostModel, ...]:
        key = ("backend", "cost")
        if value is None:
            return ()
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.error(key, "an empty list; leave the key out for the default model")
        models = []
        for item in items:
            if not isinstance(item, str) or not item.strip():
                raise self.error(key, "must be a cost library path or \"default\" (or a list "
                                 f"of them), got {_kind(item)}")
            if item == "default":
                models.append(CostModel("default"))
            else:
                path = self.existing_file(key, item)
                if path.suffix not in (".o", ".a", ".so"):
                    raise self.error(key, f"{item!r}: a cost library is an object file (.o), "
                                     "a static library (.a) or a shared library (.so)")
                models.append(CostModel(item, str(path)))
        labels = [m.label for m in models]
        if len(set(labels)) != len(labels):
            raise self.error(key, "a cost library is listed twice")
        return tuple(models)

    # -- [[kernels]] --------------------------------------------------------------------

    def kernels(self, value: Any) -> tuple[KernelSource, ...]:
        if value is None:
            raise self.error((), "no [[kernels]]: name at least one kernel to compile")
        if not isinstance(value, list) or not all(isinstance(k, dict) for k in value):
            raise self.error(("kernels",), "must be an array of tables ([[kernels]] entries)")
        kernels = [self.kernel(i, entry) for i, entry in enumerate(value)]
        seen: dict[str, int] = {}
        for i, kernel in enumerate(kernels):
            if kernel.name in seen:
                raise self.error(("kernels", i), f"a second kernel named {kernel.name!r} "
                                 f"(the first is [[kernels]] {seen[kernel.name] + 1}); give "
                                 "one of them name = \"...\"")
            seen[kernel.name] = i
        return tuple(kernels)

    def kernel(self, index: int, entry: dict) -> KernelSource:
        key: KeyPath = ("kernels", index)
        self.known(entry, key, ("name", "hlo", "jax", "args"))
        name = self.string(entry, (*key, "name"))
        hlo = self.string(entry, (*key, "hlo"))
        jax = self.string(entry, (*key, "jax"))
        if (hlo is None) == (jax is None):
            raise self.error(key, "give an HLO file (hlo = \"kernel.hlo\") or a JAX function "
                             "(jax = \"file.py:function\", with args), one of the two")
        if hlo is not None:
            if "args" in entry:
                raise self.error((*key, "args"), "an HLO kernel's inputs are its parameters; "
                                 "args is for JAX functions")
            return self.hlo_kernel(key, name, hlo)
        return self.jax_kernel(key, name, jax, entry.get("args"))

    def hlo_kernel(self, key: KeyPath, name: str | None, value: str) -> KernelSource:
        from act_backend.kernel import HloSyntaxError, parse_hlo

        path = self.existing_file((*key, "hlo"), value)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise self.error((*key, "hlo"), f"cannot read {path}: {e}") from e
        try:
            parse_hlo(text, str(path))
        except HloSyntaxError as e:
            raise self.error((*key, "hlo"), f"the kernel does not parse: {e}") from None
        return KernelSource(name or path.stem, hlo=text, path=str(path))

    def jax_kernel(self, key: KeyPath, name: str | None, value: str, args: Any
                   ) -> KernelSource:
        where, _, function = value.rpartition(":")
        if not where or not function.isidentifier():
            raise self.error((*key, "jax"), f"{value!r}: expected file.py:function or "
                             "module:function")
        if not isinstance(args, list):
            raise self.error((*key, "args") if args is not None else key,
                             "a JAX kernel needs args = [\"bf16[64,64]\", ...], one example "
                             "argument per parameter")
        specs = tuple(self.arg(key, i, a) for i, a in enumerate(args))
        if where.endswith(".py"):
            path = self.existing_file((*key, "jax"), where)
            return KernelSource(name or function, function=function, file=str(path),
                                args=specs)
        return KernelSource(name or function, function=function, module=where, args=specs)

    def arg(self, key: KeyPath, index: int, value: Any) -> ArgSpec:
        from act_backend.hlo.dtypes import is_known

        match = _ARG.match(value) if isinstance(value, str) else None
        if match is None:
            raise self.error((*key, "args"), f"argument {index + 1}: expected an element type "
                             f"and a shape such as \"bf16[64,64]\", got {value!r}")
        dtype = match.group(1)
        if not is_known(dtype):
            raise self.error((*key, "args"), f"argument {index + 1}: unknown element type "
                             f"{dtype!r} (HLO names: bf16, f32, s8, s32, pred, ...)")
        dims = tuple(int(d) for d in match.group(2).split(",")) if match.group(2).strip() \
            else ()
        return ArgSpec(dtype, dims)

    # -- the user's code ----------------------------------------------------------------

    def check_spec_function(self, sweep: Sweep) -> None:
        ref = sweep.spec
        try:
            function = load_function(ref.function, file=ref.file, module=ref.module)
        except (ImportError, AttributeError, TypeError) as e:
            raise self.error(("spec", "function"), f"cannot load the spec function: {e}") \
                from e
        try:
            signature = inspect.signature(function)
        except (TypeError, ValueError):
            return  # a builtin or C function: calling it will tell
        names = [p.name for p in sweep.parameters]
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD
                        for p in signature.parameters.values())
        for name in names:
            accepted = signature.parameters.get(name)
            if not takes_any and (accepted is None or accepted.kind in (
                    inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)):
                raise self.error(("parameters", name), f"the spec function "
                                 f"{ref.function}{signature} takes no parameter {name!r}")
        for parameter in signature.parameters.values():
            required = parameter.default is inspect.Parameter.empty and parameter.kind in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
            if required and parameter.name not in names:
                raise self.error(("parameters",) if names else ("spec", "function"),
                                 f"the spec function {ref.function}{signature} needs "
                                 f"{parameter.name!r}, which [parameters] does not give")

    def check_jax_kernels(self, sweep: Sweep) -> None:
        for index, kernel in enumerate(sweep.kernels):
            if not kernel.is_jax:
                continue
            try:
                load_function(kernel.function, file=kernel.file, module=kernel.module)
            except (ImportError, AttributeError, TypeError) as e:
                raise self.error(("kernels", index, "jax"),
                                 f"cannot load the kernel's function: {e}") from e


def _value_kind(value: Any) -> str | None:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float" if math.isfinite(value) else None
    if isinstance(value, str):
        return "str"
    return None


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    if isinstance(value, str):
        return f"a string ({value!r})"
    if isinstance(value, list):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__
