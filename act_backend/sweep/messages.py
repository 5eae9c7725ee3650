"""Errors as the results table writes them: one line each, with no path that depends on
where a run wrote its files."""

from __future__ import annotations


def one_line(error: object) -> str:
    """``error``'s text with its lines joined by ``; `` (its type name when it says
    nothing)."""
    text = str(error).strip() or type(error).__name__
    return "; ".join(line.strip() for line in text.splitlines() if line.strip())


def first_line(error: object) -> str:
    """The first line of ``error``'s text: the summary of a long report (a build log)."""
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0].strip()


def without_root(message: str, root: str) -> str:
    """``message`` with the output directory ``root`` written as ``.``."""
    return message.replace(root.rstrip("/"), ".") if root else message
