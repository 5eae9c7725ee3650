"""A fix as data (``Fix``, ``Edit``), its JSON form (it travels from the process that ran a
spec, and to the client in a diagnostic's ``data``), and the "did you mean" ranking."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lsp.text_map import Position, TextRange

# How many names a "did you mean" offers, and how alike a name must be to be offered
# (difflib's ratio: 'd9' and 'd1' are 0.5 alike, 'transpos' and 'transpose' 0.94).
SUGGESTIONS = 3
LIKENESS = 0.5


@dataclass(frozen=True)
class Edit:
    """Replace ``range`` (server units) with ``text``; an empty range inserts."""

    range: TextRange
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"range": [list(self.range.start), list(self.range.end)], "text": self.text}

    @staticmethod
    def from_dict(raw: Any) -> Edit:
        (line, column), (end_line, end_column) = raw["range"]
        return Edit(TextRange((int(line), int(column)), (int(end_line), int(end_column))),
                    str(raw["text"]))


@dataclass(frozen=True)
class Fix:
    """One repair of one problem: applying every edit (their ranges do not overlap) makes
    it. ``preferred`` marks the fix an editor may apply on its own (a unique best match)."""

    title: str
    edits: tuple[Edit, ...]
    preferred: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"title": self.title, "edits": [e.as_dict() for e in self.edits],
                "preferred": self.preferred}

    @staticmethod
    def from_dict(raw: Any) -> Fix:
        return Fix(str(raw["title"]), tuple(Edit.from_dict(e) for e in raw["edits"]),
                   bool(raw.get("preferred", False)))


def fixes_from_json(raw: Any) -> tuple[Fix, ...]:
    """The fixes of a problem dict's ``fixes`` list; malformed entries are dropped."""
    if not isinstance(raw, list):
        return ()
    found = []
    for item in raw:
        try:
            found.append(Fix.from_dict(item))
        except (KeyError, TypeError, ValueError):
            continue
    return tuple(found)


def closest(word: str, known: Iterable[str], limit: int = SUGGESTIONS,
            likeness: float = LIKENESS) -> list[str]:
    """The known names most like ``word``, best first (ties keep the order of ``known``);
    ``word`` itself is never offered."""
    seen: dict[str, int] = {}
    for index, name in enumerate(known):
        seen.setdefault(name, index)
    scored = []
    for name, index in seen.items():
        if name == word:
            continue
        ratio = difflib.SequenceMatcher(None, word.lower(), name.lower()).ratio()
        if ratio >= likeness:
            scored.append((-ratio, index, name))
    return [name for _, _, name in sorted(scored)[:limit]]


def replacements(where: TextRange, word: str, known: Iterable[str],
                 spell=lambda name: name, any_known: bool = False) -> list[Fix]:
    """"Change to 'x'" for each known name close to ``word``, replacing ``where`` with
    ``spell(name)``; the first is preferred when it is the only best match. With
    ``any_known`` (a short list of the only valid choices, such as an instruction's
    attributes), the first known names are offered when none is alike, none preferred."""
    known = list(known)
    names = closest(word, known)
    if not names:
        others = [name for name in dict.fromkeys(known) if name != word][:SUGGESTIONS]
        if not any_known:
            return []
        return [Fix(f"Change to '{name}'", (Edit(where, spell(name)),)) for name in others]
    ratios = [difflib.SequenceMatcher(None, word.lower(), n.lower()).ratio() for n in names]
    unique_best = len(names) == 1 or ratios[0] > ratios[1]
    return [Fix(f"Change to '{name}'", (Edit(where, spell(name)),),
                preferred=unique_best and k == 0)
            for k, name in enumerate(names)]


def insertion(at: Position, text: str) -> Edit:
    return Edit(TextRange(at, at), text)
