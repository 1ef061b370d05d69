"""Elaborate: names, kinds, instances, types and units → the typed node graph.

Contract
- `elaborate(program, sink) -> Elaborated`. Starting from the main module's instances, lets and
  checks, resolves every name (fields of the current instance first, then global declarations,
  then enum members), finds each field's effective definition (the instance's own assignment,
  else its base instance's, else the kind's default or formula), checks dimensions and types,
  and records one `Node` per quantity in topological order.
- Expressions written in a kind are elaborated in the scope of each instance that uses them, so
  an instance that overrides an input (`decoder student = llama { layers = 40 }`) gets every
  derived quantity recomputed from it.
- Every problem is a diagnostic; a node that fails is remembered so one mistake is reported once.
  Cycles are reported with every member.
- Questions: once the graph is complete, `questions.py` resolves every path the plan's questions
  name into typed records (`Elaborated.questions`); a variant (`elaborate_variant`: the plan with
  some fields overridden, as a question or a lever builds it) answers none.
- A variant given the plan it varies (`base`) starts from that plan's memo and elaborates again
  only the nodes whose formulas the overrides change (`declarations.py`, incremental variants);
  the result is the variant's full elaboration, node for node in what it evaluates to. A variant
  that meets an error while checking a kept node it may not need (`Restart`) is elaborated in
  full, so its diagnostics are exactly the full elaboration's.
"""

from __future__ import annotations

from fractions import Fraction

from .. import diagnostics as dx
from ..figure_roles import FIGURES
from ..source import Span
from ..syntax import ast
from . import ir
from .declarations import Restart
from .expressions import Expressions
from .questions import questions
from .resolve import Program
from .units import DIMENSIONLESS, Dim
from .values import (
    Instance,
    Kind,
    Value,
    as_bool_expr,
    describe,
)

__all__ = ["Elaborator", "elaborate", "elaborate_expr", "elaborate_reads", "elaborate_variant"]


