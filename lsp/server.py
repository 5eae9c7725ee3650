"""The language server: protocol wiring over the plain functions of the other modules.

Handlers here only fetch the document, call a feature function, and convert its result
(``convert.Converter``). Long work is elsewhere: checks in ``diagnostics`` (worker thread
or child process), commands in ``commands`` (child processes with progress).

Run with ``act-backend-lsp`` (or ``python -m lsp``); it speaks LSP on stdio.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
from collections.abc import Generator
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method

from lsp import documents, settings
from lsp.commands import compile as compile_command
from lsp.commands import describe as describe_command
from lsp.commands import generate as generate_command
from lsp.commands import simulate as simulate_command
from lsp.commands.arguments import ArgumentError
from lsp.compiled import Compilations
from lsp.convert import SOURCE, Converter
from lsp.diagnostics import DiagnosticsScheduler
from lsp.features import (
    code_actions,
    completion,
    definition,
    hover,
    inlay_hints,
    lenses,
    navigation,
    symbols,
)
from lsp.findings import Finding
from lsp.paths import same_file
from lsp.spec import check as spec_check
from lsp.spec import model as spec_model
from lsp.spec.reader import read_spec
from lsp.spec.runner import new_checker
from lsp.text_map import TextRange, lines_of

VERSION = "0.1.0"
log = logging.getLogger(__name__)

COMMANDS = {
    generate_command.NAME: generate_command.run,
    compile_command.NAME: compile_command.run,
    simulate_command.NAME: simulate_command.run,
    describe_command.NAME: describe_command.run,
}


class ActProtocol(LanguageServerProtocol):
    """Passes each command its raw arguments and the request's work-done token (pygls'
    default would structure the arguments by annotation and drop the token)."""

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(
        self, params: types.ExecuteCommandParams
    ) -> Generator[Any, Any, Any]:
        handler = self.fm.commands.get(params.command)
        if handler is None:
            known = ", ".join(sorted(self.fm.commands))
            raise JsonRpcInvalidParams(
                message=f"unknown command {params.command!r} (this server runs: {known})")
        result = yield handler, (list(params.arguments or []), params.work_done_token), None
        return result


class ActLanguageServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("act-backend-lsp", VERSION, protocol_cls=ActProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.settings = settings.Settings()
        self.checker = new_checker()
        self.scheduler = DiagnosticsScheduler(self)
        # What each compile produced: navigation between kernels and their assemblies.
        self.compilations = Compilations()

    # ---- helpers the commands use ----------------------------------------------------

    def workspace_root(self) -> str | None:
        try:
            return self.workspace.root_path
        except RuntimeError:
            return None

    def document_text(self, path: str) -> str:
        """The editor's text of a file when it is open, else what is on disk."""
        uri = self.uri_for(path)
        document = self.workspace.text_documents.get(uri)
        if document is not None:
            return document.source
        with open(path, encoding="utf-8") as handle:
            return handle.read()

    def uri_for(self, path: str) -> str:
        for uri in self.workspace.text_documents:
            if same_file(documents.path_of(uri), path):
                return uri
        return documents.uri_of(path)

    def set_command_findings(self, uri: str, command: str, findings: list[Finding]) -> None:
        self.scheduler.set_command_findings(uri, command, findings)

    def show(self, message: str, ok: bool) -> None:
        kind = types.MessageType.Info if ok else types.MessageType.Error
        self.window_show_message(types.ShowMessageParams(kind, message))
        self.window_log_message(types.LogMessageParams(kind, message))

    # ---- settings --------------------------------------------------------------------

    def apply_settings(self, raw: Any) -> None:
        before = self.settings
        self.settings, ignored = settings.parse(raw, before)
        for message in ignored:
            self.window_log_message(types.LogMessageParams(types.MessageType.Warning, message))
        if self.settings.execute_specs:
            self.checker.prestart()
        elif before.execute_specs:
            # Running specs was turned off (the workspace lost its trust): stop the
            # process that runs them; a new one starts if it is turned on again.
            retired, self.checker = self.checker, new_checker()
            asyncio.ensure_future(retired.close())
        if self.settings != before:
            for uri in self.scheduler.open_uris():
                self.scheduler.schedule(uri)

    async def pull_settings(self) -> None:
        capabilities = self.client_capabilities.workspace
        if not (capabilities and capabilities.configuration):
            return
        try:
            answer = await self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section=settings.SECTION)]))
        except Exception as exc:
            log.warning("workspace/configuration failed: %s", exc)
            return
        if answer:
            self.apply_settings(answer[0])

    # ---- models ----------------------------------------------------------------------

    def spec_model(self, uri: str) -> tuple[spec_model.SpecModel, list[str]] | None:
        """The spec model of an open document as of its current text: the last check's
        when it is current, else a fresh static reading (the last one if the text does
        not parse right now)."""
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return None
        text = document.source
        if documents.kind_of(uri, text) != documents.SPEC:
            return None
        lines = lines_of(text)
        stored = self.scheduler.models.get(uri)
        if stored is not None and stored[0] == document.version:
            return stored[1], lines
        tree, _ = spec_check.parse(text, documents.path_of(uri))
        if tree is None:
            return (stored[1] if stored else spec_model.SpecModel()), lines
        model = spec_model.from_reading(read_spec(tree), lines)
        self.scheduler.models[uri] = (document.version, model)
        return model, lines

    def pairing(self, uri: str) -> navigation.Pairing | None:
        """A kernel, or an assembly that is not a spec, with the other side of its last
        compile (``lsp.compiled``)."""
        path = documents.path_of(uri)
        if path is None:
            return None
        if uri.lower().endswith(".hlo"):
            compiled = self.compilations.for_kernel(path)
        elif uri.lower().endswith(".py") and self.spec_model(uri) is None:
            compiled = self.compilations.for_assembly(path)
        else:
            return None
        return navigation.pairing(self.compilations, compiled, self.document_text)

    def converter_for_text(self, lines: list[str]) -> Converter:
        return Converter(self.workspace.position_codec, lines)

    def converter(self, uri: str) -> Converter | None:
        document = self.workspace.text_documents.get(uri)
        if document is None:
            return None
        return Converter(self.workspace.position_codec, lines_of(document.source))


