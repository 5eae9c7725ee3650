"""Positions in documents: spans to ranges, words, and string literals mapped to source."""

from __future__ import annotations

import ast

import pytest

from lsp.convert import lines_of
from lsp.text_map import TextRange, literal_map, node_range, span_to_range, word_at


def literal(source: str):
    tree = ast.parse(source)
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.Constant)
                and isinstance(n.value, str))
    return node, lines_of(source)


def source_at(lines: list[str], pos: tuple[int, int]) -> str:
    return lines[pos[0]][pos[1]]


# Python warns about the invalid escape "\q"; reading it is the point of that case.
@pytest.mark.filterwarnings("ignore::SyntaxWarning", "ignore::DeprecationWarning")
@pytest.mark.parametrize("source", [
    'x = "plain text"\n',
    "x = '''\nENTRY a {\n  %b = u8[4] parameter(0);\n}\n'''\n",
    'x = ("first "\n     "second")\n',
    'x = r"raw \\d and \\" quote"\n',
    'x = "tab\\there é and \\u00e9 \\N{BULLET} \\x41 \\101"\n',
    'x = "line one \\\ncontinued"\n',
    'x = "unknown \\q escape"\n',
    'x = "wide 😀 chars"\n',
])
def test_every_character_of_a_literal_maps_to_where_it_is_written(source):
    node, lines = literal(source)
    mapped = literal_map(lines, node)
    assert mapped is not None
    assert len(mapped.positions) == len(node.value) + 1
    for index, char in enumerate(node.value):
        written = source_at(lines, mapped.positions[index])
        if written == "\\":
            continue  # an escape: the value's character comes from the sequence it starts
        assert written == char, (index, char, written)


def test_escapes_map_to_the_backslash_that_starts_them():
    node, lines = literal('x = "a\\tb"\n')
    mapped = literal_map(lines, node)
    assert node.value == "a\tb"
    assert mapped.positions == [(0, 5), (0, 6), (0, 8), (0, 9)]


def test_a_span_inside_a_multiline_literal_lands_on_the_token():
    source = 'instr.add_semantics("""\nENTRY x {\n    %a = bf16[4] expo(%b);\n}\n""")\n'
    node, lines = literal(source)
    mapped = literal_map(lines, node)
    # "expo" is on the value's third line (the value starts with a newline), column 18.
    where = mapped.span_range(3, 18, 3, 22)
    assert where == TextRange((2, 17), (2, 21))
    assert lines[2][17:21] == "expo"


def test_crlf_line_endings_count_as_one_character():
    source = 'x = """a\r\nb"""\r\n'
    node, lines = literal(source)
    mapped = literal_map(lines, node)
    assert node.value == "a\nb"
    assert mapped.positions[:3] == [(0, 7), (0, 8), (1, 0)]


def test_positions_count_code_points_not_bytes():
    source = 'é = "ü"; y = "target"\n'
    tree = ast.parse(source)
    target = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)][-1]
    lines = lines_of(source)
    assert node_range(lines, target) == TextRange((0, 13), (0, 21))
    assert literal_map(lines, target).positions[0] == (0, 14)


def test_spans_become_zero_based_ranges():
    assert span_to_range(3, 5, 3, 9) == TextRange((2, 4), (2, 8))
    assert span_to_range(3, 5, 2, 1) == TextRange((2, 4), (2, 4))


def test_words_may_include_extra_characters():
    assert word_at("  %a = bf16[4] bitcast-convert(%b)", 20, "-") == ("bitcast-convert", 15, 30)
    assert word_at("shape `@c.n * 2`", 9, "@.") == ("@c.n", 7, 11)


def test_document_lines_split_only_where_the_protocol_does():
    assert lines_of("a\nb\r\nc\rd\x0ce\u2028f") == ["a\n", "b\r\n", "c\r", "d\x0ce\u2028f"]
    assert lines_of("") == [""]
