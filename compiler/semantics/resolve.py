"""Resolve: load the main plan and everything it imports; build the global namespace.

Contract
- `load_program(path, sink, texts=None) -> Program | None`. Reads the main file and,
  transitively, its imports (plus the stdlib prelude), parsing each once. `texts` maps real
  paths to text that stands in for the file on disk (an editor's unsaved buffers); a path in
  it need not exist. Returns None when the main file cannot
  be read or parsed; import problems are diagnostics on the import statement.
- Import paths: `"./x"` / `"../x"` are relative to the importing file and must stay inside the
  directory tree of the main plan; any other path names a file in the stdlib (`"models/llama"`
  → `stdlib/models/llama.plan`). `.plan` is appended when missing. Paths are resolved after
  following symlinks, so a link cannot lead outside the allowed roots.
- The namespace is global and order-independent: every top-level enum, kind, instance and
  `let` of every loaded module, plus enum members (reachable by bare name when unambiguous).
  A second declaration of a name is E0202, citing the first; so is a path that an instance, a
  scenario, a lever or a question's `given` sets twice (`check_set_once`, which a `where`'s bindings use too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path, PurePosixPath

from .. import diagnostics as dx
from ..source import MAX_FILE_BYTES, STDIN, LoadProblem, SourceFile, Span, read_source, source_from_text
from ..syntax import ast
from ..syntax.parser import parse

PRELUDE = "prelude"

Decl = ast.EnumDecl | ast.KindDecl | ast.InstanceDecl | ast.LetDecl


@dataclass
class Program:
    main: ast.Module
    main_file: SourceFile
    modules: list[ast.Module] = field(default_factory=list)
    names: dict[str, Decl] = field(default_factory=dict)
    members: dict[str, list[tuple[ast.EnumDecl, ast.EnumMember]]] = field(default_factory=dict)


def stdlib_root() -> Path:
    return Path(str(resources.files("planc.stdlib")))


_LOAD_CODES = {
    LoadProblem.MISSING: dx.FILE_MISSING,
    LoadProblem.DIRECTORY: dx.FILE_IS_DIRECTORY,
    LoadProblem.NOT_UTF8: dx.FILE_NOT_UTF8,
    LoadProblem.EMPTY: dx.FILE_EMPTY,
    LoadProblem.UNREADABLE: dx.FILE_UNREADABLE,
    LoadProblem.TOO_LARGE: dx.FILE_TOO_LARGE,
    LoadProblem.NOT_REGULAR: dx.FILE_NOT_REGULAR,
}
_LOAD_HELP = {
    LoadProblem.MISSING: "check the path; plan files end in `.plan`",
    LoadProblem.DIRECTORY: "name a `.plan` file inside it",
    LoadProblem.NOT_UTF8: "save the file as UTF-8",
    LoadProblem.EMPTY: "declare at least a model, hardware and traffic; see examples/",
    LoadProblem.UNREADABLE: "check the file's permissions",
    LoadProblem.TOO_LARGE: f"a plan is at most {MAX_FILE_BYTES:,} bytes; split it into files that import each other",
    LoadProblem.NOT_REGULAR: "to read a plan from a pipe, pass `-` and send it to standard input: `... | plan check -`",
}
MAX_IMPORT_DEPTH = 32
"""How deep imports may nest (a file importing a file importing ...): the stdlib needs 3."""


class _Loader:
    def __init__(self, main_path: Path, sink: dx.Sink, texts: Mapping[Path, str] | None = None) -> None:
        self.sink = sink
        self.texts = {p.resolve(): t for p, t in (texts or {}).items()}
        self.root = main_path.resolve().parent
        self.stdlib = stdlib_root().resolve()
        self.loaded: dict[Path, ast.Module | None] = {}
        self.order: list[ast.Module] = []
        self.stack: list[tuple[Path, Span | None]] = []  # files being loaded, with the import that led there
        self.shown_dir = PurePosixPath(".")
        self.stdin = main_path.resolve() if str(main_path) == STDIN else None

    def load(self, path: Path, shown: str, at: Span | None) -> ast.Module | None:
        real = path.resolve()
        paths = [p for p, _ in self.stack]
        if real in paths:
            start = paths.index(real)
            names = " → ".join(self._shown(p) for p in paths[start:] + [real])
            # The user compiles the main file: point at its import that leads into the cycle.
            entry = self.stack[1][1] if len(self.stack) > 1 else at
            steps = [span for _, span in self.stack[start + 1:] if span is not None] + ([at] if at else [])
            self.sink.add(dx.IMPORT_CYCLE.at(
                entry, "leads into an import cycle", cycle=names,
                secondary=[dx.Label(s, "part of the cycle") for s in steps if s != entry],
                help="move the declarations both files need into a third file that both import",
            ))
            return None
        if real in self.loaded:
            return self.loaded[real]
        is_std = real.is_relative_to(self.stdlib)
        if real in self.texts:
            file, problem, detail = source_from_text(self.texts[real], shown, is_stdlib=is_std)
        else:
            file, problem, detail = read_source(Path(STDIN) if real == self.stdin else real, shown, is_stdlib=is_std)
        if problem is not None:
            code = _LOAD_CODES[problem]
            span = at if at is not None else (Span(file, 0, 0) if file is not None else None)
            if at is None and file is not None and file.bad_offset is not None:
                span = Span(file, file.bad_offset, min(file.bad_offset + 1, len(file.text)))
            self.sink.add(code.at(span, "", path=shown, detail=detail, help=_LOAD_HELP[problem]))
            self.loaded[real] = None
            return None
        assert file is not None
        module, problems = parse(file)
        self.sink.extend(problems)
        if module is not None and not module.statements:  # only comments
            self.sink.add(dx.FILE_EMPTY.at(at or Span(file, 0, 0), "", path=shown, help=_LOAD_HELP[LoadProblem.EMPTY]))
            module = None
        self.loaded[real] = module
        if module is None:
            return None
        self.stack.append((real, at))
        for stmt in module.statements:
            if isinstance(stmt, ast.Import):
                if len(self.stack) > MAX_IMPORT_DEPTH:
                    self.sink.add(dx.IMPORT_TOO_DEEP.at(
                        stmt.path_span, "one import too many", limit=MAX_IMPORT_DEPTH,
                        secondary=[dx.Label(s, "imported here") for _, s in self.stack[1:4] if s is not None],
                        help="import the files the plan needs from fewer levels: a file may import "
                             "several others side by side"))
                    break
                self._import(stmt, real)
        self.stack.pop()
        self.order.append(module)
        return module

    def _shown(self, real: Path) -> str:
        """How a file is named in messages: stdlib files as `<stdlib>/...`, the plan's own files
        relative to where the main file was named from (as the user typed it)."""
        if real.is_relative_to(self.stdlib):
            return "<stdlib>/" + real.relative_to(self.stdlib).as_posix()
        if real.is_relative_to(self.root):
            return (self.shown_dir / real.relative_to(self.root).as_posix()).as_posix()
        return real.as_posix()

    def _import(self, stmt: ast.Import, importer: Path) -> None:
        name = stmt.path if stmt.path.endswith(".plan") else stmt.path + ".plan"
        relative = name.startswith(("./", "../"))
        try:
            target = import_target(stmt.path, importer)
        except (OSError, ValueError):  # a NUL or another name the file system cannot hold
            self.sink.add(dx.IMPORT_NOT_FOUND.at(
                stmt.path_span, "not a file name", path=stmt.path,
                help="an import names a `.plan` file by a path of printable characters"))
            return
        inside = target.is_relative_to(self.root) or target.is_relative_to(self.stdlib)
        if Path(name).is_absolute() or not inside:
            where = "the plan's directory tree" if relative else "the stdlib"
            self.sink.add(dx.IMPORT_OUTSIDE.at(
                stmt.path_span, f"resolves outside {where}", path=stmt.path,
                help="imports may name stdlib files (`\"models/llama-3.1-8b\"`) or `.plan` files "
                     "under the directory of the plan being compiled (`\"./gpus\"`)",
            ))
            return
        if not target.is_file() and target not in self.texts:
            self.sink.add(dx.IMPORT_NOT_FOUND.at(
                stmt.path_span, "no such plan", path=stmt.path, help=self._import_help(stmt.path, relative),
            ))
            return
        self.load(target, self._shown(target), stmt.path_span)

    def _import_help(self, path: str, relative: bool) -> str:
        if relative:
            return "relative imports are resolved from the importing file's directory"
        import difflib

        known = sorted(p.relative_to(self.stdlib).with_suffix("").as_posix() for p in self.stdlib.rglob("*.plan"))
        close = difflib.get_close_matches(path, known, n=1)
        if close:
            return f"did you mean `\"{close[0]}\"`?"
        return "stdlib plans: " + ", ".join(f"`{k}`" for k in known[:12])


def import_target(path: str, importer: Path) -> Path:
    """The file an `import "path"` in the file `importer` names (`.plan` appended when missing):
    `./x`, `../x` beside the importer, anything else in the stdlib; resolved, not checked. May
    raise OSError or ValueError for a name the file system cannot hold."""
    name = path if path.endswith(".plan") else path + ".plan"
    base = importer.parent if name.startswith(("./", "../")) else stdlib_root()
    return (base / name).resolve()


def load_program(path: Path, sink: dx.Sink, shown: str | None = None,
                 texts: Mapping[Path, str] | None = None) -> Program | None:
    """`path` `-` reads the main plan from standard input (shown as `<stdin>`); its relative
    imports are resolved from the current directory."""
    if str(path) == STDIN and shown in (None, STDIN):
        shown = "<stdin>"
    loader = _Loader(path, sink, texts)
    stdlib = loader.stdlib
    prelude = stdlib / f"{PRELUDE}.plan"
    if path.resolve() != prelude:
        loader.load(prelude, f"<stdlib>/{PRELUDE}.plan", None)
    loader.shown_dir = PurePosixPath(shown or str(path)).parent
    main = loader.load(path, shown or str(path), None)
    if main is None:
        return None
    main_file = main.span.file
    program = Program(main=main, main_file=main_file, modules=loader.order)
    _collect_names(program, sink)
    return program


def _collect_names(program: Program, sink: dx.Sink) -> None:
    for module in program.modules:
        for stmt in module.statements:
            if isinstance(stmt, (ast.EnumDecl, ast.KindDecl, ast.InstanceDecl, ast.LetDecl)):
                first = program.names.get(stmt.name)
                if first is not None:
                    sink.add(dx.DUPLICATE_NAME.at(
                        stmt.name_span, "declared again here", name=stmt.name,
                        secondary=[dx.Label(first.name_span, "first declared here")],
                        help=_duplicate_help(first, stmt.name),
                    ))
                    continue
                program.names[stmt.name] = stmt
            if isinstance(stmt, ast.InstanceDecl):
                check_set_once(stmt.fields, sink, f"{stmt.name}.", f"`{stmt.name}` takes a single value for it")
            elif isinstance(stmt, (ast.ScenarioStmt, ast.LeverDecl)):
                check_set_once(stmt.assignments, sink, "", "a change sets each path once")
            elif isinstance(stmt, ast.AskStmt):
                check_set_once(stmt.given, sink, "", "a question's `given` sets each path once")
            elif isinstance(stmt, ast.KindDecl):
                for item in stmt.items:
                    if isinstance(item, ast.LeverDecl):
                        check_set_once(item.assignments, sink, "", "a change sets each field once")
            if isinstance(stmt, ast.EnumDecl):
                for member in stmt.members:
                    program.members.setdefault(member.name, []).append((stmt, member))


def check_set_once(settings: Sequence[ast.Field | ast.Assignment], sink: dx.Sink, owner: str, why: str,
                   verb: str = "set") -> bool:
    """Each path of a list of assignments (an instance's fields and map entries, a scenario's or a
    lever's changes, a `where`'s bindings) is set once: a second is E0202 at the second, citing the
    first. Whichever one a later stage kept, the other would be dropped without a word. True when
    none repeats."""
    seen: dict[str, ast.Field | ast.Assignment] = {}
    ok = True
    for a in settings:
        key = a.target.dotted
        first = seen.setdefault(key, a)
        if first is not a:
            ok = False
            sink.add(dx.DUPLICATE_NAME.at(
                a.target.span, f"{verb} again here", name=f"{owner}{key}",
                secondary=[dx.Label(first.target.span, f"first {verb} here")],
                help=f"keep one of the two: {why}",
            ))
    return ok


def _duplicate_help(first: Decl, name: str) -> str:
    if isinstance(first, ast.InstanceDecl):
        return f"rename one of them, or derive a variant: `{first.kind} new_name = {name} {{ ... }}`"
    return "rename one of them"
