"""The language server: diagnostics as you type, hover with a quantity's derivation and value,
go-to-definition into the stdlib. `plan lsp` serves it over stdio; the protocol is pygls'
(an optional dependency: `pip install 'plan-compiler[lsp]'`).

Contract
- `Analysis.of(path, texts)` compiles the plan at `path` exactly as `plan check` would, with
  `texts` (real path → text: the editor's unsaved buffers) standing in for files on disk. It
  never raises; a plan with errors still has an index of the names it could resolve.
- `Analysis.diagnostics()` maps every file of the plan that is not in the stdlib (real path)
  to the diagnostics whose primary label lies in it (an empty list clears an editor's stale
  ones); a diagnostic with no location, or one in the stdlib, goes to the main file.
- `Analysis.target_at(path, offset)` is what the text at a character offset names: a quantity
  (a node of the plan), an instance, kind, enumeration, member or `let`, or an imported file.
  It asks, in order, the elaborator's own references (the span of every `Ref` it built: the
  innermost wins, so `model.layers` inside a stdlib rule names that instance's field), the
  plan's assignment targets (`batch` in `deployment chat { batch = 64 }`), the import paths,
  then the dotted name under the cursor looked up among the nodes and declarations (which
  covers questions and the summary, answered after elaboration).
- `Analysis.hover(path, offset)` is Markdown for the target: for a quantity its name and
  description, its value with unit, its formula as written, the same with every value
  substituted, its source (or "assumption") and where it is defined; `definition(path,
  offset)` the span that defines it (the user's assignment when the plan sets it, else the
  field's declaration in its kind; an import's file).
- `serve()` runs the server over stdio. Only `serve` sees pygls: it converts URIs and the
  client's position encoding (pygls' `PositionCodec`, UTF-16 unless negotiated otherwise) to
  files and character offsets, compiles on open, change and save (the last edit wins: a
  compile that a newer edit overtook publishes nothing), and shows what `Analysis` answers.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import diagnostics as dx
from .pipeline import Compilation, compile_plan
from .semantics import ir
from .semantics.resolve import Program, import_target, stdlib_root
from .semantics.units import Dim, format_quantity
from .source import SourceFile, Span
from .syntax import ast

STDLIB_PREFIX = "<stdlib>/"
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*")
_COMMENT = re.compile(r"#[^\n]*")
_SPACE = re.compile(r"[ \t\r\n]+")


def real_path(file: SourceFile) -> Path:
    """The file on disk a source file was read from (the stdlib's by its `<stdlib>/` name)."""
    if file.path.startswith(STDLIB_PREFIX):
        return stdlib_root() / file.path[len(STDLIB_PREFIX):]
    return Path(file.path)


@dataclass(frozen=True)
class Target:
    """What a piece of text names. `kind`: quantity, instance, kind, enum, member, let, file."""

    kind: str
    name: str
    span: Span  # the text that names it
    decl: Any = None  # the declaration (an AST node), or the imported file's path


@dataclass
class Analysis:
    compilation: Compilation
    main: Path
    # per real file: (start, end, target), the elaborator's references and the assignment targets
    _spans: dict[Path, list[tuple[int, int, Target]]] = field(default_factory=dict)
    _files: dict[Path, SourceFile] = field(default_factory=dict)

    # ---- building --------------------------------------------------------------------------
    @classmethod
    def of(cls, path: Path, texts: Mapping[Path, str] | None = None) -> Analysis:
        main = path.resolve()
        analysis = cls(compile_plan(main, str(main), texts), main)
        analysis._index()
        return analysis

    @property
    def program(self) -> Program | None:
        return self.compilation.program

    @property
    def elaborated(self) -> ir.Elaborated | None:
        return self.compilation.elaborated

    def _index(self) -> None:
        if self.program is not None:
            for module in self.program.modules:
                self._files[real_path(module.span.file)] = module.span.file
                self._module_targets(module)
        el = self.elaborated
        if el is None:
            return
        exprs: list[ir.Expr] = [n.expr for n in el.nodes.values()]
        exprs += [r.expr for r in el.requirements + el.advisories] + [c.expr for c in el.checks] + el.summary
        for f in el.findings:
            exprs += [f.expr] + [h.expr for h in f.parts if isinstance(h, ir.Hole)]
        for e in exprs:
            for ref in _refs(e):
                self._add(ref.span, Target("quantity", ref.node, ref.span))
        for spans in self._spans.values():  # innermost first: the shortest span that holds the offset
            spans.sort(key=lambda s: (s[1] - s[0], s[0]))

    def _module_targets(self, module: ast.Module) -> None:
        for stmt in module.statements:
            if isinstance(stmt, ast.Import):
                self._add(stmt.path_span, Target("file", stmt.path, stmt.path_span, self._import_file(stmt)))
            elif isinstance(stmt, ast.InstanceDecl):
                for f in stmt.fields:
                    step = f.target.steps[0]
                    if len(f.target.steps) == 1:
                        self._add(step.span, Target("quantity", ir.node_id(stmt.name, step.name), step.span))

    def _import_file(self, stmt: ast.Import) -> Path | None:
        try:
            target = import_target(stmt.path, real_path(stmt.span.file))
        except (OSError, ValueError):
            return None
        return target if target in self._files or target.is_file() else None

    def _add(self, span: Span, target: Target) -> None:
        self._spans.setdefault(real_path(span.file), []).append((span.start, span.end, target))

    # ---- queries ---------------------------------------------------------------------------
    def diagnostics(self) -> dict[Path, list[dx.Diagnostic]]:
        out: dict[Path, list[dx.Diagnostic]] = {p: [] for p, f in self._files.items() if not f.is_stdlib}
        out.setdefault(self.main, [])
        for d in self.compilation.diagnostics:
            where = self.main
            if d.primary is not None and not d.primary.span.file.is_stdlib:
                where = real_path(d.primary.span.file)
            out.setdefault(where, []).append(d)
        return out

    def file(self, path: Path) -> SourceFile | None:
        return self._files.get(path.resolve())

    def target_at(self, path: Path, offset: int) -> Target | None:
        path = path.resolve()
        for start, end, target in self._spans.get(path, []):
            if start <= offset < end or (offset == end > start and target.kind != "file"):
                return target
        file = self.file(path)
        return self._named(file, offset) if file is not None else None

    def _named(self, file: SourceFile, offset: int) -> Target | None:
        """The dotted name under the cursor, up to the segment the cursor is on."""
        for m in _DOTTED.finditer(file.text, max(0, file.text.rfind("\n", 0, offset))):
            if m.start() > offset:
                break
            if offset > m.end():
                continue
            cut = file.text.find(".", offset, m.end())
            text = m.group()[: (cut - m.start()) if cut >= 0 else None]
            return self._lookup(text, Span(file, m.start(), m.start() + len(text)))
        return None

    def _lookup(self, text: str, span: Span) -> Target | None:
        el, program = self.elaborated, self.program
        if el is not None and (text in el.nodes or text in el.statics):
            return Target("quantity", text, span)
        if program is None:
            return None
        decl = program.names.get(text)
        if decl is not None:
            kind = {ast.InstanceDecl: "instance", ast.KindDecl: "kind", ast.EnumDecl: "enum",
                    ast.LetDecl: "let"}[type(decl)]
            return Target(kind, text, span, decl)
        head, _, member = text.rpartition(".")
        enum = program.names.get(head) if head else None
        if isinstance(enum, ast.EnumDecl):
            found = next((m for m in enum.members if m.name == member), None)
            return Target("member", text, span, found) if found is not None else None
        members = program.members.get(text, [])
        if len(members) == 1:
            return Target("member", f"{members[0][0].name}.{text}", span, members[0][1])
        return None

    def definition(self, path: Path, offset: int) -> Span | Path | None:
        target = self.target_at(path, offset)
        if target is None:
            return None
        if target.kind == "file":
            return target.decl  # type: ignore[no-any-return]
        if target.kind == "quantity":
            node = self.elaborated.nodes.get(target.name) if self.elaborated else None
            if node is None:
                return None
            return node.span if node.overridden else node.decl_span
        if target.kind == "member":
            return target.decl.span if target.decl is not None else None
        return target.decl.name_span if target.decl is not None else None

    def hover(self, path: Path, offset: int) -> tuple[str, Span] | None:
        target = self.target_at(path, offset)
        if target is None:
            return None
        if target.kind == "quantity":
            text = self._quantity(target.name)
        elif target.kind == "file":
            text = f"imports `{target.decl}`" if target.decl is not None else "no such plan"
        else:
            text = self._declaration(target)
        return (text, target.span) if text else None

    # ---- what a hover says -----------------------------------------------------------------
    def _quantity(self, node_id: str) -> str:
        el = self.elaborated
        node = el.nodes.get(node_id) if el is not None else None
        if node is None:  # a field whose value is static: an enum member, an instance, a boolean
            static = el.statics.get(node_id) if el is not None else None
            return f"**`{node_id}`** = `{static}`" if static is not None else ""
        head = f"**`{node_id}`**" + (f" — {node.description}" if node.description else "")
        lines = [head, ""]
        value = self._value_text(node_id)
        if value is not None:
            lines += [f"**{value}**", ""]
        elif self.compilation.lowered is None:
            lines += ["*not evaluated: the plan has errors*", ""]
        steps = [_one_line(node.span.text)]
        for step in (self._substituted(node), value):
            if step is not None and step not in steps:
                steps.append(step)
        pad = " " * len(node.field)
        lines += ["```plan", f"{node.field} = {steps[0]}", *(f"{pad} = {s}" for s in steps[1:]), "```", ""]
        lines.append(f"source: {node.source}" if node.source else
                     ("specification" if node.is_definition else "*assumption*"))
        line, _ = node.span.file.line_col(node.span.start)
        lines.append(f"defined at `{node.span.file.path}:{line}`")
        return "\n".join(lines)

    def _value_text(self, node_id: str) -> str | None:
        lowered = self.compilation.lowered
        if lowered is None or node_id not in lowered.values:
            return None
        node = lowered.elaborated.nodes[node_id]
        value = lowered.values[node_id]
        if not isinstance(node.dim, Dim):
            return "true" if value else "false"
        return format_quantity(float(value), node.dim, node.unit)

    def _substituted(self, node: ir.Node) -> str | None:
        """The formula's text with each reference written inside it replaced by its value."""
        if self.compilation.lowered is None:
            return None
        span = node.span
        inside = sorted({(r.span.start, r.span.end, r.node) for r in _refs(node.expr)
                         if r.span.file is span.file and span.start <= r.span.start and r.span.end <= span.end})
        pieces, at = [], span.start
        for start, end, ref in inside:
            value = self._value_text(ref)
            if start < at or value is None:  # nested in one already replaced, or not a number
                continue
            # thousands apart by a narrow space, so that `min(1,024, 8)` does not read as three arguments
            pieces += [span.file.text[at:start], value.replace(",", "\u202f")]
            at = end
        pieces.append(span.file.text[at:span.end])
        return _one_line("".join(pieces))

    def _declaration(self, target: Target) -> str:
        decl = target.decl
        if target.kind == "instance":
            lines = [f"**`{target.name}`** — a `{decl.kind}`" + (f" based on `{decl.base}`" if decl.base else "")]
        elif target.kind == "kind":
            lines = [f"**kind `{target.name}`**" + (f" extends `{decl.parent}`" if decl.parent else "")]
            if decl.description:
                lines.append(decl.description)
        elif target.kind == "enum":
            lines = [f"**enum `{target.name}`**: " + ", ".join(f"`{m.name}`" for m in decl.members)]
            if decl.description:
                lines.append(decl.description)
        elif target.kind == "member":
            lines = [f"**`{target.name}`**"]
            if decl is not None:
                lines += [f"- `{a.name}` = `{_one_line(a.value.span.text)}`" for a in decl.attrs]
        else:
            lines = [f"**let `{target.name}`**"]
        where = decl.span if target.kind == "member" else decl.name_span
        line, _ = where.file.line_col(where.start)
        lines.append(f"\ndeclared at `{where.file.path}:{line}`")
        return "\n".join(lines)


def _refs(expr: ir.Expr) -> Iterator[ir.Ref]:
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, ir.Ref):
            yield e
        elif isinstance(e, ir.Op):
            stack.extend(e.args)


