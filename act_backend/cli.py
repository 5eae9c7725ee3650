"""The ``act-backend`` command: one subcommand per task the package runs from a file
(``act-backend sweep SWEEP.toml``). Each subcommand's module adds its parser and runs it; the
command itself only dispatches, so that ``act-backend --help`` imports nothing heavy.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from act_backend import __version__
    from act_backend.sweep import cli as sweep_cli

    parser = argparse.ArgumentParser(
        prog="act-backend",
        description="Test oracles, compiler backends and editor tooling from TAIDL specs.")
    parser.add_argument("-V", "--version", action="version",
                        version=f"act-backend {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sweep_cli.add_parser(commands)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    raise SystemExit(main())
