"""The language server end to end: a real server process over stdio, driven by pytest-lsp.

Each test starts ``python -m lsp`` with the settings it needs, opens documents the way an
editor does, and waits (with a timeout, never a sleep) for the notifications it expects
(``helpers.lsp_session``).
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import textwrap
from typing import Any

import pytest
from helpers.lsp_session import (
    EXAMPLES,
    UNTRUSTED,
    WAIT_S,
    copy_example,
    diagnostics,
    execute,
    fake_backend,
    open_document,
    position_of,
    replace_text,
    server,
    trusted,
    until,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled

from lsp.documents import uri_of

# ---- servers -------------------------------------------------------------------------------


# A server that never runs specs (an untrusted workspace).
static_client = server(UNTRUSTED)
# A server that runs specs (a trusted workspace), with a short time limit.
running_client = server(trusted(spec_timeout_s=2, spec_memory_limit_mb=512))


def spec_with_mistakes() -> str:
    """QKV with one of each kind of mistake the validation reports."""
    text = (EXAMPLES / "QKV" / "QKV.py").read_text()
    text = text.replace('instr.set_outputs([["d1", ["@a.addr_out"], ["@c.n"]]])\n'
                        'instr.add_semantics("""\nENTRY load_cm',
                        'instr.set_outputs([["d9", ["@a.addr_out"], ["@c.n"]]])\n'
                        'instr.add_semantics("""\nENTRY load_cm')
    text = text.replace("transpose(%In1), dimensions={1,0};\n    %b = u8",
                        "transpos(%In1), dimensions={1,0};\n    %b = u8")
    text = text.replace("ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);",
                        "ROOT %Out0 = bf16[`@c.m`,64] copy(%In1);")
    text = text.replace('instr.add_semantics("""\nENTRY gemm', 'unused = ("""\nENTRY gemm')
    return text


def covered(text: str, diagnostic: types.Diagnostic) -> str:
    """The document text a diagnostic's range covers (single-line ranges)."""
    line = text.splitlines()[diagnostic.range.start.line]
    assert diagnostic.range.start.line == diagnostic.range.end.line
    return line[diagnostic.range.start.character:diagnostic.range.end.character]


def by_code(found: list[types.Diagnostic]) -> dict[str, types.Diagnostic]:
    return {str(d.code): d for d in found}


# ---- diagnostics on specs ------------------------------------------------------------------


def expect_qkv_mistakes(text: str, found: list[types.Diagnostic]) -> None:
    codes = by_code(found)
    assert covered(text, codes["unknown-buffer"]) == '"d9"'
    assert covered(text, codes["unknown-operator"]) == "transpos"
    assert covered(text, codes["undeclared-attribute"]) == "@c.m"
    warning = codes["no-semantics"]
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert "left out of the oracle and the backend" in warning.message
    assert covered(text, warning).startswith('qkv.add_instruction("gemm"')
    assert all(d.source == "act" for d in found)


@pytest.mark.asyncio
async def test_static_diagnostics_place_every_refusal_on_its_token(static_client, tmp_path):
    text = spec_with_mistakes()
    uri = open_document(static_client, tmp_path / "QKV.py", text)
    found = await diagnostics(static_client, uri, 1, where=bool)
    expect_qkv_mistakes(text, found)


@pytest.mark.asyncio
async def test_running_the_spec_reports_the_same_refusals(running_client, tmp_path):
    text = spec_with_mistakes()
    uri = open_document(running_client, tmp_path / "QKV.py", text)
    found = await diagnostics(running_client, uri, 1, where=bool)
    expect_qkv_mistakes(text, found)


@pytest.mark.asyncio
async def test_a_correct_example_has_no_diagnostics_either_way(static_client, running_client,
                                                                 tmp_path):
    for client in (static_client, running_client):
        for name in ("QKV", "QKV_new"):
            path = EXAMPLES / name / f"{name}.py"
            uri = open_document(client, path)
            assert await diagnostics(client, uri, 1) == []