def _one_line(text: str) -> str:
    """The text on one line, without comments (only ASCII white space collapses: the narrow
    space between thousands stays)."""
    return _SPACE.sub(" ", _COMMENT.sub("", text)).strip(" ")


# ---- the protocol ----------------------------------------------------------------------------


def serve() -> None:  # pragma: no cover - exercised by tests/test_lsp.py in a subprocess
    """Run the language server over stdin/stdout until the client exits."""
    from lsprotocol import types as lsp
    from pygls.lsp.server import LanguageServer
    from pygls.uris import from_fs_path, to_fs_path
    from pygls.workspace.position_codec import PositionCodec, ServerTextPosition

    from . import __version__

    server = LanguageServer("plan", __version__)
    latest: dict[str, int] = {}  # uri → the newest edit seen
    analyses: dict[str, Analysis] = {}  # uri → the analysis of its newest text that finished
    lock = asyncio.Lock()  # one compile at a time

    def texts() -> dict[Path, str]:
        return {Path(p).resolve(): d.source for u, d in server.workspace.text_documents.items()
                if (p := to_fs_path(u)) is not None}

    def codec() -> PositionCodec:
        return server.workspace.position_codec

    @functools.lru_cache(maxsize=64)
    def lines(file: SourceFile) -> list[str]:  # a file's lines, as the codec counts them
        return file.text.split("\n")

    def position(file: SourceFile, offset: int) -> lsp.Position:
        line, col = file.line_col(offset)
        return codec().position_to_client_units(lines(file), ServerTextPosition(line - 1, col - 1))

    def span_range(span: Span) -> lsp.Range:
        return lsp.Range(position(span.file, span.start), position(span.file, max(span.end, span.start)))

    def location(span: Span) -> lsp.Location:
        return lsp.Location(from_fs_path(str(real_path(span.file))) or "", span_range(span))

    def diagnostic(d: dx.Diagnostic, main: SourceFile | None) -> lsp.Diagnostic:
        span = d.primary.span if d.primary is not None and not d.primary.span.file.is_stdlib else None
        if span is None and main is not None:
            span = Span(main, 0, 0)
        message = d.message + (f": {d.primary.text}" if d.primary is not None and d.primary.text else "")
        if d.primary is not None and span is not None and d.primary.span is not span:
            message += f" (at {d.primary.span.location()})"
        message += "".join(f"\nnote: {n}" for n in d.notes) + (f"\nhelp: {d.help}" if d.help else "")
        related = [lsp.DiagnosticRelatedInformation(location(label.span), label.text or "here")
                   for label in d.secondary]
        if d.primary is not None and d.primary.span is not span:
            related.insert(0, lsp.DiagnosticRelatedInformation(location(d.primary.span), d.primary.text or "here"))
        return lsp.Diagnostic(
            range=span_range(span) if span is not None else lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)),
            message=message, code=d.code, source="plan",
            severity=lsp.DiagnosticSeverity.Error if d.is_error else lsp.DiagnosticSeverity.Warning,
            related_information=related or None)

    async def check(uri: str) -> None:
        path = to_fs_path(uri)
        if path is None:
            return
        version = latest[uri] = latest.get(uri, 0) + 1
        await asyncio.sleep(0.2)  # let a burst of keystrokes settle
        async with lock:
            if latest.get(uri) != version:
                return
            analysis = await asyncio.to_thread(Analysis.of, Path(path), texts())
        if latest.get(uri) != version:
            return
        analyses[uri] = analysis
        main = analysis.file(analysis.main)
        for where, found in analysis.diagnostics().items():
            server.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(
                uri=from_fs_path(str(where)) or "", diagnostics=[diagnostic(d, main) for d in found]))

    def offset_of(uri: str, pos: lsp.Position) -> tuple[Analysis, Path, int] | None:
        analysis, path = analyses.get(uri), to_fs_path(uri)
        file = analysis.file(Path(path)) if analysis is not None and path is not None else None
        if analysis is None or file is None or path is None:
            return None
        at = codec().position_from_client_units(lines(file), pos)
        if at.line >= len(file.line_starts):
            return None
        return analysis, Path(path), file.line_starts[at.line] + at.character

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: LanguageServer, params: lsp.DidOpenTextDocumentParams) -> None:
        await check(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: LanguageServer, params: lsp.DidChangeTextDocumentParams) -> None:
        await check(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: LanguageServer, params: lsp.DidSaveTextDocumentParams) -> None:
        await check(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: LanguageServer, params: lsp.HoverParams) -> lsp.Hover | None:
        found = offset_of(params.text_document.uri, params.position)
        answer = found[0].hover(found[1], found[2]) if found is not None else None
        if answer is None:
            return None
        text, span = answer
        return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text), span_range(span))

    @server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
    def definition(ls: LanguageServer, params: lsp.DefinitionParams) -> lsp.Location | None:
        found = offset_of(params.text_document.uri, params.position)
        target = found[0].definition(found[1], found[2]) if found is not None else None
        if isinstance(target, Path):
            return lsp.Location(from_fs_path(str(target)) or "", lsp.Range(lsp.Position(0, 0), lsp.Position(0, 0)))
        return location(target) if target is not None else None

    server.start_io()