class Elaborator(Expressions):
    # ---- entry point ----------------------------------------------------------------------
    def run(self) -> ir.Elaborated:
        asked: list[ast.Question] = []
        for stmt in self.program.main.statements:
            if isinstance(stmt, ast.Meta):
                setattr(self.out, stmt.key, stmt.value)
            elif isinstance(stmt, ast.InstanceDecl):
                self._root_instance(stmt)
            elif isinstance(stmt, ast.LetDecl):
                self._let(stmt.name, stmt.name_span)
            elif isinstance(stmt, ast.CheckStmt) and self.question_reads is None:
                self._check(stmt)
            elif isinstance(stmt, ast.SummaryStmt) and self.question_reads is None:
                self._summary(stmt)
            elif isinstance(stmt, (ast.SolveStmt, ast.AskStmt, ast.ScenarioStmt, ast.CompareStmt,
                                   ast.SweepStmt, ast.SearchStmt)):
                asked.append(stmt)
        self._requirements()
        if self.question_reads is not None:
            self._read(self.question_reads)
        if asked and not self.lean and not self.overrides:  # a variant answers no question
            self.out.questions = questions(self.program, self.out, asked, self.sink)
        for stmt in self.program.main.statements:  # the plan's own levers, after its kinds'
            if isinstance(stmt, ast.LeverDecl) and not self.lean:
                self._lever(None, stmt)
        self._unused_kinds()
        self._lineage()
        self.finish_resumed()
        return self.out

    def _read(self, exprs: tuple[ast.Expr, ...]) -> None:
        """What a question reads of a lean variant, in place of the summary and the checks: the
        nodes of its expressions. A problem met on the way is the question's to report, when it
        elaborates them against a full variant: this one is marked `unread`."""
        sink, self.sink = self.sink, dx.Sink()
        try:
            for e in exprs:
                self.expr(e, None)
        finally:
            own, self.sink = self.sink, sink
        self.unread = bool(own.items)

    def _lineage(self) -> None:
        """Record the kind chain and the base chain of every instance reached."""
        for name, inst in self.instances.items():
            if inst is None or inst.abstract:
                continue
            kinds: list[str] = []
            kind: Kind | None = inst.kind
            while kind is not None:
                kinds.append(kind.name)
                kind = kind.parent
            bases: list[str] = []
            base = inst.base
            while base is not None:
                bases.append(base.name)
                base = base.base
            self.out.kinds[name] = tuple(kinds)
            self.out.bases[name] = tuple(bases)

    def _unused_kinds(self) -> None:
        """Check the kinds of the main plan that no instance uses, as if one did.

        Their inputs stand for themselves (placeholders with the declared unit), so every name,
        unit and dimension in their formulas is checked; nothing of it reaches the report.
        """
        used = {inst.kind.name for inst in self.instances.values() if inst is not None}
        checker = Elaborator(self.program, self.sink)
        for stmt in self.program.main.statements:
            if isinstance(stmt, ast.KindDecl) and stmt.name not in used:
                kind = self.kind(stmt.name, stmt.name_span)
                if kind is not None:
                    checker.check_abstract(kind)

    def _root_instance(self, decl: ast.InstanceDecl) -> None:
        inst = self.instance(decl.name)
        if inst is None or inst.decl is not decl:
            return
        self.out.main_instances.append(inst.name)
        if self.lean:
            return
        for name in inst.kind.fields:
            self.field(inst, name, decl.name_span)

    def _summary(self, stmt: ast.SummaryStmt) -> None:
        for item in stmt.items:
            value = as_bool_expr(self.expr(item, None))
            if isinstance(value, (ir.Lit, ir.Ref, ir.Op)):
                self.out.summary.append(value)
            elif value is not None:
                self.sink.add(dx.WRONG_TYPE.at(item.span, "not a quantity", expected="a quantity or a verdict",
                                               found=describe(value), help="summarise numbers or comparisons"))

    def _check(self, stmt: ast.CheckStmt) -> None:
        value = self.expr(stmt.expr, None)
        if value is None:
            return
        if isinstance(value, ir.StaticBool):
            value = ir.Lit(Fraction(int(value.value)), ir.BOOL, value.span, str(value.value).lower())
        if not isinstance(value, (ir.Lit, ir.Ref, ir.Op)) or value.dim != ir.BOOL:
            self.sink.add(dx.CHECK_NOT_COMPARISON.at(
                stmt.expr.span, "not a comparison", found=describe(value),
                help="write a comparison such as `check chat.memory_per_device <= 80 GiB`",
            ))
            return
        self.out.checks.append(ir.Check(value, stmt.label, stmt.span))

    def _requirements(self) -> None:
        seen = 0
        while seen < len(self.out.instances):  # requirements may reach further instances
            name = self.out.instances[seen]
            seen += 1
            inst = self.instances.get(name)
            if inst is None:
                continue
            for req in inst.kind.requires:
                value = self.expr(req.expr, inst)
                if isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and value.dim == ir.BOOL:
                    target = self.out.advisories if req.advisory else self.out.requirements
                    target.append(ir.Requirement(inst.name, value, req.message, req.span, self._blame(inst, value)))
            if self.lean:
                continue
            for finding, section in inst.kind.findings:
                self._finding(inst, finding, section)
            for lever in inst.kind.levers:
                self._lever(inst, lever)
            if not inst.abstract:
                for figure in inst.kind.figures:
                    self._figure(inst, figure)

    def _finding(self, inst: Instance, decl: ast.FindingDecl, section: str | None) -> None:
        """A kind's `finding`, for one instance: its condition a verdict, each hole a quantity."""
        cond = self._verdict(decl.expr, inst, "a finding is stated when its condition holds")
        if cond is True:
            cond = ir.Lit(Fraction(1), ir.BOOL, decl.expr.span, "true")
        parts = self._holes(decl.parts, inst)
        if cond is not None and cond is not False and parts is not None:
            self.out.findings.append(ir.Finding(inst.name, cond, parts, decl.span, section or ""))

    def _figure(self, inst: Instance, decl: ast.FigureDecl) -> None:
        """A kind's `figure`, for one instance: each role a quantity of it (or, for a static
        role, an enumeration member)."""
        static = FIGURES[decl.name].static
        roles, texts = [], []
        for role in decl.roles:
            value = self.expr(role.value, inst)
            if role.name in static and isinstance(value, ir.EnumValue):
                texts.append((role.name, value.member.name))
            elif role.name not in static and isinstance(value, ir.Ref):
                roles.append((role.name, value.node))
            elif value is not None:
                expected = "an enumeration value" if role.name in static else "a field of the instance"
                self.sink.add(dx.WRONG_TYPE.at(role.value.span, "not what the figure reads", expected=expected,
                                               found=describe(value),
                                               help=f"a figure's role names one {'value' if role.name in static else 'quantity'}: "
                                                    f"`{role.name} = some_field`"))
                return
            else:
                return
        self.out.figures.append(ir.Figure(inst.name, decl.name, tuple(roles), tuple(texts), decl.span))

    def _lever(self, inst: Instance | None, decl: ast.LeverDecl) -> None:
        """A lever of a kind, for one instance (its fields by name), or of the plan (paths to
        instances' fields); the solve stage prices it as a variant of the plan."""
        cond = self._verdict(decl.cond, inst, "a lever applies where its condition holds") if decl.cond is not None else None
        if cond is False or (decl.cond is not None and cond is None):
            return
        targets: list[tuple[tuple[str, str], ast.Expr]] = []
        for a in decl.assignments:
            steps = list(a.target.steps)
            names = [st.name if not st.indexed else f"[{st.name}]" for st in steps]
            if inst is None:
                owner = self.program.names.get(steps[0].name)
                if len(steps) < 2 or not isinstance(owner, ast.InstanceDecl):
                    self.sink.add(dx.UNKNOWN_NAME.at(a.target.span, "not an instance's field", name=a.target.dotted,
                                                     help="a plan's lever sets fields of its instances, like `chat.model = x`"))
                    return
                where = self.instance(steps[0].name)
                if where is None:
                    return
                field_name, first = names[1] + "".join(names[2:]), steps[1]
            else:
                where, field_name, first = inst, names[0] + "".join(names[1:]), steps[0]
            if first.name not in where.kind.fields:
                self._unknown(first.name, first.span, list(where.kind.fields), "field", f"`{where.kind.name}`")
                return
            targets.append(((where.name, field_name), a.value))
        takes, gate = self._holes(decl.takes, inst), self._holes(decl.gate, inst)
        if takes is None or gate is None:
            return
        self.out.levers.append(ir.Lever(inst.name if inst is not None else "", decl.label,
                                        cond if isinstance(cond, (ir.Lit, ir.Ref, ir.Op)) else None,
                                        tuple(targets), takes, gate, decl.source, decl.span))

    def _verdict(self, e: ast.Expr, inst: Instance | None, help: str) -> ir.Expr | bool | None:
        """A condition of a finding or a lever: a verdict, True or False when the plan's choices
        settle it (`static_batching`), None after a diagnostic."""
        cond = self.expr(e, inst)
        if cond is None:
            return None
        if isinstance(cond, ir.StaticBool):
            return cond.value
        if not (isinstance(cond, (ir.Lit, ir.Ref, ir.Op)) and cond.dim == ir.BOOL):
            self.sink.add(dx.WRONG_TYPE.at(e.span, "not a verdict", expected="a verdict (a comparison or a bool)",
                                           found=describe(cond), help=help))
            return None
        return cond

    def _holes(self, parts: tuple[str | ast.Hole, ...], inst: Instance | None) -> tuple[str | ir.Hole, ...] | None:
        """A sentence's holes elaborated: each a quantity (a percentage only of a fraction)."""
        out: list[str | ir.Hole] = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = self.expr(part.expr, inst)
            if value is None:
                return None
            if not (isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and isinstance(value.dim, Dim)):
                self.sink.add(dx.WRONG_TYPE.at(part.span, "not a quantity", expected="a quantity", found=describe(value),
                                               help="a hole shows a number with its unit: name a quantity"))
                return None
            if part.percent and value.dim != DIMENSIONLESS:
                self.sink.add(dx.WRONG_TYPE.at(part.span, "not a fraction", expected="a dimensionless fraction for `:%`",
                                               found=f"a quantity in {value.dim}", help="drop `:%` to show it with its unit"))
                return None
            out.append(ir.Hole(value, part.percent, part.span))
        return tuple(out)

    def _blame(self, inst: Instance, value: ir.Expr) -> Span:
        """The user's assignment a failed requirement is most likely about: the first input the
        plan set, following derived quantities down to their inputs — one in the user's own files
        before one in the stdlib's catalog (a `tensor_parallel = 16`, not the board's size)."""
        user, catalog = ir.set_inputs(self.out.nodes, ir.refs(value))
        if user is not None:
            return user
        # no input of the user's own: their instance, else the catalog input the clause reads
        return catalog if catalog is not None and inst.decl.name_span.file.is_stdlib else inst.decl.name_span


