"""Every check of a TAIDL spec, as data (``check``) or as a refusal (``validate``).

``check(acc)`` returns all problems, errors and warnings, each with a stable code and the
place it was written; it works on a partially built accelerator. ``validate(acc)`` raises
``ValueError`` with every error message, one per line and each prefixed with
``file:line:col``, and otherwise returns the warnings;
the generators call it before they write anything. Both read ``analysis_of(acc)``: one
analysis per state of the accelerator, shared with the ISA table and the generators.
"""

from __future__ import annotations

from act_backend.validation.analysis import (
    Analysis,
    CheckedInstruction,
    analyse,
    analysis_of,
)
from act_backend.validation.buffers import Buffer
from act_backend.validation.problem import Problem
from act_backend.validation.slices import Slice


def check(acc) -> list[Problem]:
    """All problems of ``acc``, in spec order."""
    return list(analysis_of(acc).problems)


def located(problem: Problem) -> str:
    """``file:line:col: message``, or the message alone when the place is unknown."""
    return f"{problem.span}: {problem.message}" if problem.span is not None else problem.message


def raise_errors(analysis: Analysis) -> list[Problem]:
    """Raises ``ValueError`` joining the errors, one per line, each at its place in the spec;
    returns the warnings."""
    errors = analysis.errors
    if errors:
        raise ValueError("\n".join(located(p) for p in errors))
    return analysis.warnings


def validate(acc) -> list[Problem]:
    """Raises ``ValueError`` naming every error of ``acc``; returns its warnings."""
    return raise_errors(analysis_of(acc))


__all__ = ["Analysis", "Buffer", "CheckedInstruction", "Problem", "Slice", "analyse",
           "analysis_of", "check", "located", "raise_errors", "validate"]
