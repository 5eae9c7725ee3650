"""``act-backend sweep SWEEP.toml``: the command line over ``run_sweep``. Progress lines go
to stderr as points finish; where the results went and the best configurations go to
stdout. Exit status 0 when the sweep ran (whatever its points' statuses), 1 when it could not
(a bad sweep file, Ray missing or unreachable), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import sys


def add_parser(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "sweep", help="compile kernels on every point of a design space (on Ray)",
        description="Generate a backend for every point of a parameterised spec, compile "
                    "and simulate the sweep's kernels on it, and write the results table "
                    "(CSV and Parquet), the best configurations and a plot.")
    parser.add_argument("sweep_file", metavar="SWEEP.toml", help="the sweep file")
    parser.add_argument("--workers", type=_positive, metavar="N",
                        help="CPUs of the embedded local Ray (default: [run] workers, else "
                             "every CPU)")
    parser.add_argument("--address", metavar="ADDRESS",
                        help="run on an existing Ray cluster (ray.init(address=ADDRESS), "
                             "e.g. auto or ray://head:10001) instead of a local one")
    parser.add_argument("--output", metavar="DIR",
                        help="where the results go (default: [run] output, else "
                             "<file stem>-results beside the file)")
    parser.add_argument("--serial", action="store_true",
                        help="run the points one after another in this process, without Ray")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from act_backend.sweep.best import describe
    from act_backend.sweep.model import SweepError, SweepFileError
    from act_backend.sweep.run import run_sweep

    if args.serial and (args.workers or args.address):
        print("act-backend sweep: error: --serial runs without Ray; it takes no --workers "
              "or --address", file=sys.stderr)
        return 2
    try:
        result = run_sweep(args.sweep_file, workers=args.workers, address=args.address,
                           output=args.output, serial=args.serial)
    except (SweepFileError, SweepError) as e:
        print(f"act-backend sweep: error: {e}", file=sys.stderr)
        return 1
    statuses: dict[str, int] = {}
    for row in result.rows:
        statuses[row["status"]] = statuses.get(row["status"], 0) + 1
    counts = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    print(f"{len(result.points)} points x {len(result.sweep.kernels)} kernels in "
          f"{result.wall_s:.1f} s: {counts}")
    print(f"table: {result.files['csv']} (and {result.files['parquet'].name})")
    print(f"best:  {result.files['best']}")
    for line in describe(result.best):
        print(line)
    print(f"plot:  {result.files['plot']}")
    print(f"times: {result.files['timings']}")
    return 0


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value