INCREMENTAL = True
"""Whether a variant starts from the memo of the plan it varies (tests compare it with the full
elaboration, which this switches back to)."""


def elaborate(program: Program, sink: dx.Sink) -> ir.Elaborated:
    """The plan as written, with its questions (`Elaborated.questions`), and the memo its
    variants start from (`Elaborated.memo`)."""
    elaborator = Elaborator(program, sink)
    out = elaborator.run()
    out.memo = elaborator.memo()
    return out


def elaborate_variant(program: Program, sink: dx.Sink, overrides: dict[ir.FieldRef, ast.Expr],
                      lean: bool = False, base: ir.Elaborated | None = None) -> ir.Elaborated:
    """A variant of the plan: each override `(instance, field) -> expression` (a question's
    `given`, a scenario's assignment, a sweep's point, a lever) replaces that field's definition
    everywhere, as an assignment in the plan would. A variant answers no question; `lean` builds
    only what the summary, the checks and the requirements read (no findings, levers, figures).
    `base`: the plan as elaborated (by `elaborate`), whose nodes the overrides cannot reach the
    variant keeps rather than elaborating them again; the result is the same either way."""
    out = _variant(program, sink, overrides, lean, base, None)
    assert out is not None  # only a question's reads leave a variant unread
    return out


def elaborate_reads(program: Program, sink: dx.Sink, overrides: dict[ir.FieldRef, ast.Expr],
                    reads: tuple[ast.Expr, ...], base: ir.Elaborated | None = None) -> ir.Elaborated | None:
    """A lean variant (`elaborate_variant`) that builds, in place of the summary and the checks,
    what a question's expressions read (an ask's `given`): its requirements and those; None if
    one of the expressions meets a problem (the question reports it against the full variant)."""
    return _variant(program, sink, overrides, True, base, reads)


