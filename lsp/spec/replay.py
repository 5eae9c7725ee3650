"""Replay the TAIDL calls a static reading found onto real ``act_backend.spec`` objects.

Only the API's own methods run, with argument values the reader computed from literals,
so no user code executes. Each call is compiled at the position of the original call in
the spec file (with the editor's text registered in ``linecache``), so the front end
records the same call and argument sites it would have recorded had the spec run: the
real validation code then reports problems at their exact places.
"""

from __future__ import annotations

import ast
import linecache
import threading
from dataclasses import dataclass, field
from typing import Any

from lsp.spec.reader import ApiCall, Ref, SpecReading
from lsp.text_map import lines_of

# linecache and the front end's source cache are process-wide: one replay at a time.
_LOCK = threading.Lock()


@dataclass
class Replay:
    objects: dict[int, Any] = field(default_factory=dict)  # id(Ref) -> real object
    # A call the API refused (a TypeError for wrong arguments): where, and the message.
    failure: tuple[ApiCall, str] | None = None

    def real(self, ref: Ref) -> Any:
        return self.objects.get(id(ref))


def replay(reading: SpecReading, path: str, text: str) -> Replay:
    """Replay every call whose arguments are known; stop at the first call the API
    refuses, as running the spec would."""
    from act_backend.spec import Accelerator

    result = Replay()
    with _LOCK:
        linecache.cache[path] = (len(text), None, lines_of(text), path)
        for call in reading.calls:
            if call.opaque:
                continue
            if call.method == "Accelerator":
                target: Any = Accelerator
            elif call.receiver is not None and id(call.receiver) in result.objects:
                owner = result.objects[id(call.receiver)]
                target = getattr(owner, call.method, None)
                if target is None or call.method.startswith("_"):
                    continue
            else:
                continue
            try:
                value = _invoke(call, target, path)
            except TypeError as exc:
                result.failure = (call, f"TypeError: {exc}")
                break
            if call.result is not None:
                result.objects[id(call.result)] = value
    return result


def _invoke(call: ApiCall, target: Any, path: str) -> Any:
    """Call ``target`` with the call's values, from code located where the call is."""
    namespace: dict[str, Any] = {"__act_target": target}
    args: list[ast.expr] = []
    for index, value in enumerate(call.args):
        name = f"__act_arg{index}"
        namespace[name] = value
        args.append(ast.Name(id=name, ctx=ast.Load()))
    keywords = []
    for key, value in call.kwargs.items():
        name = f"__act_kw_{key}"
        namespace[name] = value
        keywords.append(ast.keyword(arg=key, value=ast.Name(id=name, ctx=ast.Load())))
    # The callee's name must be the one written (the front end looks for it by name).
    if isinstance(call.node.func, ast.Attribute):
        namespace["__act_receiver"] = _Holder(call.method, target)
        func: ast.expr = ast.Attribute(value=ast.Name(id="__act_receiver", ctx=ast.Load()),
                                       attr=call.method, ctx=ast.Load())
    else:
        name = call.node.func.id if isinstance(call.node.func, ast.Name) else "Accelerator"
        namespace[name] = target
        func = ast.Name(id=name, ctx=ast.Load())
    expression = ast.Expression(body=ast.Call(func=func, args=args, keywords=keywords))
    _locate(expression.body, call.node)
    code = compile(expression, path, "eval")
    return eval(code, {"__builtins__": {}}, namespace)


class _Holder:
    """Exposes one bound method under the name the spec wrote."""

    def __init__(self, name: str, method: Any):
        setattr(self, name, method)


def _locate(new: ast.AST, original: ast.AST) -> None:
    for node in ast.walk(new):
        ast.copy_location(node, original)
