"""Integer expressions over instruction attributes (``@c.n * 128``, ``@a.addr + 64``).

This module owns their syntax (a small lark grammar), their evaluation and substitution, a
polynomial normal form, affinity tests, a sound three-way comparison (always equal / equal for
some assignment / never equal) and the JSON ``EXPR`` encoding of the ISA table.

Attributes are named by their key: ``"c.n"`` for ``@c.n``, ``"a.addr_in"`` for ``@a.addr_in``.
Where a statement depends on the values attributes may take, computational attributes are
positive integers (they are sizes) and addressing attributes non-negative integers.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from functools import reduce as _fold

import lark

# ---------------------------------------------------------------------------------------------
# Syntax tree


class Expr:
    """Base class of expression nodes; nodes are immutable and compare structurally."""

    def attrs(self) -> frozenset[str]:
        """Keys (``c.n``, ``a.addr``) of the attributes the expression mentions."""
        raise NotImplementedError


@dataclass(frozen=True)
class Int(Expr):
    value: int

    def attrs(self) -> frozenset[str]:
        return frozenset()

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Attr(Expr):
    """``@<kind>.<name>``; ``pos`` is where it was written in the parsed text (not compared)."""

    kind: str  # "c" (computational) or "a" (addressing)
    name: str
    pos: tuple[int, int] | None = field(default=None, compare=False, hash=False)

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.name}"

    def attrs(self) -> frozenset[str]:
        return frozenset({self.key})

    def __str__(self) -> str:
        return f"@{self.key}"


BINARY_OPS = ("+", "-", "*", "/", "%")
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2, "%": 2}


@dataclass(frozen=True)
class BinOp(Expr):
    """``lhs op rhs``; ``/`` is floor division and ``%`` its remainder, as in Python."""

    op: str
    lhs: Expr
    rhs: Expr

    def attrs(self) -> frozenset[str]:
        return self.lhs.attrs() | self.rhs.attrs()

    def __str__(self) -> str:
        prec = _PRECEDENCE[self.op]
        left = _wrap(self.lhs, prec, right=False)
        right = _wrap(self.rhs, prec, right=True)
        return f"{left} {self.op} {right}"


@dataclass(frozen=True)
class Neg(Expr):
    arg: Expr

    def attrs(self) -> frozenset[str]:
        return self.arg.attrs()

    def __str__(self) -> str:
        inner = str(self.arg)
        return f"-({inner})" if isinstance(self.arg, BinOp) else f"-{inner}"


def _wrap(expr: Expr, prec: int, right: bool) -> str:
    # Operators of the same precedence associate to the left, so a right operand of equal
    # precedence needs parentheses (a - (b - c)).
    if isinstance(expr, BinOp):
        inner = _PRECEDENCE[expr.op]
        if inner < prec or (right and inner == prec):
            return f"({expr})"
    return str(expr)


Dim = int | Expr


class ExprError(ValueError):
    """An expression that cannot be evaluated; ``code`` is ``unbound-attribute`` or
    ``division-by-zero`` (the crate's ``ExprError`` variants, held together by the shared
    case table ``tests/conformance/expr_cases.json`` of the crate)."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class ExprSyntaxError(ValueError):
    """A syntax error at characters ``[start, end)`` of the parsed text (0-based offsets)."""

    def __init__(self, message: str, start: int, end: int):
        super().__init__(message)
        self.message = message
        self.start = start
        self.end = max(end, start + 1)


# ---------------------------------------------------------------------------------------------
# Parsing

_GRAMMAR = r"""
?start: sum
?sum: product
    | sum "+" product  -> add
    | sum "-" product  -> sub
?product: unary
    | product "*" unary -> mul
    | product "/" unary -> div
    | product "%" unary -> mod
?unary: atom
    | "-" unary        -> neg
    | "+" unary
?atom: INT             -> int
    | ATTR             -> attr
    | NAME             -> bare_name
    | "(" sum ")"

ATTR: "@" NAME "." NAME
NAME: /[A-Za-z_][A-Za-z0-9_]*/
%import common.INT
%import common.WS
%ignore WS
"""

