"""The language server (`plan lsp`, compiler/lsp.py): diagnostics of unsaved text, hover with
a quantity's value and derivation, go-to-definition into the stdlib; in process through
`Analysis`, and end to end over the protocol with pygls' own client in a subprocess."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from planc.lsp import Analysis
from planc.semantics.resolve import stdlib_root

PLAN = """\
import "models/llama-3.1-8b"
import "hardware/h100-sxm"

traffic t {
  daily_active_users = 1 M users source "product brief"
  requests_per_user = 5 requests/user/day
  peak_factor = 2
  prompt_tokens = 1000 tokens
  output_tokens = 200 tokens
}

deployment d { model = llama_3_1_8b; hardware = h100_sxm; traffic = t source "😀 emoji"; batch = 32 }

check d.tpot <= 50 ms "decode is fast"
summary d.devices, d.kv_bytes_per_token
"""
DEPLOYMENT = stdlib_root() / "kinds" / "deployment.plan"


@pytest.fixture(scope="module")
def plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Analysis]:
    path = tmp_path_factory.mktemp("lsp") / "a.plan"
    path.write_text(PLAN, encoding="utf-8")
    return path, Analysis.of(path)


def at(text: str, needle: str, into: int = 0) -> int:
    assert text.count(needle) == 1, needle
    return text.index(needle) + into


def test_a_hover_shows_the_value_the_formula_the_values_substituted_and_the_source(plan) -> None:  # type: ignore[no-untyped-def]
    path, analysis = plan
    found = analysis.hover(path, at(PLAN, "d.kv_bytes_per_token", 4))
    assert found is not None
    text, span = found
    assert span.text == "d.kv_bytes_per_token"  # the whole reference, not the word under the cursor
    # Llama-3.1-8B in BF16: 2 (K and V) × 8 KV heads × 128 = 2,048 values per layer, 32 layers, 2 B each
    assert "**128 KiB/token**" in text
    assert "kv_bytes_per_token = model.kv_width * model.layers * kv.bytes / (1 token)" in text
    assert "= 2\u202f048 * 32 * 2 B / (1 token)" in text
    assert "source: docs/physics.md §3.1" in text
    rules = DEPLOYMENT.read_text(encoding="utf-8").split("\n")
    line = 1 + next(i for i, x in enumerate(rules) if "derive kv_bytes_per_token:" in x)
    assert f"defined at `<stdlib>/kinds/deployment.plan:{line}`" in text


def test_a_reference_inside_a_stdlib_rule_is_that_instances_field(plan) -> None:  # type: ignore[no-untyped-def]
    _, analysis = plan
    rule = DEPLOYMENT.read_text(encoding="utf-8")
    offset = at(rule, "derive kv_bytes_per_token: B/token = model.kv_width * model.layers", 60)
    target = analysis.target_at(DEPLOYMENT, offset)
    assert target is not None and (target.kind, target.name) == ("quantity", "llama_3_1_8b.layers")
    text, _ = analysis.hover(DEPLOYMENT, offset)
    assert "**32**" in text and "source: config.json num_hidden_layers" in text
    assert "defined at `<stdlib>/models/llama-3.1-8b.plan:" in text


def test_go_to_definition_leads_to_the_users_assignment_or_into_the_stdlib(plan) -> None:  # type: ignore[no-untyped-def]
    path, analysis = plan
    derived = analysis.definition(path, at(PLAN, "d.tpot", 3))  # set by no one: the kind's declaration
    assert derived.file.path == "<stdlib>/kinds/deployment.plan" and derived.text == "tpot"
    assigned = analysis.definition(path, at(PLAN, "batch = 32", 1))  # set by the plan: its own line
    assert assigned.file.path == str(path) and assigned.text == "32"
    instance = analysis.definition(path, at(PLAN, "= llama_3_1_8b", 4))
    assert instance.file.path == "<stdlib>/models/llama-3.1-8b.plan" and instance.text == "llama_3_1_8b"
    assert analysis.definition(path, at(PLAN, '"models/llama-3.1-8b"', 3)) == stdlib_root() / "models" / "llama-3.1-8b.plan"
    kind = analysis.definition(path, at(PLAN, "deployment d", 2))
    assert kind.file.path == "<stdlib>/kinds/deployment.plan" and kind.text == "deployment"
    assert analysis.definition(path, at(PLAN, "decode is fast", 2)) is None  # a string names nothing


def test_a_clean_plan_has_an_empty_list_that_clears_the_editors_diagnostics(plan) -> None:  # type: ignore[no-untyped-def]
    path, analysis = plan
    assert analysis.diagnostics() == {path.resolve(): []}


def test_unsaved_text_is_compiled_instead_of_the_file_and_its_error_is_at_the_users_line(tmp_path: Path) -> None:
    path = tmp_path / "a.plan"
    path.write_text(PLAN, encoding="utf-8")
    edited = PLAN.replace("check d.tpot", "check d.tpoot")
    analysis = Analysis.of(path, {path: edited})
    (found,) = analysis.diagnostics()[path.resolve()]
    assert found.code == "E0203" and found.primary.span.text == "tpoot"  # unknown field
    assert found.primary.span.file.line_col(found.primary.span.start)[0] == 14
    assert "tpot" in (found.help or "")
    assert path.read_text(encoding="utf-8") == PLAN  # the file on disk is untouched, and still clean
    assert Analysis.of(path).diagnostics() == {path.resolve(): []}
    # with errors the names still resolve: go-to-definition works while the plan is being fixed
    assert analysis.definition(path, at(edited, "batch = 32", 1)).text == "32"
    assert "not evaluated" in analysis.hover(path, at(edited, "batch = 32", 1))[0]


def test_an_unsaved_import_is_read_from_the_editor_and_its_errors_go_to_that_file(tmp_path: Path) -> None:
    main = tmp_path / "a.plan"
    main.write_text(PLAN.replace('import "hardware/h100-sxm"', 'import "./gpus"').replace("h100_sxm", "my_gpu"),
                    encoding="utf-8")
    gpus = tmp_path / "gpus.plan"  # open in the editor, never saved
    good = 'accelerator my_gpu = h100_sxm { price = 3 USD/h }\nimport "hardware/h100-sxm"\n'
    assert Analysis.of(main, {gpus: good}).diagnostics() == {main.resolve(): [], gpus.resolve(): []}
    bad = good.replace("3 USD/h", "3 USD/fortnight")
    diagnostics = Analysis.of(main, {gpus: bad}).diagnostics()
    assert diagnostics[main.resolve()] == []
    (found,) = diagnostics[gpus.resolve()]
    assert found.primary.span.file.path.endswith("gpus.plan") and "fortnight" in found.primary.span.text
    assert not gpus.exists()


def test_the_server_speaks_the_protocol_in_utf16(tmp_path: Path) -> None:
    """`plan lsp` in a subprocess, driven by pygls' client: the diagnostics of an unsaved edit,
    a hover and a definition, with columns counted in UTF-16 units as the protocol's default
    (each emoji before `batch` on its line is two units, one character)."""
    from lsprotocol import types as lsp
    from pygls.lsp.client import LanguageClient
    from pygls.uris import from_fs_path, to_fs_path

    path = tmp_path / "a.plan"
    path.write_text(PLAN, encoding="utf-8")
    uri = from_fs_path(str(path))
    published: dict[str, asyncio.Queue[list[lsp.Diagnostic]]] = {}

    async def session() -> tuple[list[lsp.Diagnostic], list[lsp.Diagnostic], lsp.Hover | None, lsp.Location | None]:
        client = LanguageClient("test", "1")

        @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
            published.setdefault(params.uri, asyncio.Queue()).put_nowait(params.diagnostics)

        await client.start_io(sys.executable, "-m", "planc.cli", "lsp")
        await client.initialize_async(lsp.InitializeParams(capabilities=lsp.ClientCapabilities(),
                                                           process_id=None, root_uri=from_fs_path(str(tmp_path))))
        client.initialized(lsp.InitializedParams())
        client.text_document_did_open(lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="plan", version=1, text=PLAN)))
        queue = published.setdefault(uri, asyncio.Queue())
        clean = await asyncio.wait_for(queue.get(), 60)
        line = PLAN.split("\n")[11]
        column = line.index("batch") + 1  # one emoji before it: UTF-16 counts it twice
        hover = await client.text_document_hover_async(lsp.HoverParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(11, column + 1)))
        edited = PLAN.replace("check d.tpot", "check d.tpoot")
        client.text_document_did_change(lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            [lsp.TextDocumentContentChangeWholeDocument(text=edited)]))
        broken = await asyncio.wait_for(queue.get(), 60)
        definition = await client.text_document_definition_async(lsp.DefinitionParams(
            lsp.TextDocumentIdentifier(uri), lsp.Position(14, 10)))
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        return clean, broken, hover, definition  # type: ignore[return-value]

    clean, broken, hover, definition = asyncio.run(session())
    assert list(clean) == []
    (error,) = broken
    assert error.code == "E0203" and error.severity == lsp.DiagnosticSeverity.Error
    assert (error.range.start.line, error.range.start.character) == (13, 8)  # `tpoot`, 0-based
    assert "help:" in error.message
    assert hover is not None and "**32**" in hover.contents.value
    line = PLAN.split("\n")[11]
    assert hover.range.start == lsp.Position(11, line.index("batch") + 1)  # in UTF-16 units again
    # `d.devices` in the summary resolves into the stdlib although the plan has an error
    assert definition is not None and to_fs_path(definition.uri) == str(DEPLOYMENT)
    text = DEPLOYMENT.read_text(encoding="utf-8").split("\n")[definition.range.start.line]
    assert text[definition.range.start.character:definition.range.end.character] == "devices"


def test_without_pygls_the_command_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner
    from planc.cli import main

    monkeypatch.setitem(sys.modules, "pygls", None)  # `import pygls` raises ImportError
    result = CliRunner().invoke(main, ["lsp"])
    assert result.exit_code == 2
    assert "pip install 'plan-compiler[lsp]'" in result.output
