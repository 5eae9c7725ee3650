"""``act.simulateKernel [compiledPath, oracleDir, dataFiles, hloPath?]``: run a compiled
kernel on the generated oracle with the given input files and compare its output with the
NumPy reference of the kernel's HLO (``hloPath``, by default the ``.hlo`` file beside the
compiled one). The result carries what the simulation child measured (``lsp.simulate_child``):
the largest difference in ulps and in absolute value, where it is, the run time, and
heatmaps of the output and of the difference, which the editor's simulation view draws."""

from __future__ import annotations

import os
from typing import Any

from lsprotocol import types

from lsp.commands.arguments import Arguments
from lsp.commands.running import CommandRun

NAME = "act.simulateKernel"
ARGUMENTS = ("compiledPath", "oracleDir", "dataFiles", "hloPath")


def parse_arguments(values: list[Any] | None, root: str | None
                    ) -> tuple[str, str, list[str], str]:
    args = Arguments(NAME, values, root, ARGUMENTS)
    compiled = args.existing_file("compiledPath", (".py",))
    assert compiled is not None
    oracle = args.directory("oracleDir")
    data = args.existing_files("dataFiles")
    beside = os.path.splitext(compiled)[0] + ".hlo"
    if args.raw("hloPath", required=False) is None and not os.path.isfile(beside):
        raise args.fail("hloPath", f"is missing and there is no {beside} beside the compiled "
                        "kernel to compare with")
    hlo = args.existing_file("hloPath", (".hlo",), default=beside)
    assert hlo is not None
    return compiled, oracle, data, hlo


def summarize(payload: dict[str, Any] | None, stderr_tail: str, compiled: str
              ) -> dict[str, Any]:
    name = os.path.basename(compiled)
    if payload is None:
        return {"ok": False, "message": f"Simulating {name} stopped without a result"
                + (f":\n{stderr_tail.strip()[-2000:]}" if stderr_tail.strip() else "")}
    if "error" in payload:
        return {"ok": False, "message": f"Simulating {name} failed: {payload['error']}"}
    result = payload["result"]
    return {"ok": True, **result,
            "message": f"Simulated {name}: {largest_difference(result)}, max |oracle - "
                       f"reference| = {result['max_abs_diff']:.6g}{of_largest(result)} "
                       f"(largest reference magnitude {result['max_abs_reference']:.6g}, "
                       f"shape {result['shape']}, {result['run_ms']:.1f} ms)"}


def of_largest(result: dict[str, Any]) -> str:
    """`` = 2 ulps of the largest magnitude`` for a float output, else nothing."""
    ulps = result.get("max_abs_ulps_of_largest")
    if result.get("difference_unit") != "ulps" or ulps is None:
        return ""
    return f" = {ulps:g} ulps of the largest magnitude"


def largest_difference(result: dict[str, Any]) -> str:
    """``largest difference 2 ulps (bfloat16)``; a NaN against a number is infinitely many."""
    if "max_ulps" not in result:
        return "largest difference not measured"
    unit = result.get("difference_unit", "ulps")
    ulps = result["max_ulps"]
    amount = "infinitely many" if ulps is None else f"{ulps:g}"
    if ulps == 1 and unit == "ulps":
        unit = "ulp"
    return f"largest difference {amount} {unit} ({result.get('dtype', '?')})"


async def run(server: Any, values: list[Any] | None, token: types.ProgressToken | None
              ) -> dict[str, Any]:
    compiled, oracle, data, hlo = parse_arguments(values, server.workspace_root())
    title = f"Simulating {os.path.basename(compiled)}"
    request = {"compiled": compiled, "oracle_dir": oracle, "data_files": data, "hlo": hlo}
    async with CommandRun(server, NAME, title, token) as running:
        result = await running.child("simulate", request, cwd=os.path.dirname(compiled))
    summary = summarize(result.payload, result.stderr_tail, compiled)
    server.show(summary["message"], ok=summary["ok"])
    return summary