@pytest.mark.asyncio
async def test_python_syntax_error_is_reported_at_its_line(static_client, tmp_path):
    text = "from act_backend import Accelerator\nacc = Accelerator('X'\nprint(1)\n"
    uri = open_document(static_client, tmp_path / "broken.py", text)
    found = await diagnostics(static_client, uri, 1, where=bool)
    assert [d.code for d in found] == ["python-syntax"]
    assert found[0].range.start.line in (1, 2)
    assert found[0].message.startswith("SyntaxError:")


@pytest.mark.asyncio
async def test_change_is_rechecked_and_close_clears(static_client, tmp_path):
    good = (EXAMPLES / "QKV" / "QKV.py").read_text()
    uri = open_document(static_client, tmp_path / "QKV.py", good)
    assert await diagnostics(static_client, uri, 1) == []
    bad = good.replace('add_instruction("mov", ["n"]', 'add_instruction("mov", ["n", "n"]')
    replace_text(static_client, uri, 2, bad)
    found = await diagnostics(static_client, uri, 2, where=bool)
    duplicate = by_code(found)["duplicate-attribute"]
    assert covered(bad, duplicate) == '"n"'
    assert duplicate.range.start.character == bad.splitlines()[64].index('"n"]')
    replace_text(static_client, uri, 3, good)
    assert await diagnostics(static_client, uri, 3) == []
    replace_text(static_client, uri, 4, bad)
    static_client.text_document_did_save(types.DidSaveTextDocumentParams(
        types.TextDocumentIdentifier(uri)))
    assert await diagnostics(static_client, uri, 4, where=bool)
    static_client.text_document_did_close(types.DidCloseTextDocumentParams(
        types.TextDocumentIdentifier(uri)))
    await until(static_client, lambda: static_client.published[-1].uri == uri
                and not static_client.published[-1].diagnostics, "diagnostics cleared")


@pytest.mark.asyncio
async def test_a_spec_that_loops_forever_times_out_and_the_server_keeps_answering(
        running_client, tmp_path):
    text = textwrap.dedent("""\
        from act_backend import Accelerator

        acc = Accelerator("Loop")
        count = 0
        while True:
            count += 1
    """)
    uri = open_document(running_client, tmp_path / "loop.py", text)
    # While the spec spins in its child process, requests are still answered.
    kernel = open_document(running_client, tmp_path / "k.hlo", "HloModule k\n", "hlo")
    answer = await asyncio.wait_for(running_client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(kernel))), 1.5)
    assert answer == []
    found = await diagnostics(running_client, uri, 1, where=bool)
    assert [d.code for d in found] == ["spec-timeout"]
    assert "timed out after 2 s" in found[0].message
    assert found[0].range.start.line in (4, 5)  # the loop
    symbols = await running_client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri)))
    assert [s.name for s in symbols] == ["Loop"]


@pytest.mark.asyncio
async def test_exceptions_and_memory_exhaustion_are_reported_at_their_line(running_client,
                                                                           tmp_path):
    raising = textwrap.dedent("""\
        from act_backend import Accelerator

        acc = Accelerator("Raise")
        widths = {"d1": 64}
        acc.add_data_model("d1", [128], [widths["d2"]], "bf16")
    """)
    uri = open_document(running_client, tmp_path / "raising.py", raising)
    found = await diagnostics(running_client, uri, 1, where=bool)
    assert [d.code for d in found] == ["spec-exception"]
    assert found[0].message == "KeyError: 'd2'"
    assert found[0].range.start.line == 4
    hungry = "from act_backend import Accelerator\nacc = Accelerator('Big')\n" \
             "blob = bytearray(64 * 1024 ** 3)\n"
    uri = open_document(running_client, tmp_path / "hungry.py", hungry)
    found = await diagnostics(running_client, uri, 1, where=bool)
    assert [d.code for d in found] == ["spec-memory"]
    assert found[0].range.start.line == 2


@pytest.mark.asyncio
async def test_generators_only_validate_when_a_spec_is_checked(running_client, tmp_path):
    example = copy_example(tmp_path)
    uri = open_document(running_client, example / "QKV.py")
    assert await diagnostics(running_client, uri, 1) == []
    assert not (example / "targets").exists()
    assert not (example / "backends").exists()