_PARSER = lark.Lark(_GRAMMAR, parser="lalr", maybe_placeholders=False)
_TREE_OPS = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%"}
_TOKEN_WORDS = {"PLUS": "'+'", "MINUS": "'-'", "STAR": "'*'", "SLASH": "'/'",
                "PERCENT": "'%'", "LPAR": "'('", "RPAR": "')'", "INT": "an integer",
                "ATTR": "an attribute", "NAME": "a name", "$END": "the end"}


def parse_expr(text: str, offset: int = 0) -> Expr:
    """Parse an attribute expression; ``ExprSyntaxError`` carries the offending offsets.

    ``offset`` is added to every position (errors, ``Attr.pos``): the text's place in a
    larger one, such as a backquoted expression inside a semantics string.
    """
    try:
        return _build(_parse_tree(text), offset)
    except ExprSyntaxError as err:
        if not offset:
            raise
        raise ExprSyntaxError(err.message, err.start + offset, err.end + offset) from None


def _parse_tree(text: str) -> lark.Tree:
    if not text.strip():
        raise ExprSyntaxError("empty expression: expected an integer or an attribute such as "
                              "@c.n", 0, max(len(text), 1))
    try:
        tree = _PARSER.parse(text)
    except lark.UnexpectedCharacters as err:
        raise ExprSyntaxError(f"unexpected character {text[err.pos_in_stream]!r} in "
                              f"expression {text.strip()!r}", err.pos_in_stream,
                              err.pos_in_stream + 1) from None
    except lark.UnexpectedToken as err:
        token = err.token
        if token.type == "$END":
            raise ExprSyntaxError(f"expression {text.strip()!r} ends too early",
                                  len(text.rstrip()), len(text.rstrip()) + 1) from None
        expected = sorted(_TOKEN_WORDS.get(t, t) for t in err.accepts or err.expected)
        raise ExprSyntaxError(
            f"unexpected {str(token)!r} in expression {text.strip()!r}"
            + (f" (expected {', '.join(expected)})" if expected else ""),
            token.start_pos, token.end_pos) from None
    except lark.UnexpectedInput as err:  # pragma: no cover - other lark errors
        pos = getattr(err, "pos_in_stream", 0) or 0
        raise ExprSyntaxError(f"cannot parse expression {text.strip()!r}", pos, pos + 1) from None
    return tree


def _build(node: lark.Tree | lark.Token, offset: int) -> Expr:
    if isinstance(node, lark.Token):  # pragma: no cover - every token sits under an alias
        raise AssertionError(node)
    kind = node.data
    if kind == "int":
        return Int(int(node.children[0]))
    if kind == "attr":
        token = node.children[0]
        prefix, name = token[1:].split(".", 1)
        span = (token.start_pos + offset, token.end_pos + offset)
        if prefix not in ("c", "a"):
            raise ExprSyntaxError(f"attribute '{token}' must be @c.<name> (computational) or "
                                  f"@a.<name> (addressing)", *span)
        return Attr(prefix, name, pos=span)
    if kind == "bare_name":
        token = node.children[0]
        raise ExprSyntaxError(f"'{token}' is not an attribute: write @c.{token} or @a.{token}",
                              token.start_pos, token.end_pos)
    if kind == "neg":
        return Neg(_build(node.children[0], offset))
    if kind in _TREE_OPS:
        return BinOp(_TREE_OPS[kind], _build(node.children[0], offset),
                     _build(node.children[1], offset))
    # "+" unary and parenthesised sums are inlined by the grammar; anything else is a bug.
    raise AssertionError(f"unexpected expression node {kind}")  # pragma: no cover


def as_expr(value: Dim) -> Expr:
    """An ``int`` or an expression, as an expression."""
    return Int(value) if isinstance(value, int) else value


# ---------------------------------------------------------------------------------------------
# Evaluation, substitution, folding


def _floordiv(a: int, b: int) -> int:
    if b == 0:
        raise ExprError("division by zero", "division-by-zero")
    return a // b


def _mod(a: int, b: int) -> int:
    if b == 0:
        raise ExprError("modulo by zero", "division-by-zero")
    return a % b


_APPLY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
          "/": _floordiv, "%": _mod}


