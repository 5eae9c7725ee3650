"""The server's settings: defaults, what the client sends, and values that are refused."""

from __future__ import annotations

from lsp.settings import Settings, parse


def test_specs_are_not_run_unless_the_client_says_so():
    assert Settings().execute_specs is False
    assert parse(None)[0] == Settings()


def test_the_act_section_is_read_wherever_it_is_nested():
    flat, problems = parse({"executeSpecs": True, "specTimeout": 3})
    nested, _ = parse({"act": {"executeSpecs": True, "specTimeout": 3}})
    assert flat == nested and problems == []
    assert flat.execute_specs is True and flat.spec_timeout_s == 3.0


def test_bad_values_are_named_and_the_previous_value_kept():
    base = Settings(spec_memory_mb=1024)
    settings, problems = parse({"executeSpecs": "yes", "specTimeout": 0,
                                "specMemoryLimitMb": 12.5, "diagnosticsDelayMs": True},
                               base)
    assert settings == base
    assert problems == [
        "act.executeSpecs must be true or false, got 'yes'",
        "act.specTimeout must be at least 0.1, got 0.0",
        "act.specMemoryLimitMb must be a whole number, got 12.5",
        "act.diagnosticsDelayMs must be a number, got True",
    ]


def test_settings_of_other_parts_are_ignored_silently():
    settings, problems = parse({"trace": {"server": "verbose"}, "serverPath": "x"})
    assert settings == Settings() and problems == []
    assert parse([1, 2])[1] == ["act settings must be an object, got list"]