@pytest.mark.asyncio
async def test_static_mode_does_not_run_the_spec(static_client, tmp_path):
    marker = tmp_path / "ran"
    text = textwrap.dedent(f"""\
        from act_backend import Accelerator
        open({str(marker)!r}, "w").write("the spec ran")
        acc = Accelerator("Quiet")
    """)
    uri = open_document(static_client, tmp_path / "quiet.py", text)
    await diagnostics(static_client, uri, 1)
    assert not marker.exists()


@pytest.mark.asyncio
async def test_running_specs_is_switched_by_the_workspace_setting(static_client, tmp_path):
    (tmp_path / "dims.json").write_text("[128]")
    text = textwrap.dedent("""\
        import json
        from act_backend import Accelerator

        acc = Accelerator("Dims")
        acc.add_data_model("d1", json.load(open("dims.json")), [64], "bf17")
    """)
    uri = open_document(static_client, tmp_path / "dims.py", text)
    found = await diagnostics(static_client, uri, 1, where=bool)
    assert [d.code for d in found] == ["partially-checked"]

    def configure(act: dict[str, Any]) -> None:
        static_client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"act": act}))

    configure({"executeSpecs": True})
    found = await diagnostics(static_client, uri, 1,
                              where=lambda d: [x.code for x in d] == ["unknown-dtype"])
    assert covered(text, found[0]) == '"bf17"'
    configure({"executeSpecs": False})
    await diagnostics(static_client, uri, 1,
                      where=lambda d: [x.code for x in d] == ["partially-checked"])


# ---- diagnostics on kernels ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_kernel_diagnostics_cover_syntax_operators_and_shapes(static_client, tmp_path):
    good = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()
    uri = open_document(static_client, tmp_path / "attention.hlo", good, "hlo")
    assert await diagnostics(static_client, uri, 1) == []
    unknown = good.replace("exponential(bf16[64,64]{1,0} %S)", "expo(bf16[64,64]{1,0} %S)")
    replace_text(static_client, uri, 2, unknown)
    found = await diagnostics(static_client, uri, 2, where=bool)
    assert any(covered(unknown, d) == "expo" for d in found)
    shape = good.replace("%E = bf16[64,64]{1,0} exponential", "%E = bf16[64,32]{1,0} exponential")
    replace_text(static_client, uri, 3, shape)
    found = await diagnostics(static_client, uri, 3, where=bool)
    assert any("bf16[64,32]" in d.message for d in found)
    syntax = good.replace("%Kt = bf16[64,64]{1,0} transpose(", "%Kt = bf16[64,64]{1,0} (")
    replace_text(static_client, uri, 4, syntax)
    found = await diagnostics(static_client, uri, 4, where=bool)
    assert len(found) == 1 and found[0].range.start.line == 12


# ---- navigation ----------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_document_symbols_list_data_models_and_instructions(static_client):
    uri = open_document(static_client, EXAMPLES / "QKV_new" / "QKV_new.py")
    found = await static_client.text_document_document_symbol_async(
        types.DocumentSymbolParams(types.TextDocumentIdentifier(uri)))
    assert [s.name for s in found] == ["QKV_new"]
    children = found[0].children
    assert [c.name for c in children if c.kind == types.SymbolKind.Struct] == ["d1", "d3", "d2"]
    assert [c.name for c in children if c.kind == types.SymbolKind.Function] == [
        "load_01", "load_03", "store_10", "store_30", "transpose_13", "mov_21", "mov_23",
        "gemm_33", "gemm_13", "softmax"]


@pytest.mark.asyncio
async def test_hover_shows_instructions_data_models_and_operators(static_client):
    path = EXAMPLES / "QKV" / "QKV.py"
    text = path.read_text()
    uri = open_document(static_client, path)
    ident = types.TextDocumentIdentifier(uri)
    on_instr = await static_client.text_document_hover_async(
        types.HoverParams(ident, position_of(text, '"gemm"', 2)))
    shown = on_instr.contents.value
    assert "instruction gemm" in shown
    assert "`addr_1`, `addr_2`, `addr_out`" in shown
    assert "parameter 1: `bf16[64,64]`" in shown
    assert "ROOT: `bf16[64,64]`" in shown
    on_model = await static_client.text_document_hover_async(
        types.HoverParams(ident, position_of(text, '"d2"', 1, occurrence=1)))
    assert "data model d2" in on_model.contents.value
    assert "bf16[64]" in on_model.contents.value
    on_op = await static_client.text_document_hover_async(
        types.HoverParams(ident, position_of(text, "reduce_add(", 3)))
    assert on_op.contents.value.startswith("**reduce_add**")
    kernel = EXAMPLES / "QKV" / "kernels" / "attention.hlo"
    kuri = open_document(static_client, kernel, language="hlo")
    on_kernel_op = await static_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(kuri), position_of(kernel.read_text(), "broadcast(", 2)))
    assert "dimensions" in on_kernel_op.contents.value


