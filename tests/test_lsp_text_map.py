"""Positions in documents: spans and syntax-tree nodes to ranges, words, lines."""

from __future__ import annotations

import ast

from lsp.text_map import TextRange, lines_of, node_range, span_to_range, word_at


def test_positions_count_code_points_not_bytes():
    source = 'é = "ü"; y = "target"\n'
    tree = ast.parse(source)
    target = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)][-1]
    assert node_range(lines_of(source), target) == TextRange((0, 13), (0, 21))


def test_spans_become_zero_based_ranges():
    assert span_to_range(3, 5, 3, 9) == TextRange((2, 4), (2, 8))
    assert span_to_range(3, 5, 2, 1) == TextRange((2, 4), (2, 4))


def test_words_may_include_extra_characters():
    assert word_at("  %a = bf16[4] bitcast-convert(%b)", 20, "-") == ("bitcast-convert", 15, 30)
    assert word_at("shape `@c.n * 2`", 9, "@.") == ("@c.n", 7, 11)


def test_document_lines_split_only_where_the_protocol_does():
    assert lines_of("a\nb\r\nc\rd\x0ce\u2028f") == ["a\n", "b\r\n", "c\r", "d\x0ce\u2028f"]
    assert lines_of("") == [""]