def evaluate(expr: Dim, env: Mapping[str, int]) -> int:
    """The value of ``expr`` with attributes bound by key (``{"c.n": 64}``)."""
    if isinstance(expr, int):
        return expr
    if isinstance(expr, Int):
        return expr.value
    if isinstance(expr, Attr):
        try:
            return int(env[expr.key])
        except KeyError:
            raise ExprError(f"attribute {expr} has no value", "unbound-attribute") from None
    if isinstance(expr, Neg):
        return -evaluate(expr.arg, env)
    if isinstance(expr, BinOp):
        return _APPLY[expr.op](evaluate(expr.lhs, env), evaluate(expr.rhs, env))
    raise TypeError(f"not an expression: {expr!r}")


def substitute(expr: Dim, mapping: Mapping[str, Dim]) -> Dim:
    """Replace attributes by key with expressions or integers, then fold constants."""
    if isinstance(expr, int):
        return expr
    return fold(_subst(expr, mapping))


def _subst(expr: Expr, mapping: Mapping[str, Dim]) -> Expr:
    if isinstance(expr, Attr):
        return as_expr(mapping[expr.key]) if expr.key in mapping else expr
    if isinstance(expr, Neg):
        return Neg(_subst(expr.arg, mapping))
    if isinstance(expr, BinOp):
        return BinOp(expr.op, _subst(expr.lhs, mapping), _subst(expr.rhs, mapping))
    return expr


def fold(expr: Dim) -> Dim:
    """Fold constant subtrees; an expression without attributes becomes a plain ``int``.

    Division or modulo by a constant zero is left in place so that the error surfaces where
    the expression is evaluated, with the attribute values at hand.
    """
    if isinstance(expr, int):
        return expr
    folded = _fold_node(expr)
    return folded.value if isinstance(folded, Int) else folded


def _fold_node(expr: Expr) -> Expr:
    if isinstance(expr, Neg):
        arg = _fold_node(expr.arg)
        return Int(-arg.value) if isinstance(arg, Int) else Neg(arg)
    if isinstance(expr, BinOp):
        lhs, rhs = _fold_node(expr.lhs), _fold_node(expr.rhs)
        if isinstance(lhs, Int) and isinstance(rhs, Int):
            if expr.op in "/%" and rhs.value == 0:
                return BinOp(expr.op, lhs, rhs)
            return Int(_APPLY[expr.op](lhs.value, rhs.value))
        return BinOp(expr.op, lhs, rhs)
    return expr


def free_attrs(expr: Dim) -> frozenset[str]:
    """Attribute keys mentioned by a dimension (none for an ``int``)."""
    return frozenset() if isinstance(expr, int) else expr.attrs()


def attr_nodes(expr: Dim) -> list[Attr]:
    """Every attribute occurrence, left to right (with positions when parsed from text)."""
    if isinstance(expr, Attr):
        return [expr]
    if isinstance(expr, Neg):
        return attr_nodes(expr.arg)
    if isinstance(expr, BinOp):
        return attr_nodes(expr.lhs) + attr_nodes(expr.rhs)
    return []


# Dimension arithmetic that keeps plain ints plain and expressions simplified (used by type
# inference, whose results end up in messages).


def add(a: Dim, b: Dim) -> Dim:
    return simplify(BinOp("+", as_expr(a), as_expr(b)))


def sub(a: Dim, b: Dim) -> Dim:
    return simplify(BinOp("-", as_expr(a), as_expr(b)))


def mul(a: Dim, b: Dim) -> Dim:
    return simplify(BinOp("*", as_expr(a), as_expr(b)))


def floordiv(a: Dim, b: Dim) -> Dim:
    return simplify(BinOp("/", as_expr(a), as_expr(b)))


def product(dims: Iterable[Dim]) -> Dim:
    """The product of dimensions, simplified (``[@c.n, 64, 2]`` -> ``128 * @c.n``)."""
    return _fold(mul, dims, 1)


def total(dims: Iterable[Dim]) -> Dim:
    """The sum of dimensions, simplified."""
    return _fold(add, dims, 0)


# ---------------------------------------------------------------------------------------------
# Polynomial normal form

