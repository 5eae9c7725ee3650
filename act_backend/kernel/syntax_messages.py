"""Friendly wording for lark's parse errors on HLO text.

Lark reports which terminals it expected and what it found; this module says the same thing
in the words of HLO ("expected an operand name after '('") and says where, as an
``HloSyntaxError``.
"""

from __future__ import annotations

from lark import Token
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from act_backend.kernel.errors import HloSyntaxError

_WORDS = {
    "NAME": "a name",
    "NUMBER": "a number",
    "STRING": "a string",
    "LAYOUT": "a layout such as {1,0}",
    "DIM_LABELS": "dimension labels",
    "DEBUG_SECTION": "a debug table",
    "HLOMODULE": "'HloModule'",
    "ENTRY": "'ENTRY'",
    "ROOT": "'ROOT'",
    "ELLIPSIS": "'...'",
    "ARROW": "'->'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "EQUAL": "'='",
    "COLON": "':'",
    "COMMA": "','",
    "SEMICOLON": "';'",
    "$END": "the end of the input",
}


def _word(terminal: str) -> str:
    return _WORDS.get(terminal, terminal)


def _found(token: Token) -> str:
    if token.type == "$END":
        return "the end of the input"
    return f"'{token}'"


def _explain(expected: set[str], previous: Token | None, found: Token) -> str:
    """What was wanted, in HLO's terms, given the token just read and the one found."""
    prev = str(previous) if previous is not None else None
    if found.type == "$END" and "RBRACE" in expected:
        return "a computation is not closed with '}'"
    after_type = previous is not None and previous.type in ("RSQB", "LAYOUT")
    if after_type and "NAME" in expected and found.type == "LPAR":
        return "expected an opcode between the type and '('"
    if expected == {"LSQB"} and previous is not None and previous.type == "NAME":
        return (f"expected '[' after '{prev}': an instruction reads "
                "'name = type opcode(operands)', with a type such as bf16[64,64]")
    operand_start = {"NAME", "NUMBER", "LBRACE"}
    if prev in ("(", ",") and operand_start <= expected:
        return f"expected an operand name after '{prev}'"
    if prev == "(" and expected == {"NAME", "RPAR"}:
        return "expected a parameter declaration such as 'x: f32[64]' after '('"
    if prev in ("=", ":", "->") and expected >= {"NAME", "LPAR"} and "NUMBER" not in expected:
        return f"expected a type such as bf16[64,64] after '{prev}'"
    if prev == "[" or (prev == "," and expected == {"NUMBER"}):
        return f"expected a dimension size after '{prev}'"
    if prev == "," and expected == {"NAME"}:
        return "expected an attribute name after ','"
    if prev == "=" and {"NAME", "NUMBER", "STRING", "LBRACE"} <= expected:
        return "expected an attribute value after '='"
    if expected == {"EQUAL"} and previous is not None and previous.type == "NAME":
        return f"expected '=' after '{prev}'"
    words = sorted(_word(t) for t in expected if not t.startswith("__"))
    if not words:
        return "unexpected input"
    listing = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
    after = f" after '{prev}'" if prev is not None else ""
    return f"expected {listing}{after}"


def _end_position(text: str) -> tuple[int, int]:
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


# What separates a name from what follows it; a run of anything else is read as one word.
_NAME_DELIMITERS = frozenset(' \t\r\n,=(){}[]:;"')

NAME_RULE = ("a name is an ASCII letter or '_' followed by letters, digits, '_', '.' or '-', "
             "with an optional '%' before it")


def _word_around(text: str, pos: int) -> str:
    start = pos
    while start > 0 and text[start - 1] not in _NAME_DELIMITERS:
        start -= 1
    end = pos
    while end < len(text) and text[end] not in _NAME_DELIMITERS:
        end += 1
    return text[start:end]


def _looks_like_a_name(word: str) -> bool:
    return any(c.isalpha() or c == "_" for c in word)


def syntax_error(err: UnexpectedInput, text: str, file: str | None) -> HloSyntaxError:
    """The ``HloSyntaxError`` for a lark parse failure on ``text``; a word that is meant as
    a name but is not one (``%1a``, ``x$y``) is reported as ``bad-name`` at its first
    character that cannot be part of a name (or its start, when it cannot start one)."""
    if isinstance(err, UnexpectedCharacters):
        char = text[err.pos_in_stream] if err.pos_in_stream < len(text) else ""
        word = _word_around(text, err.pos_in_stream)
        if _looks_like_a_name(word):
            return HloSyntaxError(file, err.line, err.column, f"'{word}' is not a name: "
                                  f"{NAME_RULE}", code="bad-name")
        return HloSyntaxError(file, err.line, err.column, f"unexpected character '{char}'")
    if isinstance(err, UnexpectedToken):
        history = err.token_history or []
        previous = history[-1] if history else None
        explanation = _explain(set(err.expected), previous, err.token)
        token = err.token
        if token.type == "NUMBER" and "NAME" in err.expected:
            word = _word_around(text, token.start_pos)
            if _looks_like_a_name(word):
                return HloSyntaxError(file, token.line, token.column, f"'{word}' is not a "
                                      f"name: {NAME_RULE}", code="bad-name")
        if token.type == "$END":
            line, column = _end_position(text)
            return HloSyntaxError(file, line, column,
                                  f"unexpected end of the input: {explanation}")
        return HloSyntaxError(file, token.line, token.column,
                              f"{explanation}, found {_found(token)}",
                              end_line=token.end_line, end_column=token.end_column)
    if isinstance(err, UnexpectedEOF):
        line, column = _end_position(text)
        return HloSyntaxError(file, line, column, "unexpected end of the input")
    return HloSyntaxError(file, getattr(err, "line", 1) or 1, getattr(err, "column", 1) or 1,
                          str(err))
