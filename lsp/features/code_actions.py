"""Code actions: the quick fixes a diagnostic carries (``lsp.fixes``, worked out when the
document was checked), offered while the document is still the one they were worked out
for. The client sends back the diagnostics under the cursor with their ``data``; a fix
whose document version is gone is not offered (the next check brings fresh ones)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lsp.fixes.fix import Fix, fixes_from_json

QUICK_FIX = "quickfix"


@dataclass(frozen=True)
class Action:
    fix: Fix
    diagnostic: Any  # the protocol diagnostic it repairs, handed back as it came


def wanted(only: list[str] | None) -> bool:
    """Whether a request filtered by ``only`` kinds wants quick fixes."""
    kinds = [str(getattr(kind, "value", kind)) for kind in only or []]
    return not kinds or any(QUICK_FIX == kind or QUICK_FIX.startswith(f"{kind}.")
                            for kind in kinds)


def quick_fixes(diagnostics: list[Any], source: str, version: int | None) -> list[Action]:
    """The fixes of the ``source`` diagnostics among ``diagnostics`` that were worked out
    for the document ``version``, in the order the diagnostics came."""
    actions = []
    for diagnostic in diagnostics:
        data = getattr(diagnostic, "data", None)
        if getattr(diagnostic, "source", None) != source or not isinstance(data, dict):
            continue
        if data.get("version") != version:
            continue
        actions.extend(Action(fix, diagnostic) for fix in fixes_from_json(data.get("fixes")))
    return actions
