"""Every check a kernel must pass, as data: ``check_hlo(text) -> list[Problem]``.

Syntax, unknown operators and attributes, undefined operands, ENTRY/ROOT/parameter
structure, computation signatures and the header's ``entry_computation_layout``, reducer and
callee signatures, and the shape and element-type rules of ``act_backend.hlo.infer``, each
reported at the span of what is wrong. ``load_kernel(path)`` is the same pipeline for the
command line: it returns the module or raises the first error as ``file:line:col: message``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from act_backend.hlo import vocabulary
from act_backend.hlo.dtypes import INT_DTYPES
from act_backend.hlo.infer import HloTypeError, infer_type
from act_backend.hlo.ir import (
    Computation,
    HloType,
    Instruction,
    Module,
    Span,
    TensorType,
    TupleType,
)
from act_backend.kernel.errors import HloSyntaxError, KernelError
from act_backend.kernel.opcodes import (
    REFUSED_OPCODES,
    STRUCTURAL_OPCODES,
    SUPPORTED_OPCODES,
    supported_list,
)
from act_backend.kernel.parser import Declarations, parse_with_declarations
from act_backend.validation import Problem


def check_hlo(text: str, file: str | None = None) -> list[Problem]:
    """All problems of the kernel in ``text``, ordered by position."""
    try:
        module, declarations = parse_with_declarations(text, file)
    except HloSyntaxError as err:
        return [Problem("error", err.code, err.message, err.span)]
    return check_module(module, declarations)


def check_module(module: Module, declarations: Declarations | None = None) -> list[Problem]:
    """All problems of a parsed kernel, ordered by position; ``declarations`` (from
    ``parse_with_declarations``) adds the checks of written operand types and signatures."""
    problems = list(_ModuleChecker(module, declarations or Declarations()).problems())
    return sorted(problems, key=lambda p: (p.span.line, p.span.column) if p.span else (0, 0))


def load_kernel(path: str | Path) -> Module:
    """Parse and check the kernel at ``path``; raise its first error as ``KernelError``
    (``HloSyntaxError`` for text that does not parse), ``file:line:col: message``."""
    file = str(path)
    module, declarations = parse_with_declarations(Path(path).read_text(), file)
    for problem in check_module(module, declarations):
        if problem.severity == "error":
            span = problem.span or Span(file, 1, 1, 1, 1)
            raise KernelError.at(span, problem.message, problem.code)
    return module


class _ModuleChecker:
    def __init__(self, module: Module, declarations: Declarations) -> None:
        self.module = module
        self.declarations = declarations
        self.file = _file_of(module)
        self.by_name: dict[str, Computation] = {}
        for comp in module.computations:
            self.by_name.setdefault(comp.name, comp)

    def problem(self, code: str, message: str, span: Span | None) -> Problem:
        return Problem("error", code, message, span)

    def problems(self) -> Iterator[Problem]:
        yield from self.module_structure()
        yield from self.entry_layout()
        for comp in self.module.computations:
            yield from self.computation(comp)
        yield from self.recursion()

    # -- module ------------------------------------------------------------------------

    def module_structure(self) -> Iterator[Problem]:
        comps = self.module.computations
        if not comps:
            yield self.problem("missing-entry", "the module has no computation; a kernel is "
                               "an 'ENTRY' computation (and the reducers it uses)",
                               Span(self.file, 1, 1, 1, 1))
            return
        entries = [c for c in comps if c.is_entry]
        if not entries:
            yield self.problem("missing-entry", "no computation is marked ENTRY; write "
                               f"'ENTRY {comps[-1].name}' for the kernel's main computation",
                               comps[-1].span)
        for extra in entries[1:]:
            yield self.problem("duplicate-entry", f"computation '{extra.name}' is a second "
                               f"ENTRY; '{entries[0].name}' is already the kernel's entry",
                               extra.span)
        seen: set[str] = set()
        for comp in comps:
            if comp.name in seen:
                yield self.problem("duplicate-computation", f"a computation named "
                                   f"'{comp.name}' is already defined", comp.span)
            seen.add(comp.name)

    def entry_layout(self) -> Iterator[Problem]:
        """The header's ``entry_computation_layout`` must be the ENTRY's parameter and result
        types (XLA's verifier holds it to them; the layouts themselves are not compared)."""
        layout = self.declarations.entry_layout
        entries = [c for c in self.module.computations if c.is_entry]
        if layout is None or len(entries) != 1:
            return
        entry = entries[0]
        params = entry.parameters()
        if len(layout.params) != len(params):
            yield self.problem("entry-layout-mismatch", f"entry_computation_layout lists "
                               f"{len(layout.params)} parameter(s) but the ENTRY computation "
                               f"'{entry.name}' has {len(params)}", layout.span)
            return
        by_index = _by_index(params)
        for index, (declared, span) in enumerate(layout.params):
            param = by_index.get(index)
            if param is not None and param.type != declared:
                yield self.problem("entry-layout-mismatch", f"entry_computation_layout gives "
                                   f"parameter {index} the type {declared}, but '{param.name}' "
                                   f"of the ENTRY computation is {param.type}", span)
        roots = [i for i in entry.instructions if i.is_root]
        if len(roots) == 1 and roots[0].type != layout.result:
            yield self.problem("entry-layout-mismatch", f"entry_computation_layout gives the "
                               f"result the type {layout.result}, but ROOT '{roots[0].name}' "
                               f"of the ENTRY computation is {roots[0].type}",
                               layout.result_span)

    def recursion(self) -> Iterator[Problem]:
        """A computation may not apply itself, directly or through others."""
        calls = {c.name: [i for i in c.instructions if isinstance(i.attrs.get("to_apply"), str)]
                 for c in self.module.computations}
        state: dict[str, str] = {}
        found: list[Problem] = []

        def visit(name: str) -> None:
            state[name] = "open"
            for instr in calls[name]:
                callee = instr.attrs["to_apply"]
                if state.get(callee) == "open":
                    found.append(self.problem(
                        "recursive-call", f"'{instr.name}' applies computation '{callee}', "
                        "which is already being applied: computations may not be recursive",
                        instr.spans.get("attr:to_apply", instr.span)))
                elif callee in calls and callee not in state:
                    visit(callee)
            state[name] = "closed"

        for name in calls:
            if name not in state:
                visit(name)
        yield from found

    # -- computations ------------------------------------------------------------------

    def computation(self, comp: Computation) -> Iterator[Problem]:
        roots = [i for i in comp.instructions if i.is_root]
        if not comp.instructions:
            yield self.problem("missing-root", f"computation '{comp.name}' has no "
                               "instructions", comp.span)
        elif not roots:
            yield self.problem("missing-root", f"computation '{comp.name}' has no ROOT "
                               "instruction; mark the instruction whose value it returns "
                               "with ROOT", comp.span)
        for extra in roots[1:]:
            yield self.problem("duplicate-root", f"'{extra.name}' is a second ROOT of "
                               f"computation '{comp.name}'; '{roots[0].name}' is already "
                               "its ROOT", extra.spans["name"])
        yield from self.parameters(comp)
        yield from self.signature(comp, roots[0] if len(roots) == 1 else None)

        where_defined = {}
        for instr in comp.instructions:
            where_defined.setdefault(instr.name, instr)
        defined: dict[str, Instruction] = {}
        for instr in comp.instructions:
            if instr.name in defined:
                first = defined[instr.name]
                yield self.problem("duplicate-instruction", f"'{instr.name}' is already "
                                   f"defined in computation '{comp.name}' (line "
                                   f"{first.spans['name'].line})", instr.spans["name"])
            yield from self.instruction(comp, instr, defined, where_defined)
            defined.setdefault(instr.name, instr)

    def parameters(self, comp: Computation) -> Iterator[Problem]:
        by_index: dict[int, Instruction] = {}
        for param in (i for i in comp.instructions if i.opcode == "parameter"):
            index = param.attrs.get("index")
            if index in by_index:
                yield self.problem("duplicate-parameter", f"parameter '{param.name}' reuses "
                                   f"index {index} of '{by_index[index].name}' in computation "
                                   f"'{comp.name}'",
                                   param.spans.get("attr:index", param.spans["name"]))
                continue
            by_index[index] = param
        missing = [k for k in range(len(by_index)) if k not in by_index]
        if missing:
            yield self.problem("missing-parameter", f"computation '{comp.name}' numbers its "
                               f"parameters {sorted(by_index)}; they must be 0 to "
                               f"{len(by_index) - 1}, and {missing[0]} is missing", comp.span)

    def signature(self, comp: Computation, root: Instruction | None) -> Iterator[Problem]:
        """A written signature must agree with the parameters and the ROOT."""
        signature = self.declarations.signature(comp)
        if signature is None:
            return
        params = comp.parameters()
        if len(signature.params) != len(params):
            yield self.problem("signature-mismatch", f"computation '{comp.name}' declares "
                               f"{len(signature.params)} parameter(s) but defines "
                               f"{len(params)}", signature.span)
            return
        by_index = _by_index(params)
        for index, (name, declared, span) in enumerate(signature.params):
            param = by_index.get(index)
            if param is None:
                continue
            if param.name != name:
                yield self.problem("signature-mismatch", f"computation '{comp.name}' declares "
                                   f"parameter {index} as '{name}', but parameter({index}) is "
                                   f"named '{param.name}'", span)
            elif param.type != declared:
                yield self.problem("signature-mismatch", f"computation '{comp.name}' declares "
                                   f"parameter {index} as {declared}, but '{param.name}' is "
                                   f"{param.type}", span)
        if root is not None and root.type != signature.result:
            yield self.problem("signature-mismatch", f"computation '{comp.name}' declares its "
                               f"result as {signature.result}, but ROOT '{root.name}' is "
                               f"{root.type}", signature.result_span)

    # -- instructions ------------------------------------------------------------------

    def instruction(self, comp: Computation, instr: Instruction,
                    defined: dict[str, Instruction],
                    where_defined: dict[str, Instruction]) -> Iterator[Problem]:
        if instr.opcode in REFUSED_OPCODES:
            yield self.problem("unsupported-operator", f"'{instr.name}' uses {instr.opcode}, "
                               f"an XLA operator kernels may not use yet; supported operators: "
                               f"{supported_list()}", instr.spans["opcode"])
            return
        if instr.opcode not in SUPPORTED_OPCODES:
            yield self.problem("unknown-operator", f"unknown operator '{instr.opcode}' in "
                               f"'{instr.name}'; supported operators: {supported_list()}",
                               instr.spans["opcode"])
            return
        yield from self.attributes(instr)
        operand_types: list[HloType] = []
        contradicted = False
        for index, name in enumerate(instr.operands):
            if name in defined:
                actual = defined[name].type
                written = self.declarations.operand_type(instr, index)
                if written is not None and written != actual:
                    yield self.problem("operand-type-mismatch", f"operand {index} of "
                                       f"'{instr.name}' is written as {written}, but '{name}' "
                                       f"is {actual}",
                                       instr.spans.get(f"operand:{index}", instr.span))
                    contradicted = True
                operand_types.append(actual)
                continue
            span = instr.spans.get(f"operand:{index}", instr.span)
            later = where_defined.get(name)
            if later is not None and later is not instr:
                yield self.problem("undefined-operand", f"operand {index} of '{instr.name}', "
                                   f"'{name}', is defined later (line "
                                   f"{later.spans['name'].line}); define a value before its "
                                   "first use", span)
            else:
                yield self.problem("undefined-operand", f"operand {index} of '{instr.name}', "
                                   f"'{name}', is not defined in computation '{comp.name}'",
                                   span)
        if len(operand_types) != len(instr.operands) or contradicted:
            # Typing against operands the text contradicts would only repeat the problem.
            return
        if instr.opcode in STRUCTURAL_OPCODES:
            yield from self.structural(instr, operand_types)
            return
        yield from self.typed(instr, operand_types)

    def attributes(self, instr: Instruction) -> Iterator[Problem]:
        """An attribute the operator does not take is refused: it could change the meaning.
        The vocabulary says which it takes (its own, and those any instruction may carry)."""
        accepted = vocabulary.kernel_attributes(instr.opcode)
        for name, span in self.declarations.written_attributes(instr):
            if name not in accepted:
                yield self.problem("unknown-attribute", f"{instr.opcode} '{instr.name}' does "
                                   f"not take the attribute '{name}' (accepted: "
                                   f"{_attribute_listing(instr.opcode)})", span)

    def typed(self, instr: Instruction, operand_types: list[HloType]) -> Iterator[Problem]:
        """The array-typed operators: act_backend.hlo.infer's rules, plus the reducer."""
        for index, t in enumerate(operand_types):
            if isinstance(t, TupleType):
                yield self.problem("operand-type-mismatch", f"operand {index} of "
                                   f"'{instr.name}' is the tuple {t}; take an element with "
                                   "get-tuple-element first",
                                   instr.spans.get(f"operand:{index}", instr.span))
                return
        if isinstance(instr.type, TupleType):
            if instr.opcode in ("reduce", "reduce_window"):
                yield self.problem("variadic-reduce", f"{instr.opcode} '{instr.name}' is declared "
                                   f"{instr.type}: a variadic reduce (several operands "
                                   "reduced together) is not supported", instr.spans["type"])
            else:
                yield self.problem("declared-type-mismatch", f"{instr.opcode} "
                                   f"'{instr.name}' is declared {instr.type}, but it "
                                   "produces an array, not a tuple", instr.spans["type"])
            return
        if instr.opcode == "constant":
            wrong = _literal_problem(instr.attrs.get("value"), instr.type)
            if wrong is not None:
                yield self.problem("bad-attribute", f"constant '{instr.name}': {wrong}",
                                   instr.spans.get("attr:value", instr.spans["opcode"]))
                return
        try:
            infer_type(instr, operand_types)
        except HloTypeError as err:
            yield self.problem(err.code, err.message,
                               instr.spans.get(err.where, instr.spans["opcode"]))
            return
        if instr.opcode in ("reduce", "reduce_window"):
            yield from self.reducer(instr, operand_types)

    def callee(self, instr: Instruction) -> tuple[Computation | None, Problem | None]:
        name = instr.attrs.get("to_apply")
        span = instr.spans.get("attr:to_apply", instr.spans["opcode"])
        if not isinstance(name, str):
            return None, self.problem("missing-attribute", f"{instr.opcode} '{instr.name}' "
                                      "needs to_apply=<computation>", span)
        comp = self.by_name.get(name)
        if comp is None:
            return None, self.problem("unknown-computation", f"{instr.opcode} "
                                      f"'{instr.name}' applies computation '{name}', which "
                                      "is not defined", span)
        if comp.is_entry:
            return None, self.problem("unknown-computation", f"{instr.opcode} "
                                      f"'{instr.name}' applies the ENTRY computation "
                                      f"'{name}'", span)
        return comp, None

    def reducer(self, instr: Instruction, operand_types: list[HloType]) -> Iterator[Problem]:
        region, bad = self.callee(instr)
        if bad is not None:
            yield bad
            return
        if not region.instructions:
            return
        scalar = TensorType(operand_types[1].dtype, ())
        params = region.parameters()
        found = "(" + ", ".join(str(p.type) for p in params) + f") -> {region.root.type}"
        if len(params) != 2 or any(p.type != scalar for p in params) \
                or region.root.type != scalar:
            yield self.problem("reducer-signature", f"{instr.opcode} '{instr.name}' applies "
                               f"'{region.name}', which must take two {scalar} parameters "
                               f"and return {scalar}; it is {found}",
                               instr.spans.get("attr:to_apply", instr.spans["opcode"]))

    def structural(self, instr: Instruction,
                   operand_types: list[HloType]) -> Iterator[Problem]:
        """tuple, get-tuple-element and call, which infer does not type."""
        if instr.opcode == "tuple":
            inferred: HloType | None = TupleType(tuple(operand_types))
        elif instr.opcode == "get_tuple_element":
            inferred = None
            index = instr.attrs.get("index")
            if len(operand_types) != 1 or not isinstance(operand_types[0], TupleType):
                yield self.problem("operand-type-mismatch", f"get-tuple-element "
                                   f"'{instr.name}' takes one tuple operand",
                                   instr.spans.get("operand:0", instr.spans["opcode"]))
                return
            elements = operand_types[0].elements
            if not isinstance(index, int) or not 0 <= index < len(elements):
                yield self.problem("bad-attribute", f"get-tuple-element '{instr.name}' needs "
                                   f"index=<0..{len(elements) - 1}> for the tuple "
                                   f"{operand_types[0]}, found {index!r}",
                                   instr.spans.get("attr:index", instr.spans["opcode"]))
                return
            inferred = elements[index]
        else:
            callee, bad = self.callee(instr)
            if bad is not None:
                yield bad
                return
            params = callee.parameters()
            if len(params) != len(operand_types):
                yield self.problem("operand-count", f"call '{instr.name}' passes "
                                   f"{len(operand_types)} operands to '{callee.name}', which "
                                   f"takes {len(params)}", instr.spans["opcode"])
                return
            for index, (param, t) in enumerate(zip(params, operand_types, strict=True)):
                if param.type != t:
                    yield self.problem("operand-type-mismatch", f"operand {index} of call "
                                       f"'{instr.name}' is {t}, but parameter {index} of "
                                       f"'{callee.name}' is {param.type}",
                                       instr.spans.get(f"operand:{index}", instr.span))
                    return
            inferred = callee.root.type if callee.instructions else None
        if inferred is not None and inferred != instr.type:
            yield self.problem("declared-type-mismatch", f"{instr.opcode} '{instr.name}' is "
                               f"declared {instr.type} but produces {inferred}",
                               instr.spans["type"])


def _attribute_listing(opcode: str) -> str:
    """The attributes ``opcode`` takes, for messages: its own first, then the generic ones."""
    generic = ", ".join(sorted(vocabulary.GENERIC_KERNEL_ATTRIBUTES))
    own = sorted(vocabulary.kernel_attributes(opcode) - set(vocabulary.GENERIC_KERNEL_ATTRIBUTES))
    return (f"{', '.join(own)}; and on any instruction: {generic}" if own
            else f"none of its own; on any instruction: {generic}")


def _by_index(params: list[Instruction]) -> dict[int, Instruction]:
    """Parameters by index; empty when the indices are not 0..n-1 once each (that is
    reported on its own, and comparing by index would only repeat it)."""
    by_index = {p.attrs.get("index"): p for p in params}
    return by_index if sorted(by_index) == list(range(len(params))) else {}


def _literal_problem(value, declared: TensorType) -> str | None:
    """What XLA's parser refuses in a kernel constant that type inference lets through (a
    scalar fills a shape, and any number fits, in TAIDL semantics)."""
    if declared.shape and not isinstance(value, list):
        return (f"the literal {value!r} is a scalar but the declared type {declared} has rank "
                f"{len(declared.shape)}; write one nested '{{...}}' list per dimension")
    if declared.dtype in INT_DTYPES or declared.dtype == "pred":
        for number in _numbers(value):
            if isinstance(number, float) and not number.is_integer():
                return f"{number} is not a value of {declared.dtype}"
    return None


def _numbers(value) -> Iterator:
    if isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    else:
        yield value


def _file_of(module: Module) -> str | None:
    for comp in module.computations:
        if comp.span is not None:
            return comp.span.file
    return None
