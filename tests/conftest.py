"""Session fixtures shared by the end-to-end tests.

``example_build("QKV")`` generates an example's oracle and backend once per session, the way a
user does (``python QKV.py`` in a copy of the example directory), and hands back where they went.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from helpers.examples import ExampleBuild, build_example


@pytest.fixture(scope="session")
def example_build(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], ExampleBuild]:
    built: dict[str, ExampleBuild] = {}

    def build(example: str) -> ExampleBuild:
        if example not in built:
            built[example] = build_example(example, tmp_path_factory.mktemp("examples"))
        return built[example]

    return build