@pytest.mark.asyncio
async def test_completion_offers_what_fits_the_cursor(static_client, tmp_path):
    text = (EXAMPLES / "QKV" / "QKV.py").read_text()
    text = text.replace("ROOT %Out0 = bf16[`@c.n`,64] copy(%In1);",
                        "ROOT %Out0 = bf16[`@a.`,64] copy(%In1);")
    uri = open_document(static_client, tmp_path / "QKV.py", text)
    ident = types.TextDocumentIdentifier(uri)

    async def labels(position: types.Position) -> list[str]:
        answer = await static_client.text_document_completion_async(
            types.CompletionParams(ident, position))
        return [item.label for item in answer.items]

    assert await labels(position_of(text, "@a.`,64] copy", 3)) == ["addr_in", "addr_out"]
    operators = await labels(position_of(text, "copy(%In1)", 0))
    assert "copy" in operators and "dot" in operators and "reduce_add" in operators
    assert await labels(position_of(text, "u8[`@c.n * 128`] parameter", 0)) == [
        "s8", "s32", "u8", "u32", "f16", "bf16", "f32"]
    buffers = await labels(position_of(text, '["d2", ["@a.addr_in"]', 2))
    assert buffers == ["d0", "d1", "d2"]


@pytest.mark.asyncio
async def test_definition_of_a_buffer_name_is_its_data_model(static_client):
    path = EXAMPLES / "QKV" / "QKV.py"
    text = path.read_text()
    uri = open_document(static_client, path)
    found = await static_client.text_document_definition_async(types.DefinitionParams(
        types.TextDocumentIdentifier(uri), position_of(text, '[["d2", ["@a.addr_in"]', 4)))
    assert found.uri == uri
    assert found.range.start == position_of(text, '"d2", [64]')


@pytest.mark.asyncio
async def test_code_lenses_generate_on_accelerators_and_compile_on_kernels(static_client,
                                                                           tmp_path):
    example = copy_example(tmp_path)
    uri = open_document(static_client, example / "QKV.py")
    found = await static_client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(uri)))
    assert [(lens.range.start.line, lens.command.command, list(lens.command.arguments))
            for lens in found] == [(8, "act.generateBackend", [uri, "QKV"])]
    kernel = example / "kernels" / "attention.hlo"
    kuri = open_document(static_client, kernel, language="hlo")
    ident = types.TextDocumentIdentifier(kuri)
    before = await static_client.text_document_code_lens_async(types.CodeLensParams(ident))
    assert before[0].command.command == "" and "no backend" in before[0].command.title
    backend = fake_backend(example / "backends" / "QKV", "")
    after = await static_client.text_document_code_lens_async(types.CodeLensParams(ident))
    assert [(lens.command.command, list(lens.command.arguments)) for lens in after] == [
        ("act.compileKernel", [kuri, str(backend)])]