def build() -> ActLanguageServer:
    server = ActLanguageServer()
    _register_documents(server)
    _register_features(server)
    _register_actions(server)
    _register_commands(server)
    return server


def _register_documents(server: ActLanguageServer) -> None:
    @server.feature(types.INITIALIZE)
    def initialize(ls: ActLanguageServer, params: types.InitializeParams) -> None:
        ls.apply_settings(params.initialization_options)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: ActLanguageServer, params: types.InitializedParams) -> None:
        await ls.pull_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def configuration_changed(ls: ActLanguageServer,
                                    params: types.DidChangeConfigurationParams) -> None:
        pushed = params.settings
        if isinstance(pushed, dict) and isinstance(pushed.get(settings.SECTION), dict):
            ls.apply_settings(pushed)
        else:
            await ls.pull_settings()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: ActLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.scheduler.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: ActLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.scheduler.changed(uri)
        ls.scheduler.schedule(uri, ls.settings.diagnostics_delay_ms / 1000.0)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE,
                    types.TextDocumentSaveRegistrationOptions(include_text=False))
    def did_save(ls: ActLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.scheduler.schedule(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: ActLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.scheduler.close(params.text_document.uri)

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: ActLanguageServer, params: None) -> None:
        await ls.scheduler.shutdown()
        await ls.checker.close()


_SYMBOL_KIND = {
    "accelerator": types.SymbolKind.Module,
    "data_model": types.SymbolKind.Struct,
    "instruction": types.SymbolKind.Function,
    "computation": types.SymbolKind.Function,
    "value": types.SymbolKind.Variable,
}
_COMPLETION_KIND = {
    "operator": types.CompletionItemKind.Function,
    "dtype": types.CompletionItemKind.TypeParameter,
    "attribute": types.CompletionItemKind.Property,
    "data_model": types.CompletionItemKind.Struct,
    "field": types.CompletionItemKind.Field,
}


def _to_symbol(conv: Converter, symbol: symbols.Symbol) -> types.DocumentSymbol:
    return types.DocumentSymbol(
        name=symbol.name or "?", kind=_SYMBOL_KIND[symbol.kind], detail=symbol.detail,
        range=conv.range(symbol.range), selection_range=conv.range(symbol.selection_range),
        children=[_to_symbol(conv, child) for child in symbol.children])


def _register_features(server: ActLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    def document_symbol(ls: ActLanguageServer, params: types.DocumentSymbolParams
                        ) -> list[types.DocumentSymbol]:
        uri = params.text_document.uri
        conv = ls.converter(uri)
        if conv is None:
            return []
        if uri.lower().endswith(".hlo"):
            found = symbols.kernel_symbols(conv.lines)
        else:
            spec = ls.spec_model(uri)
            found = symbols.spec_symbols(spec[0]) if spec else []
        return [_to_symbol(conv, s) for s in found]

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def on_hover(ls: ActLanguageServer, params: types.HoverParams) -> types.Hover | None:
        uri = params.text_document.uri
        conv = ls.converter(uri)
        if conv is None:
            return None
        pos = conv.from_client(params.position)
        if uri.lower().endswith(".hlo"):
            found = hover.kernel_hover(conv.lines, pos)
        else:
            spec = ls.spec_model(uri)
            found = hover.spec_hover(spec[0], conv.lines, pos) if spec else None
            pairing = ls.pairing(uri) if spec is None else None
            if pairing is not None:
                found = navigation.assembly_hover(pairing, pos)
        if found is None:
            return None
        return types.Hover(
            contents=types.MarkupContent(types.MarkupKind.Markdown, found.markdown),
            range=conv.range(found.range) if found.range else None)

    @server.feature(types.TEXT_DOCUMENT_COMPLETION,
                    types.CompletionOptions(trigger_characters=["@", ".", "%", '"', "'", " "]))
    def on_completion(ls: ActLanguageServer, params: types.CompletionParams
                      ) -> types.CompletionList:
        uri = params.text_document.uri
        conv = ls.converter(uri)
        items: list[completion.Item] = []
        if conv is not None:
            pos = conv.from_client(params.position)
            if uri.lower().endswith(".hlo"):
                items = completion.kernel_completions(conv.lines, pos)
            else:
                spec = ls.spec_model(uri)
                items = completion.spec_completions(spec[0], conv.lines, pos) if spec else []
        return types.CompletionList(is_incomplete=False, items=[
            types.CompletionItem(
                label=item.label, kind=_COMPLETION_KIND.get(item.kind), detail=item.detail,
                documentation=types.MarkupContent(types.MarkupKind.Markdown, item.documentation)
                if item.documentation else None,
                insert_text=item.insert_text)
            for item in items])

    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    def on_definition(ls: ActLanguageServer, params: types.DefinitionParams
                      ) -> types.Location | list[types.Location] | None:
        uri = params.text_document.uri
        conv = ls.converter(uri)
        if conv is None:
            return None
        pos = conv.from_client(params.position)
        if uri.lower().endswith(".hlo"):
            found = definition.kernel_definition(conv.lines, pos)
        else:
            spec = ls.spec_model(uri)
            found = definition.spec_definition(spec[0], conv.lines, pos) if spec else None
            pairing = ls.pairing(uri) if spec is None else None
            if pairing is not None:
                # An api. call of an assembly: the HLO instructions it implements.
                return _locations(ls, pairing.compiled.kernel, pairing.kernel_lines,
                                  navigation.assembly_definition(pairing, pos))
        return types.Location(uri, conv.range(found)) if found is not None else None

    @server.feature(types.TEXT_DOCUMENT_IMPLEMENTATION)
    def on_implementation(ls: ActLanguageServer, params: types.ImplementationParams
                          ) -> list[types.Location]:
        """An HLO instruction of a compiled kernel: the assembly calls that implement it."""
        uri = params.text_document.uri
        conv = ls.converter(uri)
        pairing = ls.pairing(uri) if uri.lower().endswith(".hlo") else None
        if conv is None or pairing is None:
            return []
        pos = conv.from_client(params.position)
        return _locations(ls, pairing.compiled.assembly, pairing.assembly_lines,
                          navigation.kernel_implementation(pairing, pos))

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
    def on_inlay_hint(ls: ActLanguageServer, params: types.InlayHintParams
                      ) -> list[types.InlayHint]:
        uri = params.text_document.uri
        conv = ls.converter(uri)
        if conv is None:
            return []
        within = TextRange(conv.from_client(params.range.start),
                           conv.from_client(params.range.end))
        if uri.lower().endswith(".hlo"):
            found = inlay_hints.kernel_hints(conv.lines, within)
        else:
            spec = ls.spec_model(uri)
            found = inlay_hints.spec_hints(spec[0], conv.lines, within) if spec else []
        return [types.InlayHint(
            position=conv.position(hint.position), label=hint.label,
            kind=types.InlayHintKind.Type, padding_left=True,
            tooltip=types.MarkupContent(types.MarkupKind.Markdown, hint.tooltip))
            for hint in found]

    @server.feature(types.TEXT_DOCUMENT_CODE_LENS)
    def on_code_lens(ls: ActLanguageServer, params: types.CodeLensParams
                     ) -> list[types.CodeLens]:
        uri = params.text_document.uri
        conv = ls.converter(uri)
        if conv is None:
            return []
        pairing = ls.pairing(uri)
        if uri.lower().endswith(".hlo"):
            found = lenses.kernel_lenses(uri, documents.path_of(uri))
            if pairing is not None:
                found += navigation.kernel_lenses(pairing)
        else:
            spec = ls.spec_model(uri)
            found = lenses.spec_lenses(spec[0], uri) if spec else []
            if pairing is not None:
                found = navigation.assembly_lenses(pairing)
        return [types.CodeLens(
            range=conv.range(lens.range),
            command=types.Command(title=lens.title, command=lens.command or "",
                                  arguments=lens.arguments or None))
            for lens in found]


def _locations(ls: ActLanguageServer, path: str, lines: list[str],
               ranges: list[TextRange]) -> list[types.Location]:
    conv = ls.converter_for_text(lines)
    target = ls.uri_for(path)
    return [types.Location(target, conv.range(where)) for where in ranges]


def _register_actions(server: ActLanguageServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def on_code_action(ls: ActLanguageServer, params: types.CodeActionParams
                       ) -> list[types.CodeAction]:
        uri = params.text_document.uri
        document = ls.workspace.text_documents.get(uri)
        conv = ls.converter(uri)
        if document is None or conv is None or not code_actions.wanted(params.context.only):
            return []
        found = code_actions.quick_fixes(list(params.context.diagnostics), SOURCE,
                                         document.version)
        return [types.CodeAction(
            title=action.fix.title, kind=types.CodeActionKind.QuickFix,
            diagnostics=[action.diagnostic], is_preferred=action.fix.preferred or None,
            edit=types.WorkspaceEdit(changes={uri: [
                types.TextEdit(conv.range(edit.range), edit.text)
                for edit in action.fix.edits]}))
            for action in found]


def _register_commands(server: ActLanguageServer) -> None:
    for name, runner in COMMANDS.items():
        server.command(name)(_command_handler(runner))


def _command_handler(runner):
    async def handler(ls: ActLanguageServer, arguments: list[Any],
                      token: types.ProgressToken | None) -> Any:
        try:
            result = await runner(ls, arguments, token)
        except ArgumentError as exc:
            raise JsonRpcInvalidParams(message=str(exc)) from exc
        if runner in (generate_command.run, compile_command.run) \
                and _supports_lens_refresh(ls):
            # A new backend changes what the kernels' "Compile kernel" lenses offer; a
            # compile, which instruction implements what.
            asyncio.ensure_future(_refresh_lenses(ls))
        return result

    return handler


async def _refresh_lenses(ls: ActLanguageServer) -> None:
    try:
        await ls.workspace_code_lens_refresh_async(None)
    except Exception as exc:  # a client that claims the capability but fails is harmless
        log.info("workspace/codeLens/refresh failed: %s", exc)


def _supports_lens_refresh(ls: ActLanguageServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.code_lens and workspace.code_lens.refresh_support)


class _ExpectedRequestErrors(logging.Filter):
    """pygls logs every failed request with a traceback; a refused argument or a
    cancellation is an answer, not a server fault, so it stays out of the log."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, (JsonRpcInvalidParams, JsonRpcRequestCancelled))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="act-backend-lsp",
        description="The act-backend language server for TAIDL specs and HLO kernels.")
    parser.add_argument("--stdio", action="store_true",
                        help="talk LSP over stdin/stdout (the default)")
    parser.add_argument("--log-file", help="write the server's log to this file")
    parser.add_argument("--log-level", default="WARNING",
                        choices=["DEBUG", "INFO", "WARNING", "ERROR"])
    options = parser.parse_args(argv)
    handler: logging.Handler = (logging.FileHandler(options.log_file) if options.log_file
                                else logging.StreamHandler())
    logging.basicConfig(level=options.log_level, handlers=[handler],
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("pygls.protocol.json_rpc").addFilter(_ExpectedRequestErrors())
    build().start_io()


if __name__ == "__main__":
    main()