# A monomial is a sorted tuple of (variable, power); the empty tuple is the constant term.
Monomial = tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class Poly:
    """A polynomial with integer coefficients over attribute keys and opaque atoms.

    Sub-expressions that are not polynomial (``@c.n / 3`` where 3 does not divide every
    coefficient, ``%``, division by a non-constant) become *atoms*: variables named by
    their text in parentheses, about whose values nothing is assumed.
    """

    terms: tuple[tuple[Monomial, int], ...]  # sorted, no zero coefficients

    @staticmethod
    def of(terms: Mapping[Monomial, int]) -> Poly:
        return Poly(tuple(sorted((m, c) for m, c in terms.items() if c != 0)))

    @property
    def is_zero(self) -> bool:
        return not self.terms

    @property
    def constant(self) -> int:
        return dict(self.terms).get((), 0)

    @property
    def is_constant(self) -> bool:
        return all(m == () for m, _ in self.terms)

    def variables(self) -> frozenset[str]:
        return frozenset(v for m, _ in self.terms for v, _ in m)

    def __add__(self, other: Poly) -> Poly:
        out = dict(self.terms)
        for m, c in other.terms:
            out[m] = out.get(m, 0) + c
        return Poly.of(out)

    def __neg__(self) -> Poly:
        return Poly(tuple((m, -c) for m, c in self.terms))

    def __sub__(self, other: Poly) -> Poly:
        return self + (-other)

    def __mul__(self, other: Poly) -> Poly:
        out: dict[Monomial, int] = {}
        for m1, c1 in self.terms:
            for m2, c2 in other.terms:
                m = _mono_mul(m1, m2)
                out[m] = out.get(m, 0) + c1 * c2
        return Poly.of(out)

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        parts = []
        for mono, coef in self.terms:
            factors = [v if p == 1 else f"{v}^{p}" for v, p in mono]
            if not factors:
                parts.append(str(coef))
            elif coef == 1:
                parts.append("*".join(factors))
            else:
                parts.append("*".join([str(coef), *factors]))
        return " + ".join(parts)


def _mono_mul(a: Monomial, b: Monomial) -> Monomial:
    powers = dict(a)
    for v, p in b:
        powers[v] = powers.get(v, 0) + p
    return tuple(sorted(powers.items()))


def _const(value: int) -> Poly:
    return Poly.of({(): value})


def _var(name: str) -> Poly:
    return Poly.of({((name, 1),): 1})