# ---- commands ------------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(("command", "arguments", "named"), [
    ("act.generateBackend", [], "specUri"),
    ("act.generateBackend", [42], "specUri"),
    ("act.generateBackend", ["missing.py"], "specUri"),
    ("act.compileKernel", ["kernels/attention.hlo"], "backendPath"),
    ("act.compileKernel", ["kernels/attention.hlo", "QKV.py"], "backendPath"),
    ("act.compileKernel", ["QKV.py", "QKV.py"], "kernelUri"),
    ("act.compileKernel", ["kernels/attention.hlo", "backends/QKV", "nowhere/k.py"],
     "outputPath"),
    ("act.simulateKernel", ["kernels/attention.hlo"], "compiledPath"),
    ("act.simulateKernel", ["QKV.py", "no-oracle"], "oracleDir"),
    ("act.simulateKernel", ["QKV.py", "kernels", []], "dataFiles"),
    ("act.simulateKernel", ["QKV.py", "kernels", ["data/Q.dat", "data/X.dat"]],
     "dataFiles[1]"),
    ("act.simulateKernel", ["QKV.py", "kernels", ["data/Q.dat"]], "hloPath"),
    ("act.describeDocument", [], "documentUri"),
    ("act.describeDocument", ["kernels/missing.hlo"], "documentUri"),
])
async def test_bad_arguments_are_invalid_params_naming_the_argument(
        static_client, tmp_path, command, arguments, named):
    example = copy_example(tmp_path)
    fake_backend(example / "backends" / "QKV", "")
    resolved = [str(example / a) if isinstance(a, str) else
                [str(example / x) for x in a] if isinstance(a, list) else a for a in arguments]
    with pytest.raises(JsonRpcInvalidParams) as failure:
        await execute(static_client, command, resolved)
    assert f"argument '{named}'" in str(failure.value)


@pytest.mark.asyncio
async def test_the_server_describes_documents_as_the_editor_holds_them(static_client, tmp_path):
    example = copy_example(tmp_path)
    kernel = example / "kernels" / "attention.hlo"
    edited = kernel.read_text().replace("%V = bf16[64,64]{1,0} parameter(2)",
                                        "%V = f32[64,64]{1,0} parameter(2)")
    open_document(static_client, kernel, edited, "hlo")
    answer = await execute(static_client, "act.describeDocument", [str(kernel)])
    assert answer["kind"] == "kernel"
    assert [(p["name"], p["type"]) for p in answer["parameters"]] == [
        ("Q", "bf16[64,64]"), ("K", "bf16[64,64]"), ("V", "f32[64,64]")]
    spec = await execute(static_client, "act.describeDocument", [str(example / "QKV.py")])
    assert (spec["kind"], spec["parameters"]) == ("spec", [])


@pytest.mark.asyncio
async def test_unknown_command_is_invalid_params(static_client):
    with pytest.raises(JsonRpcInvalidParams, match="act.compileKernel"):
        await execute(static_client, "act.nope", [])


@pytest.mark.asyncio
async def test_compile_errors_become_diagnostics_and_success_writes_the_output(static_client,
                                                                               tmp_path):
    example = copy_example(tmp_path)
    kernel = example / "kernels" / "attention.hlo"
    kuri = open_document(static_client, kernel, language="hlo")
    await diagnostics(static_client, kuri, 1)
    failing = fake_backend(tmp_path / "failing", textwrap.dedent("""\
        print("checking the kernel")
        print(f"{args['--input']}:14:3: no instruction computes dot of bf16[64,64]",
              file=sys.stderr)
        sys.exit(1)
    """))
    result = await execute(static_client, "act.compileKernel", [kuri, str(failing)])
    assert result["ok"] is False and result["status"] == 1
    found = await diagnostics(static_client, kuri, where=bool)
    assert [(d.code, d.range.start.line, d.range.start.character) for d in found] == [
        ("compile-error", 13, 2)]
    assert "no instruction computes dot" in found[0].message
    assert any("checking the kernel" in m.message for m in static_client.log_messages)
    working = fake_backend(tmp_path / "working", textwrap.dedent("""\
        open(args["--output"], "w").write(open(args["--input"]).read()[:9])
    """))
    output = tmp_path / "out" / "attention.py"
    output.parent.mkdir()
    result = await execute(static_client, "act.compileKernel",
                           [kuri, str(working), str(output)])
    assert result["ok"] is True and output.read_text() == "HloModule"
    assert await diagnostics(static_client, kuri) == []
    default = await execute(static_client, "act.compileKernel", [kuri, str(working)])
    assert default["output"] == str(kernel.with_suffix(".py"))


