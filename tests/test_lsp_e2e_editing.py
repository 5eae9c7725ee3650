"""The editing features end to end, through a real server over stdio: quick fixes offered
as code actions and applied as an editor applies them (the spec then validates), inferred
types as inlay hints, and navigation between a kernel and its assembly after a compile."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers.lsp_session import (
    EXAMPLES,
    ROOT,
    UNTRUSTED,
    apply_edits,
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
from test_lsp_quick_fixes import KERNEL_CASES, SPEC_CASES

QKV = (EXAMPLES / "QKV" / "QKV.py").read_text()
KERNEL = (EXAMPLES / "QKV" / "kernels" / "attention.hlo").read_text()


static_client = server(UNTRUSTED)
running_client = server(trusted(spec_timeout_s=5, spec_memory_limit_mb=1024))


# ---- quick fixes --------------------------------------------------------------------------


async def actions_for(client, uri: str, diagnostic: types.Diagnostic,
                      only: list[str] | None = None) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), diagnostic.range,
        types.CodeActionContext(diagnostics=[diagnostic], only=only)))


def edited(text: str, uri: str, action: types.CodeAction) -> str:
    edits = action.edit.changes[uri]
    return apply_edits(text, [((e.range.start.line, e.range.start.character),
                               (e.range.end.line, e.range.end.character), e.new_text)
                              for e in edits])


async def fix_and_recheck(client, path: Path, what: str, broken: str, code: str, title: str,
                          language: str = "python") -> None:
    """Open ``broken``, apply the quick fix ``title`` of its ``code`` diagnostic as the
    client would, and wait for the fixed text to have no diagnostics."""
    uri = open_document(client, path, broken, language)
    found = await diagnostics(client, uri, 1, where=lambda d: any(x.code == code for x in d))
    diagnostic = next(d for d in found if d.code == code)
    actions = await actions_for(client, uri, diagnostic)
    offered = {a.title: a for a in actions}
    assert title in offered, f"{what}: {title!r} not among {sorted(offered)}"
    action = offered[title]
    assert action.kind == types.CodeActionKind.QuickFix
    assert list(action.diagnostics) == [diagnostic]
    replace_text(client, uri, 2, edited(broken, uri, action))
    assert await diagnostics(client, uri, 2) == [], f"{what}: {title} left problems"


@pytest.mark.asyncio
async def test_every_spec_quick_fix_applied_by_the_client_makes_the_spec_validate(
        static_client, tmp_path):
    for k, (what, old, new, code, title) in enumerate(SPEC_CASES):
        await fix_and_recheck(static_client, tmp_path / f"case{k}.py", what,
                              QKV.replace(old, new, 1), code, title)


@pytest.mark.asyncio
async def test_quick_fixes_come_with_the_refusals_of_a_run_of_the_spec(running_client,
                                                                       tmp_path):
    for k in (0, 6, 11):  # a buffer, an attribute to declare, a semantics skeleton
        what, old, new, code, title = SPEC_CASES[k]
        await fix_and_recheck(running_client, tmp_path / f"run{k}.py", what,
                              QKV.replace(old, new, 1), code, title)


@pytest.mark.asyncio
async def test_every_kernel_quick_fix_makes_the_kernel_pass_its_checks(static_client,
                                                                       tmp_path):
    for k, (what, old, new, code, title) in enumerate(KERNEL_CASES):
        await fix_and_recheck(static_client, tmp_path / f"case{k}.hlo", what,
                              KERNEL.replace(old, new, 1), code, title, "hlo")


@pytest.mark.asyncio
async def test_fixes_of_an_older_version_or_of_another_kind_are_not_offered(static_client,
                                                                            tmp_path):
    broken = QKV.replace("transpose(%b), dimensions={1,0};", "transpos(%b), dimensions={1,0};")
    uri = open_document(static_client, tmp_path / "QKV.py", broken)
    [diagnostic] = await diagnostics(static_client, uri, 1, where=bool)
    assert diagnostic.data["version"] == 1 and diagnostic.data["fixes"]
    assert not await actions_for(static_client, uri, diagnostic, only=["refactor"])
    assert len(await actions_for(static_client, uri, diagnostic, only=["quickfix"])) == 1
    replace_text(static_client, uri, 2, broken + "\n")
    await diagnostics(static_client, uri, 2, where=bool)
    # The editor may still hold the diagnostic of version 1 under the cursor.
    assert not await actions_for(static_client, uri, diagnostic)


# ---- inferred types -----------------------------------------------------------------------


@pytest.mark.asyncio
async def test_inlay_hints_show_inferred_types_in_specs_and_kernels(static_client, tmp_path):
    uri = open_document(static_client, EXAMPLES / "QKV" / "QKV.py")
    line = position_of(QKV, "%reduced = bf16").line
    hints = await static_client.text_document_inlay_hint_async(types.InlayHintParams(
        types.TextDocumentIdentifier(uri), types.Range(types.Position(line, 0),
                                                       types.Position(line + 1, 0))))
    assert [(h.position, h.label, h.kind) for h in hints] == [
        (types.Position(line, len(QKV.splitlines()[line])), "→ bf16[@c.n]",
         types.InlayHintKind.Type)]
    kuri = open_document(static_client, EXAMPLES / "QKV" / "kernels" / "attention.hlo",
                         language="hlo")
    everything = types.Range(types.Position(0, 0), types.Position(len(KERNEL.splitlines()), 0))
    hints = await static_client.text_document_inlay_hint_async(types.InlayHintParams(
        types.TextDocumentIdentifier(kuri), everything))
    assert len(hints) == 14 and hints[-1].label == "→ bf16[64, 64]"
    shown = await static_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(uri), position_of(QKV, "broadcast(%reduced)", 12)))
    assert shown.contents.value.startswith("**%reduced**: `bf16[@c.n]`")


# ---- navigation after a compile -----------------------------------------------------------

# A stand-in backend: writes the hand-written QKV attention assembly, and a report that says
# what each of its calls implements.
IMPLEMENTS = [["Q"], ["K", "Kt"], ["S"], ["E", "rowsum", "denom", "P"], [], ["V"], ["O"],
              [], []]


def reporting_backend(path: Path) -> Path:
    assembly = (ROOT / "tests" / "assembly" / "qkv_attention.py").read_text()
    records = [{"implements": names} for names in IMPLEMENTS]
    return fake_backend(path, textwrap.dedent(f"""\
        import json, os
        open(args["--output"], "w").write({assembly!r})
        os.makedirs(args["--report-dir"], exist_ok=True)
        report = {{"status": "ok", "chosen": 0, "chosen_cost": 9, "candidates_tried": 1,
                   "assembly": {json.dumps(records)}}}
        open(os.path.join(args["--report-dir"], "report.json"), "w").write(json.dumps(report))
    """))


@pytest.mark.asyncio
async def test_after_a_compile_kernel_and_assembly_lead_to_each_other(static_client,
                                                                      tmp_path):
    example = copy_example(tmp_path)
    kernel = example / "kernels" / "attention.hlo"
    kuri = open_document(static_client, kernel, language="hlo")
    ident = types.TextDocumentIdentifier(kuri)
    before = await static_client.text_document_code_lens_async(types.CodeLensParams(ident))
    assert len(before) == 1  # "Compile kernel" only
    refreshed = static_client.refreshed_lenses
    backend = reporting_backend(example / "backends" / "QKV")
    result = await execute(static_client, "act.compileKernel", [kuri, str(backend)])
    assert result["ok"] is True and result["cost"] == 9
    report = example / "kernels" / "attention.report" / "report.json"
    assert result["report"] == str(report) and report.is_file()
    await until(static_client, lambda: static_client.refreshed_lenses > refreshed,
                "a code lens refresh")

    found = await static_client.text_document_code_lens_async(types.CodeLensParams(ident))
    titles = {KERNEL.splitlines()[lens.range.start.line].split("=")[0].strip():
              lens.command.title for lens in found[1:]}
    assembly = kernel.with_suffix(".py")
    text = assembly.read_text()
    gemm_lines = [n + 1 for n, line in enumerate(text.splitlines()) if "api.gemm(" in line]
    assert titles["%S"] == f"Implemented by api.gemm (line {gemm_lines[0]}) in attention.py"
    assert titles["%zero"] == "Implemented by no instruction of attention.py"

    auri = open_document(static_client, assembly)
    targets = await static_client.text_document_definition_async(types.DefinitionParams(
        types.TextDocumentIdentifier(auri), position_of(text, "api.load_cm", 6)))
    assert [(t.uri, t.range.start) for t in targets] == [
        (kuri, position_of(KERNEL, "K = bf16")), (kuri, position_of(KERNEL, "Kt = bf16"))]
    back = await static_client.text_document_implementation_async(types.ImplementationParams(
        ident, position_of(KERNEL, "%O = bf16", 2)))
    assert [(t.uri, t.range.start) for t in back] == [
        (auri, position_of(text, "api.gemm", occurrence=1))]
    shown = await static_client.text_document_hover_async(types.HoverParams(
        types.TextDocumentIdentifier(auri), position_of(text, "api.softmax", 5)))
    assert "`%P` = `bf16[64,64]` `divide`" in shown.contents.value
    lenses = await static_client.text_document_code_lens_async(
        types.CodeLensParams(types.TextDocumentIdentifier(auri)))
    assert lenses[1].command.title == "Implements %K, %Kt (attention.hlo)"
