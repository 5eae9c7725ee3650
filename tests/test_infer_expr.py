"""Attribute expressions: syntax, evaluation, normal form, affinity, three-way comparison."""

import pytest

from act_backend.hlo import expr as ex
from act_backend.hlo.expr import Agreement


def p(text):
    return ex.parse_expr(text)


@pytest.mark.parametrize("text, env, value", [
    ("64", {}, 64),
    ("@c.n * 128", {"c.n": 3}, 384),
    ("@a.addr + 64", {"a.addr": 10}, 74),
    ("(@c.n + 1) * 2", {"c.n": 4}, 10),
    ("-@c.n + 10", {"c.n": 4}, 6),
    ("7 / 2", {}, 3),
    ("-7 / 2", {}, -4),  # floor division, as the table's "/" means
    ("7 % 3 + 1", {}, 2),
    ("2 * 3 + 4 * 5", {}, 26),
    ("10 - 3 - 2", {}, 5),
])
def test_evaluates_with_attribute_values(text, env, value):
    assert ex.evaluate(p(text), env) == value


def test_evaluation_names_a_missing_attribute():
    with pytest.raises(ex.ExprError, match="@c.m has no value"):
        ex.evaluate(p("@c.n + @c.m"), {"c.n": 1})


def test_division_by_zero_is_an_expression_error():
    with pytest.raises(ex.ExprError, match="division by zero"):
        ex.evaluate(p("@c.n / 0"), {"c.n": 1})


@pytest.mark.parametrize("text, start, words", [
    ("@c.n *", 6, "ends too early"),
    ("n + 1", 0, "write @c.n or @a.n"),
    ("@b.x", 0, "must be @c.<name>"),
    ("1 $ 2", 2, "unexpected character '$'"),
    ("", 0, "empty expression"),
    ("(@c.n", 5, "ends too early"),
    ("@c.n @c.m", 5, "unexpected '@c.m'"),
])
def test_syntax_errors_carry_offsets(text, start, words):
    with pytest.raises(ex.ExprSyntaxError) as info:
        p(text)
    assert info.value.start == start
    assert words in info.value.message


def test_attribute_nodes_remember_where_they_were_written():
    nodes = ex.attr_nodes(p("2 * @c.n + @a.addr_in"))
    assert [(a.key, a.pos) for a in nodes] == [("c.n", (4, 8)), ("a.addr_in", (11, 21))]


def test_printing_reparses_to_the_same_tree():
    for text in ["@c.a - (@c.b - @c.c)", "(@c.a + 1) * 2", "-(@c.n + 1)", "@c.n / 3 % 2"]:
        tree = p(text)
        assert p(str(tree)) == tree


def test_substitution_folds_constants():
    assert ex.substitute(p("@c.n * 128"), {"c.n": 2}) == 256
    assert ex.substitute(p("@c.n * @c.m"), {"c.m": ex.Int(2)}) == p("@c.n * 2")


def test_normal_form_identifies_equal_polynomials():
    assert ex.to_poly(p("(@c.n + 1) * (@c.n + 1)")) == ex.to_poly(p("@c.n*@c.n + 2*@c.n + 1"))
    assert ex.to_poly(p("@c.n * 128 / 2")) == ex.to_poly(p("64 * @c.n"))
    assert ex.to_poly(p("@c.n / 3")) != ex.to_poly(p("@c.n"))


def test_products_of_dimensions_are_simplified():
    assert str(ex.product([p("@c.n"), 64, 2])) == "128 * @c.n"
    assert ex.product([3, 4]) == 12
    assert ex.total([p("@c.n"), p("@c.n"), 1]) == p("2 * @c.n + 1")


@pytest.mark.parametrize("text, variables, affine", [
    ("@a.addr", {"a.addr"}, True),
    ("@a.addr * @c.n + 64", {"a.addr"}, True),  # c.* acts as a constant
    ("@a.x + @a.y * 4", {"a.x", "a.y"}, True),
    ("@a.x * @a.y", {"a.x", "a.y"}, False),
    ("@a.x * @a.x", {"a.x"}, False),
    ("@a.x / 3", {"a.x"}, False),
    ("@a.x * 6 / 3", {"a.x"}, True),  # exact division stays polynomial
    ("@c.n / 3 + @a.x", {"a.x"}, True),
    ("@a.x % 4", {"a.x"}, False),
])
def test_affinity(text, variables, affine):
    assert ex.is_affine(p(text), variables) is affine


@pytest.mark.parametrize("a, b, agreement", [
    ("@c.n * 128", "@c.n * 64 * 2", Agreement.ALWAYS),
    ("@c.n * 128", "8192", Agreement.SOMETIMES),        # n = 64
    ("@c.n * 128", "100", Agreement.NEVER),             # 100 / 128 is not an integer
    ("@c.n", "0", Agreement.NEVER),                     # computational attributes are positive
    ("@c.n + 5", "3", Agreement.NEVER),
    ("2 * @c.n + 1", "4 * @c.n", Agreement.NEVER),      # parity
    ("@c.n * @c.n", "49", Agreement.SOMETIMES),
    ("@c.n * @c.n", "5", Agreement.NEVER),
    ("@c.n * @c.m", "@c.m * @c.n", Agreement.ALWAYS),
    ("64", "65", Agreement.NEVER),
    ("@c.n / 3", "@c.n", Agreement.SOMETIMES),          # not decided: never claimed never
    ("@c.n / 3 + 1", "@c.n / 3", Agreement.NEVER),      # atoms cancel
    ("@c.n + @c.m", "1", Agreement.NEVER),
])
def test_three_way_comparison(a, b, agreement):
    assert ex.compare(p(a), p(b)) is agreement
    assert ex.compare(p(b), p(a)) is agreement


def test_comparison_accepts_plain_integers():
    assert ex.compare(64, 64) is Agreement.ALWAYS
    assert ex.compare(64, p("@c.n")) is Agreement.SOMETIMES


@pytest.mark.parametrize("text, positive", [
    ("@c.n", True),
    ("@c.n - 1", False),
    ("@a.x", False),           # addresses may be zero
    ("@a.x + 1", True),
    ("@c.n * @c.m - 1", False),
    ("@c.n * 2 - 1", True),
    ("@c.n / 2", False),
])
def test_positivity_is_proven_or_not_claimed(text, positive):
    assert ex.always_positive(p(text)) is positive


def test_json_round_trip():
    tree = p("-(@c.n * 128) + @a.addr_in / 2 % 3")
    encoded = ex.to_json(tree)
    assert encoded["op"] == "+"
    assert encoded["args"][0] == {"op": "neg", "args": [
        {"op": "*", "args": [{"attr": "c.n"}, {"int": 128}]}]}
    assert ex.from_json(encoded) == tree
    assert ex.to_json(7) == {"int": 7}


def test_malformed_json_is_named():
    with pytest.raises(ValueError, match="malformed expression node"):
        ex.from_json({"op": "^", "args": []})


def test_pairs_that_each_agree_may_still_conflict_together():
    n, m = p("@c.n"), p("@c.m")
    assert ex.first_conflict([(n, 64), (n, 32)]) == 1
    assert ex.first_conflict([(n, 64), (p("2 * @c.n"), 128)]) is None
    assert ex.first_conflict([(n, 64), (m, 32)]) is None
    # n = 3 leaves 3 * m = 64, which has no integer solution.
    assert ex.first_conflict([(p("@c.n * @c.m"), 64), (n, 3)]) == 0
    assert ex.first_conflict([(64, 64), (n, 0)]) == 1