def to_poly(expr: Dim) -> Poly:
    """The polynomial normal form; two expressions with equal forms are always equal."""
    if isinstance(expr, int):
        return _const(expr)
    if isinstance(expr, Int):
        return _const(expr.value)
    if isinstance(expr, Attr):
        return _var(expr.key)
    if isinstance(expr, Neg):
        return -to_poly(expr.arg)
    if isinstance(expr, BinOp):
        lhs, rhs = to_poly(expr.lhs), to_poly(expr.rhs)
        if expr.op == "+":
            return lhs + rhs
        if expr.op == "-":
            return lhs - rhs
        if expr.op == "*":
            return lhs * rhs
        if rhs.is_constant and rhs.constant != 0:
            divisor = rhs.constant
            if lhs.is_constant:
                return _const(_APPLY[expr.op](lhs.constant, divisor))
            if expr.op == "/" and all(c % divisor == 0 for _, c in lhs.terms):
                # Exact: every coefficient divides, so floor division loses nothing.
                return Poly.of({m: c // divisor for m, c in lhs.terms})
        return _var(f"({expr})")
    raise TypeError(f"not an expression: {expr!r}")


def from_poly(poly: Poly) -> Dim:
    """An expression for a polynomial without atoms (an ``int`` when it is constant)."""
    if poly.is_constant:
        return poly.constant
    result: Expr | None = None
    # Highest degree first reads naturally: 2 * @c.n * @c.n + @c.n + 1.
    ordered = sorted(poly.terms, key=lambda t: (-sum(p for _, p in t[0]), t[0]))
    for mono, coef in ordered:
        factors: list[Expr] = []
        for var, power in mono:
            if _is_atom(var):
                raise ValueError(f"cannot write the atom {var} back as an expression")
            kind, _, name = var.partition(".")
            factors.extend([Attr(kind, name)] * power)
        magnitude = abs(coef)
        if not factors:
            term: Expr = Int(magnitude)
        else:
            term = _fold(lambda a, b: BinOp("*", a, b), factors)
            if magnitude != 1:
                term = BinOp("*", Int(magnitude), term)
        if result is None:
            result = Neg(term) if coef < 0 else term
        else:
            result = BinOp("-" if coef < 0 else "+", result, term)
    assert result is not None
    return result


def simplify(expr: Dim) -> Dim:
    """The polynomial normal form written back as an expression, where it has one; other
    expressions are only constant-folded."""
    poly = to_poly(expr)
    if any(_is_atom(v) for v in poly.variables()):
        return fold(expr)
    return from_poly(poly)


def _is_atom(var: str) -> bool:
    return var.startswith("(")


def is_affine(expr: Dim, variables: Collection[str]) -> bool:
    """Whether ``expr`` is affine in ``variables``: no product of two of them, no power,
    and none inside a non-polynomial sub-expression. Other attributes act as constants."""
    poly = to_poly(expr)
    chosen = set(variables)
    for mono, _ in poly.terms:
        degree = 0
        for var, power in mono:
            if _is_atom(var):
                if any(key in var for key in _mentioned(var, chosen)):
                    return False
                continue
            if var in chosen:
                degree += power
        if degree > 1:
            return False
    return True


def _mentioned(atom: str, keys: Collection[str]) -> list[str]:
    # An atom is named by its text, where an attribute key k appears as "@k" followed by a
    # character that cannot continue a name.
    found = []
    for key in keys:
        needle = "@" + key
        start = atom.find(needle)
        while start != -1:
            end = start + len(needle)
            if end >= len(atom) or not (atom[end].isalnum() or atom[end] == "_"):
                found.append(key)
                break
            start = atom.find(needle, end)
    return found


# ---------------------------------------------------------------------------------------------
# Three-way comparison


class Agreement(enum.Enum):
    """How two expressions relate over attribute values (sound: NEVER is always proven)."""

    ALWAYS = "always"        # equal for every assignment
    SOMETIMES = "sometimes"  # equal for some assignment (or not decided: never claimed false)
    NEVER = "never"          # equal for no assignment


def _minimum(var: str) -> int | None:
    """The least value a variable may take, or None where nothing is known."""
    if var.startswith("c."):
        return 1
    if var.startswith("a."):
        return 0
    return None


def always_positive(expr: Dim | Poly) -> bool:
    """A sound test that ``expr > 0`` for every allowed assignment (False = not proven)."""
    poly = expr if isinstance(expr, Poly) else to_poly(expr)
    bound = 0
    for mono, coef in poly.terms:
        if not mono:
            bound += coef
            continue
        if coef < 0:
            return False
        least = 1
        for var, power in mono:
            minimum = _minimum(var)
            if minimum is None:
                return False
            least *= minimum ** power
        bound += coef * least
    return bound > 0


def compare(a: Dim, b: Dim) -> Agreement:
    """Decide whether ``a == b`` always, for some assignment, or never."""
    diff = to_poly(a) - to_poly(b)
    if diff.is_zero:
        return Agreement.ALWAYS
    if diff.is_constant:
        return Agreement.NEVER
    if always_positive(diff) or always_positive(-diff):
        return Agreement.NEVER
    if any(_is_atom(v) for v in diff.variables()):
        return Agreement.SOMETIMES
    if _no_integer_root(diff):
        return Agreement.NEVER
    return Agreement.SOMETIMES


def first_conflict(pairs: Iterable[tuple[Dim, Dim]]) -> int | None:
    """The index of the first pair ``(a, b)`` that cannot be equal together with the others,
    or None when all may hold at once (as far as this sound test sees).

    Pairs are not independent: ``[@c.n, @c.n] == [64, 32]`` holds pairwise for some ``n``
    but never jointly. Single-variable equations fix their variable (``@c.n = 64``); every
    pair is then compared again with the fixed values substituted.
    """
    pairs = list(pairs)
    bindings: dict[str, int] = {}
    for index, (a, b) in enumerate(pairs):
        if compare(a, b) is Agreement.NEVER:
            return index
        solved = _solve_single(to_poly(a) - to_poly(b))
        if solved is None:
            continue
        var, value = solved
        if bindings.setdefault(var, value) != value:
            return index
    if not bindings:
        return None
    for index, (a, b) in enumerate(pairs):
        if compare(substitute(a, bindings), substitute(b, bindings)) is Agreement.NEVER:
            return index
    return None


def _solve_single(poly: Poly) -> tuple[str, int] | None:
    """``(var, value)`` when ``poly == 0`` is ``c * var + k == 0`` with an integer root."""
    variables = poly.variables()
    if len(variables) != 1:
        return None
    (var,) = variables
    if _is_atom(var):
        return None
    coef = dict(poly.terms).get(((var, 1),))
    if coef is None or len(poly.terms) > 2 or (len(poly.terms) == 2 and poly.constant == 0):
        return None
    value, remainder = divmod(-poly.constant, coef)
    return (var, value) if remainder == 0 else None


def _no_integer_root(poly: Poly) -> bool:
    """Proves ``poly == 0`` has no solution in the allowed integers, where that is cheap."""
    linear = all(len(m) <= 1 and all(p == 1 for _, p in m) for m, _ in poly.terms)
    constant = poly.constant
    coefs = [c for m, c in poly.terms if m]
    if linear and math.gcd(*coefs) and constant % math.gcd(*coefs) != 0:
        return True
    variables = poly.variables()
    if len(variables) != 1:
        return False
    (var,) = variables
    minimum = _minimum(var)
    if minimum is None:
        return False
    # One variable: an integer root divides the constant term once the lowest power of the
    # variable is factored out (rational root theorem with an integer leading factor).
    powers = {(m[0][1] if m else 0): c for m, c in poly.terms}
    low = min(powers)
    reduced = {p - low: c for p, c in powers.items()}
    if low > 0 and minimum == 0:
        return False  # var = 0 is a root
    const = reduced.get(0, 0)
    if abs(const) > 10**9:
        return False  # too many divisors to enumerate; stay undecided
    for root in _positive_divisors(abs(const)):
        if root >= max(minimum, 1) and sum(c * root**p for p, c in reduced.items()) == 0:
            return False
    return True


def _positive_divisors(n: int) -> list[int]:
    small, large = [], []
    i = 1
    while i * i <= n:
        if n % i == 0:
            small.append(i)
            if i != n // i:
                large.append(n // i)
        i += 1
    return small + large[::-1]


# ---------------------------------------------------------------------------------------------
# JSON encoding (docs/architecture.md, section 2)


def to_json(expr: Dim) -> dict:
    """``{"int": 5}``, ``{"attr": "c.n"}``, ``{"op": "+", "args": [..]}``, ``{"op": "neg", ..}``."""
    if isinstance(expr, int):
        return {"int": expr}
    if isinstance(expr, Int):
        return {"int": expr.value}
    if isinstance(expr, Attr):
        return {"attr": expr.key}
    if isinstance(expr, Neg):
        return {"op": "neg", "args": [to_json(expr.arg)]}
    if isinstance(expr, BinOp):
        return {"op": expr.op, "args": [to_json(expr.lhs), to_json(expr.rhs)]}
    raise TypeError(f"not an expression: {expr!r}")


def from_json(obj: Mapping) -> Expr:
    """The inverse of ``to_json``; ``ValueError`` names the malformed node."""
    if "int" in obj:
        return Int(int(obj["int"]))
    if "attr" in obj:
        kind, _, name = str(obj["attr"]).partition(".")
        if kind not in ("c", "a") or not name:
            raise ValueError(f"bad attribute key in expression node {obj!r}")
        return Attr(kind, name)
    op, args = obj.get("op"), obj.get("args")
    if op == "neg" and isinstance(args, list) and len(args) == 1:
        return Neg(from_json(args[0]))
    if op in BINARY_OPS and isinstance(args, list) and len(args) == 2:
        return BinOp(op, from_json(args[0]), from_json(args[1]))
    raise ValueError(f"malformed expression node {obj!r}")