@pytest.mark.asyncio
async def test_a_long_command_reports_progress_and_can_be_cancelled(static_client, tmp_path):
    example = copy_example(tmp_path)
    started = tmp_path / "started"
    stuck = fake_backend(tmp_path / "stuck", textwrap.dedent(f"""\
        import os
        open({str(started)!r}, "w").write(str(os.getpid()))
        print("compiling...", flush=True)
        time.sleep(600)
    """))
    token = "compile-1"
    static_client.progress_reports.setdefault(token, [])
    kernel = example / "kernels" / "attention.hlo"
    request = asyncio.ensure_future(execute(
        static_client, "act.compileKernel", [str(kernel), str(stuck)], token=token))
    await until(static_client, lambda: any(
        isinstance(r, types.WorkDoneProgressReport) and r.message == "compiling..."
        for r in static_client.progress_reports[token]), "the progress report")
    begin = static_client.progress_reports[token][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable is True
    static_client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(request, WAIT_S)
    pid = int(started.read_text())
    await until(static_client, lambda: isinstance(static_client.progress_reports[token][-1],
                                                   types.WorkDoneProgressEnd), "progress end")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.asyncio
async def test_generate_backend_reports_a_refused_spec(static_client, tmp_path):
    pytest.importorskip("act_backend.backend.generator",
                        reason="needs act_backend.backend.generator.generate_backend")
    example = copy_example(tmp_path)
    spec = example / "QKV.py"
    spec.write_text(spec_with_mistakes())
    result = await execute(static_client, "act.generateBackend", [uri_of(str(spec))])
    assert result["ok"] is False and result["kind"] == "refused"
    assert "buffer 'd9' is not a data model" in result["message"]
    assert not (example / "backends").exists()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_generate_compile_and_simulate_from_the_editor(static_client, tmp_path):
    """The whole loop a user runs from the lenses: the real generator, backend and oracle."""
    example = copy_example(tmp_path)
    spec_uri = open_document(static_client, example / "QKV.py")
    token = "generate-1"
    static_client.progress_reports.setdefault(token, [])
    generated = await execute(static_client, "act.generateBackend", [spec_uri, "QKV"], token)
    assert generated["ok"] is True, generated["message"]
    backend = example / "backends" / "QKV"
    assert generated["backends"][0]["accelerator"] == "QKV" and backend.is_file()
    # The build's own output reached the editor while it ran.
    assert any("QKV backend" in m.message for m in static_client.log_messages)
    reports = static_client.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
    assert any(isinstance(r, types.WorkDoneProgressReport) for r in reports)
    # The spec's generate_oracle call was carried out too, so the kernel can be simulated.
    assert (example / "targets" / "QKV" / "oracle" / "isa.json").is_file()

    kernel = example / "kernels" / "attention.hlo"
    kernel_uri = open_document(static_client, kernel, language="hlo")
    [lens] = await static_client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(kernel_uri)))
    compiled = await execute(static_client, lens.command.command,
                             list(lens.command.arguments))
    assert compiled["ok"] is True, compiled["message"]
    assembly = kernel.with_suffix(".py")
    assert "api.gemm(" in assembly.read_text()
    # The default cost model counts instructions; the result carries the emitted one's cost.
    assert compiled["cost"] == assembly.read_text().count("api.")
    # The backend's report and memory picture are kept beside the assembly.
    report_dir = kernel.with_suffix(".report")
    assert compiled["report"] == str(report_dir / "report.json")
    assert compiled["memory_svg"] == str(report_dir / "memory.svg")
    report = json.loads((report_dir / "report.json").read_text())
    assert len(report["program"]["assembly"]) == compiled["cost"]

    data = [str(example / "data" / f"{name}.dat") for name in "QKV"]
    simulated = await execute(static_client, "act.simulateKernel",
                              [str(assembly), str(example / "targets" / "QKV" / "oracle"), data])
    assert simulated["ok"] is True, simulated["message"]
    assert simulated["shape"] == [64, 64]
    # Within two bf16 ulps of the largest reference magnitude (bf16 keeps 8 bits).
    ulp = 2.0 ** (math.floor(math.log2(simulated["max_abs_reference"])) - 7)
    assert simulated["max_abs_diff"] <= 2 * ulp
    # The same comparison in ulps of bf16, and heatmaps of the output and the difference.
    assert (simulated["dtype"], simulated["difference_unit"]) == ("bfloat16", "ulps")
    assert simulated["max_ulps"] is not None and simulated["max_ulps"] >= 0
    for name in ("output", "difference"):
        heatmap = simulated["heatmaps"][name]
        assert (heatmap["rows"], heatmap["cols"], heatmap["block"]) == (64, 64, [1, 1])
