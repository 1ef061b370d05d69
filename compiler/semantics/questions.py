"""Questions elaborated: each `ask`, `solve`, `scenario`, `compare`, `sweep` and `search` of the
main plan into a typed record (`ir.Ask`, `ir.Solve`, `ir.Scenario`, `ir.Table`, `ir.Search`).

Contract
- `questions(program, elaborated, statements, sink) -> list[ir.Question]`, called once the plan's
  graph is complete: every path a question names is resolved to an instance's field (relative
  to the question's subject for compare, sweep and search), and one that names none is E0201 at
  the path, with the field it most likely means. A question with such a path is left out; the
  others are kept in the order written.
- Expressions stay as written (`ast.Expr`): the solve stage elaborates each against the variant
  of the plan the question asks about, since a `given`, a scenario or a point of a sweep changes
  the graph they read. What needs a value (a range's ends, whole numbers for a field declared
  `integer`) is checked there too.
- Nothing here evaluates; the records hold no reference to the elaborator.
"""

from __future__ import annotations

from .. import diagnostics as dx
from ..syntax import ast
from . import ir
from .resolve import Program
from .values import suggestion

__all__ = ["path_expr", "questions"]


def path_expr(path: ast.Path) -> ast.Expr:
    """A path (`chat.batch`) as the expression that reads it."""
    expr: ast.Expr = ast.Name(path.steps[0].span, path.steps[0].name)
    for step in path.steps[1:]:
        expr = ast.Attribute(step.span, expr, step.name, step.span)
    return expr


def questions(program: Program, elaborated: ir.Elaborated, statements: list[ast.Question],
              sink: dx.Sink) -> list[ir.Question]:
    resolver = _Resolver(program, elaborated, sink)
    out = []
    for stmt in statements:
        try:
            out.append(resolver.question(stmt))
        except _Unresolved:
            continue
    return out


class _Unresolved(Exception):
    """A path of the question names no field (already reported)."""


class _Resolver:
    def __init__(self, program: Program, elaborated: ir.Elaborated, sink: dx.Sink) -> None:
        self.program, self.el, self.sink = program, elaborated, sink

    def question(self, q: ast.Question) -> ir.Question:
        if isinstance(q, ast.AskStmt):
            return self.ask(q)
        if isinstance(q, ast.SolveStmt):
            return self.solve(q)
        if isinstance(q, ast.ScenarioStmt):
            return ir.Scenario("scenario", q.title, q.span, tuple(self.setting(a) for a in q.assignments))
        if isinstance(q, (ast.CompareStmt, ast.SweepStmt)):
            domains = (q.domain,) if isinstance(q, ast.CompareStmt) else q.domains
            plot = q.plot if isinstance(q, ast.SweepStmt) else None
            keyword = "compare" if isinstance(q, ast.CompareStmt) else "sweep"
            axes = tuple(self.axis(d, q.subject) for d in domains)
            columns = tuple(self.column(p, q.subject) for p in plot.axes) if plot is not None else ()
            return ir.Table(keyword, keyword, q.span, self.subject(q.subject), axes, columns)
        assert isinstance(q, ast.SearchStmt)
        axes = tuple(self.axis(d, q.subject) for d in q.domains)
        target = self.column(q.target, q.subject)
        pareto = q.plot.axes if q.plot is not None and q.plot.kind == "pareto" else ()
        return ir.Search("search", "search", q.span, self.subject(q.subject), axes, q.objective, target,
                         q.constraints, tuple(self.column(p, q.subject) for p in pareto))

    def ask(self, q: ast.AskStmt) -> ir.Ask:
        try:
            target: ir.FieldRef | None = self.field(q.target)
        except _Unresolved:
            target = None  # its givens are still checked, and reported
        given = tuple(self.setting(g) for g in q.given)
        if target is None:
            raise _Unresolved
        if q.over is None:
            unknown, unknown_span, quantity = target, q.target.span, None
        else:
            unknown, unknown_span = self.field(q.over), q.over.span
            quantity = ir.Column(q.target.dotted, target, path_expr(q.target), q.target.span)
        return ir.Ask("ask", q.title, q.span, q.objective, unknown, unknown_span, quantity, q.constraints, q.equation, given)

    def solve(self, q: ast.SolveStmt) -> ir.Solve:
        quantity, subject = q.subject, q.unknown  # `solve devices for chat`
        if len(subject.steps) != 1 or not isinstance(self.program.names.get(subject.steps[0].name), ast.InstanceDecl):
            self.sink.add(dx.WRONG_TYPE.at(subject.span, "not an instance", expected="an instance after `for`",
                                           found=f"`{subject.dotted}`",
                                           help="name the instance the quantity belongs to: `solve devices for chat`"))
            raise _Unresolved
        return ir.Solve("solve", " ".join(q.span.text.split()), q.span, self.field(quantity, subject), quantity.span)

    def setting(self, a: ast.Assignment) -> ir.Setting:
        return ir.Setting(self.field(a.target), a.value, a.span)

    def axis(self, d: ast.Domain, subject: ast.Path) -> ir.Axis:
        t = self.field(d.target, subject)
        node = self.el.nodes.get(ir.node_id(*t))
        return ir.Axis(d.target.dotted, t, d.values, d.low, d.high, d.step, node is not None and node.integral, d.span)

    def column(self, p: ast.Path, subject: ast.Path) -> ir.Column:
        return ir.Column(p.dotted, self.field(p, subject), path_expr(ast.Path(p.span, subject.steps + p.steps)), p.span)

    def subject(self, subject: ast.Path) -> str:
        return ".".join(s.name for s in subject.steps)

    def field(self, path: ast.Path, subject: ast.Path | None = None) -> ir.FieldRef:
        """(instance, field) named by a path, relative to a subject instance if given; E0201 at
        the path when it names none."""
        steps = list(path.steps)
        if subject is not None:
            steps = list(subject.steps) + steps
        names = [s.name if not s.indexed else f"[{s.name}]" for s in steps]
        if len(steps) < 2 or not isinstance(self.program.names.get(steps[0].name), ast.InstanceDecl):
            self.sink.add(dx.UNKNOWN_NAME.at(path.span, "not an instance's field", name=path.dotted,
                                             help="name a field of an instance, like `chat.batch`"))
            raise _Unresolved
        field_name = names[1] + "".join(names[2:])
        node_id = ir.node_id(steps[0].name, field_name)
        if all(s.indexed for s in steps[2:]) and (node_id in self.el.nodes or node_id in self.el.statics):
            return steps[0].name, field_name
        fields = sorted({field.partition("[")[0] for owner, field in map(ir.field_ref, (*self.el.nodes, *self.el.statics))
                         if owner == steps[0].name})
        near = suggestion(field_name, fields, []) if len(steps) == 2 else None
        if subject is not None and len(subject.steps) > 1:  # `sweep chat.devices over chat.batch in ...`
            hint = (f"a question's subject is an instance and its domains name that instance's fields: "
                    f"`over {path.steps[-1].name} in ...` varies `{steps[0].name}.{path.steps[-1].name}`")
        elif near:
            hint = f"did you mean `{steps[0].name}.{near}`?"
        else:
            hint = f"name one field of `{steps[0].name}`, like `{steps[0].name}.batch`"
        shown = ".".join(s.name for s in steps)
        self.sink.add(dx.UNKNOWN_NAME.at(path.span, f"`{shown}` is not a field of `{steps[0].name}`", name=shown, help=hint))
        raise _Unresolved
