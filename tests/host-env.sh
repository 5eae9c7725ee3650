# shellcheck shell=bash
# Sourced by the test scripts: make .venv (a virtual environment with the package installed
# editable and tests/requirements.txt) current, and export ACT_PYTHON, its interpreter.
# Reinstalls only when pyproject.toml or tests/requirements.txt changed.
root="${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
stamp="$venv/.act-requirements"
want="$(cat "$root/pyproject.toml" "$root/tests/requirements.txt" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "tests: installing the package and tests/requirements.txt into .venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -e "$root" -r "$root/tests/requirements.txt"
    echo "$want" > "$stamp"
fi
export ACT_PYTHON="$venv/bin/python"
export PATH="$venv/bin:$PATH"