def _variant(program: Program, sink: dx.Sink, overrides: dict[ir.FieldRef, ast.Expr], lean: bool,
             base: ir.Elaborated | None, reads: tuple[ast.Expr, ...] | None) -> ir.Elaborated | None:
    def made(elaborator: Elaborator) -> ir.Elaborated | None:
        elaborator.question_reads = reads
        out = elaborator.run()
        return None if elaborator.unread else out

    if INCREMENTAL and base is not None and base.memo is not None:
        tried = dx.Sink()
        elaborator = Elaborator(program, tried, overrides, lean)
        elaborator.resume(base.memo)
        try:
            resumed = made(elaborator)
        except Restart:
            pass
        else:
            for d in tried.items:
                sink.add(d)
            return resumed
    return made(Elaborator(program, sink, overrides, lean))


def elaborate_expr(program: Program, elaborated: ir.Elaborated, e: ast.Expr, sink: dx.Sink) -> Value | None:
    """An expression a question writes (`chat.ttft_p99 <= 500 ms`, `fp8`), elaborated against a
    plan already elaborated (the baseline or a variant): its names resolve to that plan's nodes
    as references, and its problems go to `sink`."""
    elab = Elaborator(program, sink)
    elab.out = elaborated
    elab.done = {n: node.dim for n, node in elaborated.nodes.items()}  # type: ignore[misc]
    return elab.expr(e, None)
