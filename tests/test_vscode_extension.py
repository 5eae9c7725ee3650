"""The VS Code extension (``vscode-extension/``), run from the Python suite so CI covers it.

Its unit tests (vitest, with a fake ``vscode`` module) and type check run here; packaging
checks that the .vsix holds the bundled extension and its grammars and nothing else; the
end-to-end smoke test drives the packaged extension in code-server through headless Chromium
(``scripts/e2e.sh``). Node.js and the e2e tools are installed by
``vscode-extension/scripts/install-e2e-deps.sh``; a test whose tools are missing is skipped,
naming what to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXTENSION = ROOT / "vscode-extension"
CODE_SERVER_VERSION = "4.100.3"


def _unavailable(reason: str) -> None:
    """Skip where the editor toolchain is not installed; in CI, where .ci/run installs it,
    its absence is a failure, never a silent skip."""
    message = f"{reason} (vscode-extension/scripts/install-e2e-deps.sh)"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def _npm() -> str:
    npm = shutil.which("npm")
    if npm is None:
        _unavailable("Node.js/npm is not installed")
    return npm


def _run(argv: list[str], timeout: float, env: dict[str, str] | None = None) -> str:
    """Run a command in the extension folder; fail the test with its output if it fails."""
    result = subprocess.run(argv, cwd=EXTENSION, capture_output=True, text=True,
                            timeout=timeout, env=env)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(argv)} exited with {result.returncode}:\n{output}"
    return output


@pytest.fixture(scope="module")
def npm() -> str:
    """npm, with the extension's locked dependencies installed."""
    npm = _npm()
    if not (EXTENSION / "node_modules" / ".package-lock.json").exists():
        _run([npm, "ci", "--no-audit", "--no-fund"], timeout=600)
    return npm


def test_unit_tests_pass(npm: str) -> None:
    output = _run([npm, "test", "--", "--reporter=dot"], timeout=300)
    assert "passed" in output


def test_sources_type_check(npm: str) -> None:
    _run([npm, "run", "typecheck"], timeout=300)


@pytest.mark.slow
def test_vsix_holds_the_bundled_extension_and_grammars(npm: str, tmp_path: Path) -> None:
    vsix = tmp_path / "act-backend.vsix"
    _run([npm, "run", "package", "--", "--out", str(vsix)], timeout=300)
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        manifest = archive.read("extension/package.json").decode()
    for expected in ("extension/out/extension.js",
                     "extension/syntaxes/hlo.tmLanguage.json",
                     "extension/syntaxes/taidl-semantics-call.injection.tmLanguage.json",
                     "extension/syntaxes/taidl-semantics-string.injection.tmLanguage.json",
                     "extension/language-configuration.json",
                     "extension/readme.md",
                     "extension/LICENSE.txt"):
        assert expected in names, f"{expected} missing from the .vsix: {sorted(names)}"
    # Bundled: no sources, tests, node_modules or source maps travel with it.
    stray = [n for n in names if n.startswith(("extension/src/", "extension/test/",
                                               "extension/node_modules/"))
             or n.endswith(".map")]
    assert stray == []
    assert '"main": "./out/extension.js"' in manifest


def _e2e_tools_missing() -> str | None:
    cache = Path(os.environ.get("ACT_E2E_CACHE", Path.home() / ".cache" / "act-vscode-e2e"))
    code_server = (cache / f"code-server-{CODE_SERVER_VERSION}" / "node_modules" / ".bin"
                   / "code-server")
    if not code_server.exists():
        return f"code-server {CODE_SERVER_VERSION} is not installed in {cache}"
    if shutil.which("chromium") is None:
        return "chromium is not installed"
    return None


@pytest.mark.slow
def test_end_to_end_in_code_server(npm: str) -> None:
    """Restricted Mode hides the build commands and a missing interpreter is explained; in
    a trusted window a refused instruction shows in the Problems panel, its quick fix from the
    editor's quick-fix menu repairs it and the diagnostics are republished, Generate Backend can
    be cancelled and then builds backends/QKV, Compile Kernel compiles the attention kernel,
    Show Compile Report shows its assembly linked to the HLO and its memory picture, and
    Simulate Kernel runs it on the oracle and shows the difference in ulps and heatmaps.
    Screenshots of each step go to vscode-extension/test-results/."""
    missing = _e2e_tools_missing()
    if missing is not None:
        _unavailable(missing)
    env = {**os.environ, "ACT_E2E_PYTHON": sys.executable}
    # Generating the backend builds a Rust crate: allow for a cold cargo cache.
    _run(["bash", "scripts/e2e.sh"], timeout=3600, env=env)
