"""How long the language server takes from a ``didChange`` to its ``publishDiagnostics``.

Starts the server (``python -m lsp``) over stdio, opens each example spec, then makes N
edits one at a time (as a user pausing after each) and times each edit until the
diagnostics of that document version arrive. Prints the median and 90th percentile, with
spec execution off (static checks) and on (the spec runs in a child process). The
figures include the server's debounce delay (``act.diagnosticsDelayMs``), as a user sees.

    python tests/benchmarks/lsp_latency.py [--changes 30] [--delay-ms 100]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import LanguageClient

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = [ROOT / "examples" / "QKV" / "QKV.py", ROOT / "examples" / "QKV_new" / "QKV_new.py"]
TIMEOUT_S = 30.0


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("lsp-latency", "1")
        self.arrived: dict[tuple[str, int | None], float] = {}
        self.event = asyncio.Event()


def make_client() -> Client:
    client = Client()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(ls: Client, params: types.PublishDiagnosticsParams) -> None:
        ls.arrived.setdefault((params.uri, params.version), time.perf_counter())
        ls.event.set()

    @client.feature(types.WORKSPACE_CONFIGURATION)
    def configuration(ls: Client, params: types.ConfigurationParams) -> list[None]:
        return [None for _ in params.items]  # settings come from initializationOptions

    @client.feature(types.WINDOW_LOG_MESSAGE)
    def log(ls: Client, params: types.LogMessageParams) -> None:
        if params.type == types.MessageType.Error:
            print(f"server: {params.message}", file=sys.stderr)

    return client


async def wait_for(client: Client, key: tuple[str, int]) -> float:
    deadline = time.perf_counter() + TIMEOUT_S
    while key not in client.arrived:
        client.event.clear()
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            raise TimeoutError(f"no diagnostics for {key} within {TIMEOUT_S} s")
        try:
            await asyncio.wait_for(client.event.wait(), remaining)
        except TimeoutError:
            pass
    return client.arrived[key]


async def measure(spec: Path, execute: bool, changes: int, delay_ms: int) -> list[float]:
    client = make_client()
    await client.start_io(sys.executable, "-m", "lsp")
    try:
        await client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(configuration=True)),
            root_uri=spec.parent.as_uri(),
            initialization_options={"act": {"executeSpecs": execute,
                                            "diagnosticsDelayMs": delay_ms}}))
        client.initialized(types.InitializedParams())
        uri = spec.as_uri()
        text = spec.read_text()
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)))
        await wait_for(client, (uri, 1))  # the first check warms everything up
        timings = []
        lines = text.count("\n")
        for version in range(2, changes + 2):
            # Append a comment at the end: a valid edit that changes the text each time.
            edit = types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(lines, 0), types.Position(lines, 0)),
                text=f"# edit {version}\n")
            lines += 1
            start = time.perf_counter()
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=uri, version=version), [edit]))
            arrived = await wait_for(client, (uri, version))
            timings.append((arrived - start) * 1000.0)
        await client.shutdown_async(None)
        client.exit(None)
        return timings
    finally:
        await client.stop()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=30, help="edits per example and mode")
    parser.add_argument("--delay-ms", type=int, default=100,
                        help="the server's debounce delay (act.diagnosticsDelayMs)")
    options = parser.parse_args()
    print(f"didChange -> publishDiagnostics, {options.changes} edits each, "
          f"debounce {options.delay_ms} ms (included)")
    for execute in (False, True):
        mode = "execution on " if execute else "execution off"
        for spec in EXAMPLES:
            timings = await measure(spec, execute, options.changes, options.delay_ms)
            print(f"{spec.name:12} {mode}  median {statistics.median(timings):7.1f} ms  "
                  f"p90 {percentile(timings, 0.9):7.1f} ms  "
                  f"(min {min(timings):.1f}, max {max(timings):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
