"""Read a TAIDL spec without running it: which TAIDL API calls it makes, with what values.

A spec is ordinary Python, and running it executes user code, which the server only does
when the workspace opts in (``act.executeSpecs``). Without that, this module walks the
module-level statements with a small, budgeted evaluator that understands literals,
names bound to literals, ``for`` loops over literal sequences, ``str.format`` and simple
arithmetic, and records every call on an ``Accelerator`` or on an instruction it created.

The result is a list of ``ApiCall`` records; ``replay`` turns them into real
``act_backend.spec`` objects so the real validation code can check them. A call whose
arguments depend on anything the evaluator cannot know (a user function, a file read) is
recorded as *opaque*, and the object it concerns is marked incomplete, so callers can tell
"checked" from "could not be read statically".
"""

from __future__ import annotations

import ast
import string
from dataclasses import dataclass, field
from typing import Any

# Budgets keep a pathological file (a loop over range(10**9), a huge literal product)
# from making the server itself slow: reading stops and says so.
MAX_STATEMENTS = 20_000
MAX_LOOP_ITERATIONS = 1_000
MAX_SEQUENCE = 10_000
MAX_STRING = 1_000_000


class _Unknown:
    """A value the static reader cannot determine."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()


class BudgetExceeded(Exception):
    """The reader gave up: the file does more work at module level than it reads."""


@dataclass(eq=False)
class Ref:
    """An object built by a TAIDL API call: an accelerator or an instruction."""

    kind: str  # "accelerator" | "instruction"
    created_by: ApiCall
    accelerator: Ref | None = None  # for instructions: the accelerator they belong to
    incomplete: bool = False  # some call on it could not be read statically

    def mark_incomplete(self) -> None:
        self.incomplete = True
        if self.accelerator is not None:
            self.accelerator.incomplete = True


@dataclass(eq=False)
class ApiCall:
    """One call of the TAIDL API found in the spec."""

    node: ast.Call
    method: str  # "Accelerator" for the constructor, else the method name
    receiver: Ref | None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    # Where each argument value came from: a str constant node when the value is that
    # literal's text unchanged (so positions inside it can be mapped), else None.
    literal_args: dict[int | str, ast.Constant] = field(default_factory=dict)
    opaque: bool = False  # some argument could not be determined
    result: Ref | None = None


@dataclass
class SpecReading:
    calls: list[ApiCall]
    accelerators: list[Ref]
    gave_up: str | None = None  # why reading stopped early, if it did


@dataclass
class _Bound:
    value: Any
    literal: ast.Constant | None = None


class _Reader:
    def __init__(self) -> None:
        self.env: dict[str, _Bound] = {"__name__": _Bound("__main__")}
        self.calls: list[ApiCall] = []
        self.accelerators: list[Ref] = []
        self.statements = 0
        self.iterations = 0

    # ---- statements -------------------------------------------------------------------

    def run(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statements += 1
            if self.statements > MAX_STATEMENTS:
                raise BudgetExceeded(f"more than {MAX_STATEMENTS} statements at module level")
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Expr):
            self.expr(stmt.value)
        elif isinstance(stmt, ast.Assign):
            bound = self.bound(stmt.value)
            for target in stmt.targets:
                self.assign(target, bound)
        elif isinstance(stmt, ast.AnnAssign):
            if stmt.value is not None:
                self.assign(stmt.target, self.bound(stmt.value))
        elif isinstance(stmt, ast.AugAssign):
            self.expr(stmt.value)
            self.forget(stmt.target)
        elif isinstance(stmt, ast.For):
            self.for_loop(stmt)
        elif isinstance(stmt, ast.If):
            test = self.expr(stmt.test)
            if test is UNKNOWN:
                # Both branches may run: read both, but what either binds is uncertain.
                self.run(stmt.body)
                self.run(stmt.orelse)
            elif test:
                self.run(stmt.body)
            else:
                self.run(stmt.orelse)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            self.run(stmt.body)
        elif isinstance(stmt, ast.Try):
            self.run(stmt.body)
            self.run(stmt.orelse)
            self.run(stmt.finalbody)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            for alias in stmt.names:
                self.env.pop((alias.asname or alias.name).split(".")[0], None)
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.env.pop(stmt.name, None)
            # A function body may use any module-level object later: whatever it
            # mentions can change in ways the reader does not follow.
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name):
                    self.escape(self.env.get(node.id))
        elif isinstance(stmt, ast.While):
            # A while loop's trip count is unknown: everything it touches is uncertain.
            for node in ast.walk(stmt):
                if isinstance(node, ast.Name):
                    self.escape(self.env.get(node.id))
                    if isinstance(node.ctx, ast.Store):
                        self.env.pop(node.id, None)
        # Other statements (pass, assert, global, delete...) bind nothing we track.

    def for_loop(self, stmt: ast.For) -> None:
        iterable = self.expr(stmt.iter)
        if isinstance(iterable, (list, tuple, str, range)) and len(iterable) <= MAX_SEQUENCE:
            for item in iterable:
                self.iterations += 1
                if self.iterations > MAX_LOOP_ITERATIONS:
                    raise BudgetExceeded(f"more than {MAX_LOOP_ITERATIONS} loop iterations")
                self.assign(stmt.target, _Bound(item))
                self.run(stmt.body)
            self.run(stmt.orelse)
            return
        # Unknown trip count: read the body once with the loop variables unknown, so
        # that the calls inside are still seen, and mark what they build incomplete.
        self.assign(stmt.target, _Bound(UNKNOWN))
        before = len(self.calls)
        self.run(stmt.body)
        for call in self.calls[before:]:
            call.opaque = True
            for ref in (call.receiver, call.result):
                if ref is not None:
                    ref.mark_incomplete()

    def assign(self, target: ast.expr, bound: _Bound) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = bound
        elif isinstance(target, (ast.Tuple, ast.List)):
            value = bound.value
            if isinstance(value, (list, tuple)) and len(value) == len(target.elts):
                for sub, item in zip(target.elts, value, strict=True):
                    self.assign(sub, _Bound(item))
            else:
                self.escape(value)
                for sub in target.elts:
                    self.forget(sub)
        else:
            # Stored into an attribute or a container: we stop following the value.
            self.escape(bound.value)
            self.forget(target)

    def forget(self, target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = _Bound(UNKNOWN)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for sub in target.elts:
                self.forget(sub)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            self.forget(target.value)

    def escape(self, value: Any) -> None:
        """A value reached code the reader does not follow: what it refers to may change."""
        if isinstance(value, _Bound):
            value = value.value
        if isinstance(value, Ref):
            value.mark_incomplete()
        elif isinstance(value, (list, tuple)):
            for item in value:
                self.escape(item)
        elif isinstance(value, dict):
            for item in value.values():
                self.escape(item)

    # ---- expressions ------------------------------------------------------------------

    def bound(self, node: ast.expr) -> _Bound:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return _Bound(node.value, node)
        if isinstance(node, ast.Name) and node.id in self.env:
            return self.env[node.id]
        return _Bound(self.expr(node))

    def expr(self, node: ast.expr) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            bound = self.env.get(node.id)
            return bound.value if bound is not None else UNKNOWN
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.expr(e) for e in node.elts]
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return UNKNOWN
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):
                return UNKNOWN
            keys = [self.expr(k) for k in node.keys if k is not None]
            values = [self.expr(v) for v in node.values]
            if any(k is UNKNOWN or not _hashable(k) for k in keys):
                return UNKNOWN
            return dict(zip(keys, values, strict=True))
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return _binop(node.op, self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.UnaryOp):
            return _unaryop(node.op, self.expr(node.operand))
        if isinstance(node, ast.Compare):
            return _compare(node, [self.expr(node.left)] + [self.expr(c) for c in node.comparators])
        if isinstance(node, ast.Subscript):
            return _subscript(self.expr(node.value), self.expr(node.slice))
        if isinstance(node, ast.JoinedStr):
            return self.fstring(node)
        # Anything else may run user code; still look inside for API objects that escape.
        for child in ast.walk(node):
            if isinstance(child, ast.Name):
                self.escape(self.env.get(child.id))
        return UNKNOWN

    def fstring(self, node: ast.JoinedStr) -> Any:
        parts: list[str] = []
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
                continue
            if not isinstance(value, ast.FormattedValue) or value.format_spec is not None:
                return UNKNOWN
            inner = self.expr(value.value)
            if not isinstance(inner, (str, int)) or value.conversion not in (-1, ord("s")):
                return UNKNOWN
            parts.append(str(inner))
        return _limit("".join(parts))

    def call(self, node: ast.Call) -> Any:
        func = node.func
        receiver: Any = None
        if isinstance(func, ast.Attribute):
            receiver = self.expr(func.value)
            name = func.attr
            if isinstance(receiver, str) and name == "format":
                return self.format_call(receiver, node)
        elif isinstance(func, ast.Name):
            name = func.id
        else:
            name = ""
        if isinstance(receiver, Ref):
            return self.api_call(node, name, receiver)
        if name == "Accelerator":
            return self.api_call(node, "Accelerator", None)
        if name in GENERATORS:
            # The generators only read the accelerator; recorded for the code lenses.
            self.api_call(node, name, None)
            return UNKNOWN
        if isinstance(func, ast.Name) and func.id in _READ_ONLY_BUILTINS:
            for arg in node.args:
                self.expr(arg)
            return UNKNOWN
        if isinstance(func, ast.Name) and func.id in ("range", "len", "str", "int") and (
            not node.keywords
        ):
            return _builtin(func.id, [self.expr(a) for a in node.args])
        # A call into code we do not follow: every API object handed to it escapes.
        for arg in list(node.args) + [k.value for k in node.keywords]:
            self.escape(self.expr(arg))
        if isinstance(func, ast.Attribute):
            self.escape(receiver)
        return UNKNOWN

    def format_call(self, template: str, node: ast.Call) -> Any:
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords if k.arg is not None}
        if any(k.arg is None for k in node.keywords) or any(
            not isinstance(v, (str, int)) for v in list(args) + list(kwargs.values())
        ):
            return UNKNOWN
        try:
            # Only plain replacement fields: a format spec like {:100000000} could make
            # the server allocate without bound.
            for _, _, spec, conversion in string.Formatter().parse(template):
                if spec or conversion:
                    return UNKNOWN
            return _limit(template.format(*args, **kwargs))
        except (IndexError, KeyError, ValueError, AttributeError):
            return UNKNOWN

    def api_call(self, node: ast.Call, method: str, receiver: Ref | None) -> Any:
        call = ApiCall(node=node, method=method, receiver=receiver)
        for index, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                call.opaque = True
                continue
            bound = self.bound(arg)
            call.args.append(bound.value)
            if bound.literal is not None:
                call.literal_args[index] = bound.literal
        for keyword in node.keywords:
            if keyword.arg is None:
                call.opaque = True
                continue
            bound = self.bound(keyword.value)
            call.kwargs[keyword.arg] = bound.value
            if bound.literal is not None:
                call.literal_args[keyword.arg] = bound.literal
        if any(_contains_unknown(v) for v in list(call.args) + list(call.kwargs.values())):
            call.opaque = True
        self.calls.append(call)
        if method == "Accelerator":
            ref = Ref("accelerator", call)
            self.accelerators.append(ref)
            call.result = ref
            if call.opaque:
                ref.mark_incomplete()
            return ref
        if receiver is None:
            return UNKNOWN
        if call.opaque:
            receiver.mark_incomplete()
        if method == "add_instruction" and receiver.kind == "accelerator":
            ref = Ref("instruction", call, accelerator=receiver)
            if call.opaque:
                ref.mark_incomplete()
            call.result = ref
            return ref
        return UNKNOWN


GENERATORS = ("generate_backend", "generate_oracle")

# Builtins that only look at their arguments: handing an API object to them is harmless.
_READ_ONLY_BUILTINS = frozenset({"print", "repr", "isinstance", "type", "id", "hash"})


def read_spec(tree: ast.Module) -> SpecReading:
    """Read the TAIDL API calls of a parsed spec (see the module docstring)."""
    reader = _Reader()
    gave_up = None
    try:
        reader.run(tree.body)
    except BudgetExceeded as exc:
        gave_up = str(exc)
        for ref in reader.accelerators:
            ref.mark_incomplete()
    except RecursionError:
        gave_up = "the file nests expressions too deeply to read"
        for ref in reader.accelerators:
            ref.mark_incomplete()
    return SpecReading(reader.calls, reader.accelerators, gave_up)


def _hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def _contains_unknown(value: Any) -> bool:
    if value is UNKNOWN or isinstance(value, (Ref, range)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_contains_unknown(v) for v in value)
    if isinstance(value, dict):
        return any(_contains_unknown(v) for v in value.values())
    return False


def _limit(value: Any) -> Any:
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_STRING:
        return UNKNOWN
    return value


def _small_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value.bit_length() <= 64


def _binop(op: ast.operator, left: Any, right: Any) -> Any:
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    if _small_int(left) and _small_int(right):
        try:
            if isinstance(op, ast.Add):
                return left + right
            if isinstance(op, ast.Sub):
                return left - right
            if isinstance(op, ast.Mult):
                return left * right
            if isinstance(op, ast.FloorDiv):
                return left // right
            if isinstance(op, ast.Mod):
                return left % right
            if isinstance(op, ast.Pow) and 0 <= right <= 64 and abs(left) < 2**16:
                return left**right
        except ZeroDivisionError:
            return UNKNOWN
        return UNKNOWN
    same_sequence = type(left) is type(right) and isinstance(left, (str, list, tuple))
    if isinstance(op, ast.Add) and same_sequence:
        if len(left) + len(right) <= MAX_STRING:
            return left + right
        return UNKNOWN
    if isinstance(op, ast.Mult):
        seq, count = (left, right) if _small_int(right) else (right, left)
        if isinstance(seq, (str, list, tuple)) and _small_int(count):
            if 0 <= count and len(seq) * count <= MAX_SEQUENCE:
                return seq * count
    if isinstance(op, ast.Mod) and isinstance(left, str) and isinstance(right, (str, int, tuple)):
        if "*" in left:  # a "*" width could allocate without bound
            return UNKNOWN
        try:
            return _limit(left % right)
        except (TypeError, ValueError, KeyError):
            return UNKNOWN
    return UNKNOWN


def _unaryop(op: ast.unaryop, operand: Any) -> Any:
    if isinstance(op, ast.USub) and _small_int(operand):
        return -operand
    if isinstance(op, ast.UAdd) and _small_int(operand):
        return operand
    if isinstance(op, ast.Not) and operand is not UNKNOWN:
        return not operand
    return UNKNOWN


def _compare(node: ast.Compare, values: list[Any]) -> Any:
    if any(v is UNKNOWN or isinstance(v, Ref) for v in values):
        return UNKNOWN
    for op, left, right in zip(node.ops, values, values[1:], strict=False):
        try:
            if isinstance(op, ast.Eq):
                ok = left == right
            elif isinstance(op, ast.NotEq):
                ok = left != right
            elif isinstance(op, ast.Lt):
                ok = left < right
            elif isinstance(op, ast.LtE):
                ok = left <= right
            elif isinstance(op, ast.Gt):
                ok = left > right
            elif isinstance(op, ast.GtE):
                ok = left >= right
            elif isinstance(op, ast.In):
                ok = left in right
            elif isinstance(op, ast.NotIn):
                ok = left not in right
            else:
                return UNKNOWN
        except TypeError:
            return UNKNOWN
        if not ok:
            return False
    return True


def _subscript(value: Any, index: Any) -> Any:
    if isinstance(value, (list, tuple, str, dict)) and (
        _small_int(index) or (isinstance(value, dict) and _hashable(index))
    ):
        try:
            return value[index]
        except (IndexError, KeyError, TypeError):
            return UNKNOWN
    return UNKNOWN


def _builtin(name: str, args: list[Any]) -> Any:
    if any(a is UNKNOWN for a in args):
        return UNKNOWN
    try:
        if name == "range" and all(_small_int(a) for a in args) and 1 <= len(args) <= 3:
            result = range(*args)
            return result if len(result) <= MAX_SEQUENCE else UNKNOWN
        if name == "len" and len(args) == 1 and isinstance(args[0], (str, list, tuple, dict)):
            return len(args[0])
        if name == "str" and len(args) == 1 and isinstance(args[0], (str, int)):
            return str(args[0])
        if name == "int" and len(args) == 1 and isinstance(args[0], (str, int)):
            value = int(args[0])
            return value if _small_int(value) else UNKNOWN
    except (TypeError, ValueError):
        return UNKNOWN
    return UNKNOWN
