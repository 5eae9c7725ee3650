"""A language client for the end-to-end tests of the language server: a real server process
over stdio, driven by pytest-lsp, that records every notification and waits for a condition
with a timeout (never a sleep); the fixtures that start one with a workspace's settings
(``server``); and the documents, commands and stand-in backends the tests hand it."""

from __future__ import annotations

import asyncio
import shutil
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import register_lsp_features
from pytest_lsp.protocol import LanguageClientProtocol

from lsp.documents import uri_of

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
WAIT_S = 20.0


# ---- a client that records every notification and can wait for a condition ------------


class RecordingProtocol(LanguageClientProtocol):
    def _handle_notification(self, method_name, params):
        super()._handle_notification(method_name, params)
        client = self._server
        if method_name == types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS:
            client.published.append(params)
        client.activity().set()


class RecordingClient(LanguageClient):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, protocol_cls=RecordingProtocol, **kwargs)
        self.published: list[types.PublishDiagnosticsParams] = []
        self._activity: asyncio.Event | None = None

    def activity(self) -> asyncio.Event:
        if self._activity is None:
            self._activity = asyncio.Event()
        return self._activity


def make_client() -> RecordingClient:
    from pygls.protocol import default_converter

    client = RecordingClient(converter_factory=default_converter)
    register_lsp_features(client)
    client.refreshed_lenses = 0

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def refresh_lenses(ls: RecordingClient, params: None) -> None:
        ls.refreshed_lenses += 1

    return client


async def until(client: RecordingClient, predicate: Callable[[], Any], what: str,
                timeout: float = WAIT_S) -> Any:
    """Wait until ``predicate()`` is truthy, re-checking whenever a notification arrives."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = predicate()
        if value:
            return value
        client.activity().clear()
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        try:
            await asyncio.wait_for(client.activity().wait(), remaining)
        except TimeoutError:
            pass


async def diagnostics(client: RecordingClient, uri: str, version: int | None = None,
                      where: Callable[[list[types.Diagnostic]], bool] = lambda d: True,
                      timeout: float = WAIT_S) -> list[types.Diagnostic]:
    """The first diagnostics published for ``uri`` (at ``version``) that satisfy ``where``."""
    seen = 0

    def found():
        nonlocal seen
        for params in client.published[seen:]:
            seen += 1
            if params.uri == uri and (version is None or params.version == version):
                if where(list(params.diagnostics)):
                    return list(params.diagnostics) or [None]
        return None

    result = await until(client, found, f"diagnostics of {uri}", timeout)
    return [d for d in result if d is not None]


# ---- servers -------------------------------------------------------------------------------

CONFIG = ClientServerConfig(server_command=[sys.executable, "-m", "lsp"],
                            client_factory=make_client)


# The ``act`` settings of an untrusted workspace: specs are read, never run.
UNTRUSTED = {"diagnosticsDelayMs": 50}


def trusted(spec_timeout_s: float, spec_memory_limit_mb: int) -> dict[str, Any]:
    """The ``act`` settings of a trusted workspace: specs are run, within these limits."""
    return {"executeSpecs": True, "specTimeout": spec_timeout_s,
            "specMemoryLimitMb": spec_memory_limit_mb, "diagnosticsDelayMs": 50}


def server(act: dict[str, Any]):
    """A pytest-lsp fixture: a server for a workspace in the test's ``tmp_path``, initialised
    with the ``act`` settings and shut down after the test. A test module names it by
    assigning it (``static_client = server(UNTRUSTED)``)."""

    @pytest_lsp.fixture(config=CONFIG)
    async def client(lsp_client: RecordingClient, tmp_path: Path):
        await start(lsp_client, tmp_path, act)
        yield
        await lsp_client.shutdown_session()

    return client


async def start(client: LanguageClient, root: Path, act: dict[str, Any]) -> None:
    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"),
        root_uri=uri_of(str(root)),
        initialization_options={"act": act}))


def open_document(client: LanguageClient, path: Path, text: str | None = None,
                  language: str = "python") -> str:
    uri = uri_of(str(path))
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri, language, 1, text if text is not None else path.read_text())))
    return uri


def replace_text(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        [types.TextDocumentContentChangeWholeDocument(text)]))


def copy_example(tmp_path: Path, name: str = "QKV") -> Path:
    target = tmp_path / name
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(
        "targets", "backends", "__pycache__"))
    return target


def position_of(text: str, needle: str, offset: int = 0, occurrence: int = 0) -> types.Position:
    index = -1
    for _ in range(occurrence + 1):
        index = text.index(needle, index + 1)
    index += offset
    line = text.count("\n", 0, index)
    return types.Position(line, index - (text.rfind("\n", 0, index) + 1))


def fake_backend(path: Path, body: str) -> Path:
    """An executable standing in for a generated backend (a Python script)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\nimport sys, time\n"
                    "args = dict(zip(sys.argv[1::2], sys.argv[2::2]))\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


async def execute(client: LanguageClient, command: str, arguments: list[Any],
                  token: str | None = None) -> Any:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command, arguments, work_done_token=token))


def apply_edits(text: str, edits: list[tuple[tuple[int, int], tuple[int, int], str]]) -> str:
    """``text`` with each ``(start, end, new_text)`` applied (0-based line and column; the
    ranges do not overlap), as an editor applies a workspace edit."""
    lines = text.splitlines(keepends=True) or [""]

    def offset(position: tuple[int, int]) -> int:
        line, column = position
        return sum(len(x) for x in lines[:line]) + column

    for start, end, new_text in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:offset(start)] + new_text + text[offset(end):]
    return text
