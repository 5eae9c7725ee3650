"""The server's settings (the ``act.*`` section of the client's configuration).

Settings arrive as loose JSON from three places (``initializationOptions``, a
``workspace/configuration`` answer, ``workspace/didChangeConfiguration``); ``parse``
turns any of them into a ``Settings`` value, keeping the defaults for anything missing
and naming each value it had to ignore, so a typo in the user's settings is visible.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

SECTION = "act"


@dataclass(frozen=True)
class Settings:
    # Running a spec executes user code: off unless the client says the workspace is trusted.
    execute_specs: bool = False
    # Wall-clock limit for one run of a spec (diagnostics), in seconds.
    spec_timeout_s: float = 10.0
    # Address-space budget for that run, in MiB, on top of what the interpreter has mapped.
    spec_memory_mb: int = 2048
    # Quiet time after the last keystroke before a document is checked again.
    diagnostics_delay_ms: int = 100


# JSON key -> (field name, accepted type, lower bound)
_KEYS: dict[str, tuple[str, type, float | None]] = {
    "executeSpecs": ("execute_specs", bool, None),
    "specTimeout": ("spec_timeout_s", float, 0.1),
    "specMemoryLimitMb": ("spec_memory_mb", int, 64),
    "diagnosticsDelayMs": ("diagnostics_delay_ms", int, 0),
}
assert {name for name, _, _ in _KEYS.values()} == {f.name for f in fields(Settings)}


def parse(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Settings from a client's JSON (the ``act`` object, or an object holding it).

    Returns the settings and one message per ignored value.
    """
    settings = base or Settings()
    if raw is None:
        return settings, []
    if not isinstance(raw, dict):
        return settings, [f"act settings must be an object, got {type(raw).__name__}"]
    if isinstance(raw.get(SECTION), dict):
        raw = raw[SECTION]
    changes: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key not in _KEYS:
            # Settings owned by the client (trace.server, serverPath...) are not ours.
            continue
        name, kind, lower = _KEYS[key]
        if kind is bool:
            if not isinstance(value, bool):
                problems.append(f"act.{key} must be true or false, got {value!r}")
                continue
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            problems.append(f"act.{key} must be a number, got {value!r}")
            continue
        elif kind is int and value != int(value):
            problems.append(f"act.{key} must be a whole number, got {value!r}")
            continue
        else:
            value = kind(value)
            if lower is not None and value < lower:
                problems.append(f"act.{key} must be at least {lower:g}, got {value!r}")
                continue
        changes[name] = value
    return replace(settings, **changes), problems
