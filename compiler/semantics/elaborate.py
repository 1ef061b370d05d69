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
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from .. import diagnostics as dx
from ..builtins import FUNCTIONS
from ..source import Span
from ..syntax import ast
from . import ir
from .resolve import Program
from .units import DIMENSIONLESS, Dim, UnitError, format_number, format_quantity, parse_unit

FLOAT_MAX = Fraction(1.7976931348623157e308)


# ---- kinds, instances and static values ---------------------------------------------------


@dataclass
class FieldSpec:
    name: str
    decl: ast.InputDecl | ast.DeriveDecl
    section: str | None
    owner: str  # the kind that declares it


@dataclass
class Kind:
    name: str
    decl: ast.KindDecl
    parent: Kind | None
    fields: dict[str, FieldSpec] = field(default_factory=dict)
    requires: list[ast.RequireDecl] = field(default_factory=list)
    findings: list[tuple[ast.FindingDecl, str | None]] = field(default_factory=list)  # with their section
    levers: list[ast.LeverDecl] = field(default_factory=list)

    def is_a(self, other: Kind) -> bool:
        kind: Kind | None = self
        while kind is not None:
            if kind is other:
                return True
            kind = kind.parent
        return False


@dataclass
class Instance:
    name: str
    decl: ast.InstanceDecl
    kind: Kind
    base: Instance | None
    abstract: bool = False  # a stand-in used to check a kind that no instance uses
    # a variant (`x where (a = ...)`, or the trial values of `largest`): the instance it varies,
    # and the fields it binds, each to a value computed in that instance (None: the free
    # variable of a `largest`, whose values the evaluator chooses)
    outer: Instance | None = None
    bound: dict[str, tuple[ir.Expr | None, ast.Expr]] = field(default_factory=dict)

    @property
    def origin(self) -> Instance:
        """The instance of the plan this one is a variant of (itself if it is one)."""
        return self if self.outer is None else self.outer.origin

    def assigned(self) -> dict[str, ast.Field]:
        """Plain field assignments, the instance's own over its base's (computed once)."""
        cached = self.__dict__.get("_assigned")
        if cached is None:
            cached = {}
            for _owner, f in self.assignments():
                if len(f.target.steps) == 1:
                    cached.setdefault(f.target.steps[0].name, f)
            self.__dict__["_assigned"] = cached
        return cached

    def assignments(self) -> Iterator[tuple[Instance, ast.Field]]:
        inst: Instance | None = self
        while inst is not None:
            for f in inst.decl.fields:
                yield inst, f
            inst = inst.base


@dataclass(frozen=True)
class InstanceRef:
    instance: Instance


@dataclass(frozen=True)
class EnumTypeRef:
    decl: ast.EnumDecl


@dataclass(frozen=True)
class MapRef:
    instance: Instance
    field: str


Static = ir.EnumValue | InstanceRef | ir.StaticBool | EnumTypeRef | MapRef
Value = ir.Expr | Static


@dataclass(frozen=True)
class TypeInfo:
    """A resolved field type: a dimension (with display unit), bool, enum, kind or map."""

    tag: str  # dim / bool / enum / kind / map
    dim: Dim | None = None
    unit: str | None = None
    enum: ast.EnumDecl | None = None
    kind: Kind | None = None
    integral: bool = False  # `integer` or `integer tokens`: whole numbers only

    def describe(self) -> str:
        if self.tag == "dim" and self.integral:
            return f"a whole number of `{self.dim}`" if self.dim != DIMENSIONLESS else "a whole number"
        if self.tag == "dim":
            return f"a quantity in `{self.dim}`" if self.dim != DIMENSIONLESS else "a plain number"
        if self.tag == "enum":
            assert self.enum is not None
            return f"one of the `{self.enum.name}` values"
        if self.tag == "kind":
            assert self.kind is not None
            return f"a `{self.kind.name}`"
        return "a true/false value" if self.tag == "bool" else "a map"


#: the type word of a whole-number input: `input batch: integer`, `input kv_block_size: integer tokens`
INTEGER = "integer"


def static_key(value: Value | None) -> str | None:
    """A key equal for equal static values (across elaborations), None for anything else."""
    if isinstance(value, ir.EnumValue):
        return value.id
    if isinstance(value, InstanceRef):
        return f"instance {value.instance.name}"
    if isinstance(value, ir.StaticBool):
        return str(value.value).lower()
    return None


def describe(value: Value | None) -> str:
    if value is None:
        return "nothing (the expression has errors)"
    if isinstance(value, ir.EnumValue):
        return f"the `{value.enum.name}` value `{value.member.name}`"
    if isinstance(value, InstanceRef):
        return f"the `{value.instance.kind.name}` `{value.instance.name}`"
    if isinstance(value, ir.StaticBool):
        return "a true/false value"
    if isinstance(value, EnumTypeRef):
        return f"the enumeration `{value.decl.name}`"
    if isinstance(value, MapRef):
        return f"the map `{value.instance.name}.{value.field}`"
    if value.dim == ir.BOOL:
        return "a comparison"
    return f"a quantity in `{value.dim}`" if value.dim != DIMENSIONLESS else "a plain number"


# ---- the elaborator -----------------------------------------------------------------------


class Elaborator:
    def __init__(self, program: Program, sink: dx.Sink,
                 overrides: dict[tuple[str, str], ast.Expr] | None = None, lean: bool = False) -> None:
        self.program = program
        self.sink = sink
        # lean: only what the summary, the checks and the requirements read (a lever's variant,
        # which the report reads nothing else of), without the findings and levers
        self.lean = lean
        # (instance, field) -> expression: a question's `given`, a scenario, a sweep point.
        # An override replaces the field's definition everywhere, like an assignment would.
        self.overrides = overrides or {}
        self.out = ir.Elaborated()
        self.kinds: dict[str, Kind | None] = {}
        self.instances: dict[str, Instance | None] = {}
        self.done: dict[str, Value | None] = {}
        self.stack: list[tuple[str, Span]] = []
        self._types: dict[int, TypeInfo | None] = {}
        self._variants: dict[Any, Instance] = {}
        self._formula: ast.Expr | None = None  # the formula of the node being elaborated (for `largest`)
        self._varying: dict[tuple[str, str, str, frozenset[str], frozenset[str]], bool] = {}
        self._dispatch: dict[type, Callable[[Any, Instance | None], Value | None]] = {
            ast.Name: self._name, ast.Attribute: self._attribute, ast.Index: self._index,
            ast.Number: self._number, ast.Bool: self._bool, ast.Unary: self._unary,
            ast.BinOp: self._binop, ast.Compare: self._compare, ast.BoolOp: self._boolop,
            ast.Call: self._call, ast.If: self._if, ast.Uncertain: self._range_elsewhere,
            ast.Where: self._where,
        }

    # ---- entry point ----------------------------------------------------------------------
    def run(self) -> ir.Elaborated:
        for stmt in self.program.main.statements:
            if isinstance(stmt, ast.Meta):
                setattr(self.out, stmt.key, stmt.value)
            elif isinstance(stmt, ast.InstanceDecl):
                self._root_instance(stmt)
            elif isinstance(stmt, ast.LetDecl):
                self._let(stmt.name, stmt.name_span)
            elif isinstance(stmt, ast.CheckStmt):
                self._check(stmt)
            elif isinstance(stmt, ast.SummaryStmt):
                self._summary(stmt)
            elif isinstance(stmt, (ast.SolveStmt, ast.AskStmt, ast.ScenarioStmt, ast.CompareStmt,
                                   ast.SweepStmt, ast.SearchStmt)):
                self.out.questions.append(stmt)  # answered by the solve stage
        self._requirements()
        for stmt in self.program.main.statements:  # the plan's own levers, after its kinds'
            if isinstance(stmt, ast.LeverDecl) and not self.lean:
                self._lever(None, stmt)
        self._unused_kinds()
        self._lineage()
        return self.out

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

    def check_abstract(self, kind: Kind) -> None:
        inst = self.abstract_instance(kind)
        for name in kind.fields:
            self.field(inst, name, kind.decl.name_span)
        for req in kind.requires:
            self.expr(req.expr, inst)

    def abstract_instance(self, kind: Kind) -> Instance:
        name = f"<{kind.name}>"
        if self.instances.get(name) is None:
            decl = ast.InstanceDecl(kind.decl.span, kind.name, kind.decl.name_span, name,
                                    kind.decl.name_span, None, None, ())
            self.instances[name] = Instance(name, decl, kind, None, abstract=True)
        inst = self.instances[name]
        assert inst is not None
        return inst

    def _placeholder(self, inst: Instance, spec: FieldSpec, use: Span, text: str) -> Value | None:
        """A value standing for an input an abstract instance does not set."""
        ftype = self.type_of(spec)
        if ftype is None:
            return None
        if ftype.tag == "dim":
            assert ftype.dim is not None
            return ir.Ref(ir.node_id(inst.name, spec.name), ftype.dim, use, text)
        if ftype.tag == "bool":
            return ir.Ref(ir.node_id(inst.name, spec.name), ir.BOOL, use, text)
        if ftype.tag == "enum" and ftype.enum is not None and ftype.enum.members:
            return ir.EnumValue(ftype.enum, ftype.enum.members[0])
        if ftype.tag == "kind" and ftype.kind is not None:
            return InstanceRef(self.abstract_instance(ftype.kind))
        return None

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
            value = _as_bool_expr(self.expr(item, None))
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

    # ---- kinds and instances --------------------------------------------------------------
    def kind(self, name: str, span: Span) -> Kind | None:
        if name in self.kinds:
            return self.kinds[name]
        decl = self.program.names.get(name)
        if not isinstance(decl, ast.KindDecl):
            self.kinds[name] = None
            if decl is None:
                self._unknown(name, span, list(self._kind_names()), "kind")
            else:
                self.sink.add(dx.NOT_A_KIND.at(span, "not a kind", name=name,
                                               secondary=[dx.Label(decl.name_span, "declared here")],
                                               help="an instance starts with the name of its kind"))
            return None
        self.kinds[name] = None  # guards against `kind a: a`
        parent = self.kind(decl.parent, decl.parent_span or decl.name_span) if decl.parent else None
        kind = Kind(name, decl, parent)
        if parent is not None:
            kind.fields.update(parent.fields)
            kind.requires.extend(parent.requires)
            kind.findings.extend(parent.findings)
            kind.levers.extend(parent.levers)
        self._collect_items(kind, decl.items, None)
        self.kinds[name] = kind
        return kind

    def _kind_names(self) -> Iterator[str]:
        return (n for n, d in self.program.names.items() if isinstance(d, ast.KindDecl))

    def _collect_items(self, kind: Kind, items: tuple[ast.KindItem, ...], section: str | None) -> None:
        for item in items:
            if isinstance(item, ast.Section):
                self._collect_items(kind, item.items, item.title)
            elif isinstance(item, ast.RequireDecl):
                kind.requires.append(item)
            elif isinstance(item, ast.FindingDecl):
                kind.findings.append((item, section))
            elif isinstance(item, ast.LeverDecl):
                kind.levers.append(item)
            else:
                previous = kind.fields.get(item.name)
                if previous is not None and previous.owner == kind.name:
                    self.sink.add(dx.DUPLICATE_NAME.at(
                        item.name_span, "declared again here", name=item.name,
                        secondary=[dx.Label(previous.decl.name_span, "first declared here")],
                        help="a kind declares each field once",
                    ))
                    continue
                kind.fields[item.name] = FieldSpec(item.name, item, section, kind.name)

    def instance(self, name: str) -> Instance | None:
        if name in self.instances:
            return self.instances[name]
        self.instances[name] = None
        decl = self.program.names.get(name)
        assert isinstance(decl, ast.InstanceDecl)
        kind = self.kind(decl.kind, decl.kind_span)
        if kind is None:
            return None
        base = None
        if decl.base is not None:
            base = self._base(decl, kind)
            if base is None:
                return None
        inst = Instance(name, decl, kind, base)
        self._check_fields(inst)
        self.instances[name] = inst
        self.out.instances.append(name)
        return inst

    def _base(self, decl: ast.InstanceDecl, kind: Kind) -> Instance | None:
        assert decl.base is not None and decl.base_span is not None
        target = self.program.names.get(decl.base)
        if not isinstance(target, ast.InstanceDecl):
            if target is None:
                self._unknown(decl.base, decl.base_span, [
                    n for n, d in self.program.names.items() if isinstance(d, ast.InstanceDecl)], "instance")
            else:
                self.sink.add(dx.BAD_BASE.at(decl.base_span, "not an instance", name=decl.base,
                                             kind=decl.kind, reason="it is not an instance",
                                             help="the base must be another instance of the same kind"))
            return None
        base = self.instance(decl.base)
        if base is None:
            return None
        if not kind.is_a(base.kind):
            self.sink.add(dx.BAD_BASE.at(
                decl.base_span, f"an instance of `{base.kind.name}`", name=decl.base, kind=kind.name,
                reason=f"it is an instance of `{base.kind.name}`",
                secondary=[dx.Label(target.kind_span, "its kind is declared here")],
                help=f"derive a `{kind.name}` from another `{kind.name}`",
            ))
            return None
        return base

    def _check_fields(self, inst: Instance) -> None:
        for f in inst.decl.fields:
            head = f.target.steps[0]
            spec = inst.kind.fields.get(head.name)
            if spec is None:  # what a plan sets is an input, first: `tp` is tensor_parallel, not tpot
                inputs = [n for n, s in inst.kind.fields.items() if isinstance(s.decl, ast.InputDecl)]
                self._unknown(head.name, head.span, list(inst.kind.fields), "field",
                              owner=f"`{inst.kind.name}`", preferred=inputs)
            elif len(f.target.steps) > 1 and not (len(f.target.steps) == 2 and f.target.steps[1].indexed):
                self.sink.add(dx.UNKNOWN_FIELD.at(
                    f.target.span, "nested assignment", owner=f"`{inst.kind.name}`", name=f.target.dotted,
                    help="set fields of another instance in that instance's own block",
                ))

    # ---- fields and nodes -----------------------------------------------------------------
    def field(self, inst: Instance, name: str, use: Span, text: str | None = None) -> Value | None:
        spec = inst.kind.fields[name]
        ftype = self.type_of(spec)
        if ftype is not None and ftype.tag == "map":
            return MapRef(inst, name)
        if inst.outer is not None:
            if name in inst.bound:
                return self._bound(inst, spec, ftype, use, text or name)
            if not self._varies(inst, name):  # the same in the variant as in the instance it varies
                return self.field(inst.outer, name, use, text)
        node_id = ir.node_id(inst.name, name)
        definition = self._definition(inst, spec)
        if definition is None and inst.abstract:
            return self._placeholder(inst, spec, use, text or name)
        if definition is None:
            if node_id not in self.done:
                self.done[node_id] = None
                decl = spec.decl
                self.sink.add(dx.MISSING_INPUT.at(
                    inst.decl.name_span, f"`{name}` is not set", owner=f"`{inst.kind.name}` `{inst.name}`",
                    name=name, secondary=[dx.Label(decl.name_span, "declared here")],
                    help=f"add `{name} = ...` to the block of `{inst.name}`",
                ))
            return None
        expr, notes, overridden = definition
        meta = _NodeMeta(owner=inst.name, field=name, spec=spec, ftype=ftype, notes=notes,
                         overridden=overridden, decl_span=spec.decl.name_span, type_span=_type_span(spec.decl.type))
        return self._node(node_id, expr, inst, meta, use, text or name)

    # ---- variants ---------------------------------------------------------------------------
    def variant(self, inst: Instance, bound: dict[str, tuple[ir.Expr | None, ast.Expr]], span: Span) -> Instance:
        """The instance `inst` with some fields bound to other values: every field that depends
        on a bound one gets its own node (`chat~1.step_time`); the others are `inst`'s own.
        One variant per distinct binding, named in the order they are first met."""
        key = (inst.name, tuple(sorted((k, v[0]) for k, v in bound.items())), None if all(
            v[0] is not None for v in bound.values()) else span)
        found = self._variants.get(key)
        if found is None:
            # named after the field whose formula makes it: `chat@mixed_step_time`, and for the
            # trial values of a search `chat@batch`; a variant of a variant adds its own field
            user = self.stack[-1][0].rsplit(".", 1)[-1] if self.stack else "where"
            name = f"{inst.name}@{user}"
            if name in self.instances:
                name += f"~{sum(1 for n in self.instances if n.startswith(name))+ 1}"
            found = Instance(name, inst.decl, inst.kind, inst.base,
                             abstract=inst.abstract, outer=inst, bound=dict(bound))
            self._variants[key] = found
            self.instances[found.name] = found
            self.out.variants[found.name] = tuple(bound)
        return found

    def _varies(self, inst: Instance, name: str) -> bool:
        """Whether a field of a variant differs from the instance it varies: its definition
        reads a field the variant binds, directly or through other fields (read from the
        definitions, so a field that does not vary is never elaborated twice)."""
        return self._name_depends(inst, name, frozenset(inst.bound))

    def _name_depends(self, inst: Instance, name: str, on: frozenset[str]) -> bool:
        if name in on:
            return True
        if name not in inst.kind.fields or self._bound_above(inst, name):
            return False  # not a field, or fixed by a variant further out: the same here
        key = (inst.origin.name, inst.kind.name, name, on, self._leaves(inst))
        if key not in self._varying:
            self._varying[key] = False  # a cycle is reported by the instance itself
            definition = self._definition(inst, inst.kind.fields[name])
            self._varying[key] = definition is not None and self._depends(inst, definition[0], on)
        return self._varying[key]

    def _depends(self, inst: Instance, e: Any, on: frozenset[str]) -> bool:
        """Whether an expression written in `inst`'s kind reads any of the fields `on`; a
        `where` or `largest` that rebinds a field hides it from the expression it rebinds it in."""
        if isinstance(e, ast.Name):
            return self._name_depends(inst, e.id, on)
        if isinstance(e, ast.Attribute):
            return self._depends(inst, e.value, on)
        if isinstance(e, ast.Where):
            inner = on - {b.target.steps[0].name for b in e.bindings}
            return (any(self._depends(inst, b.value, on) for b in e.bindings)
                    or (bool(inner) and self._depends(inst, e.value, inner)))
        if isinstance(e, ast.Call) and e.func == "largest" and e.args and isinstance(e.args[0], ast.Name):
            inner = on - {e.args[0].id}
            return (any(self._depends(inst, a, on) for a in e.args[1:3])
                    or (bool(inner) and any(self._depends(inst, a, inner) for a in e.args[3:])))
        if isinstance(e, tuple):
            return any(self._depends(inst, item, on) for item in e)
        if dataclasses.is_dataclass(e) and not isinstance(e, (ast.Number, Span)):
            return any(self._depends(inst, getattr(e, f.name), on) for f in dataclasses.fields(e) if f.name != "span")
        return False

    @staticmethod
    def _bound_above(inst: Instance, name: str) -> bool:
        outer = inst.outer
        while outer is not None:
            if name in outer.bound:
                return True
            outer = outer.outer
        return False

    @staticmethod
    def _leaves(inst: Instance) -> frozenset[str]:
        names: set[str] = set()
        outer = inst.outer
        while outer is not None:
            names.update(outer.bound)
            outer = outer.outer
        return frozenset(names)

    def _bound(self, inst: Instance, spec: FieldSpec, ftype: TypeInfo | None, use: Span, text: str) -> Value | None:
        """A field a variant binds: a node whose formula is the binding, computed in the
        instance the variant varies; the free variable of a `largest` starts at its low end."""
        node_id = ir.node_id(inst.name, spec.name)
        if node_id not in self.done:
            value, written = inst.bound[spec.name]
            assert value is not None, "the free variable is recorded by `largest`"
            meta = _NodeMeta(owner=inst.name, field=spec.name, spec=spec, ftype=ftype, notes=None,
                             overridden=True, decl_span=spec.decl.name_span, type_span=_type_span(spec.decl.type))
            if not self._conforms(value, ftype, written.span, meta):
                self.done[node_id] = None
                return None
            self.done[node_id] = value.dim  # type: ignore[assignment]
            self._record(node_id, value, written, meta)
            self.out.nodes[node_id].is_input = False  # set by the formula that binds it, not an input of the plan
        return self._use(node_id, use, text)

    def _definition(self, inst: Instance, spec: FieldSpec) -> tuple[ast.Expr, ast.Annotations | None, bool] | None:
        override = self.overrides.get((inst.origin.name, spec.name))
        if override is not None:
            return override, None, True
        f = inst.assigned().get(spec.name)
        if f is not None:
            return f.value, f.notes, True
        decl = spec.decl
        if isinstance(decl, ast.DeriveDecl):
            return decl.expr, decl.notes, False
        if decl.default is not None:
            return decl.default, decl.notes, False
        return None

    def _node(self, node_id: str, expr: ast.Expr, scope: Instance | None, meta: _NodeMeta,
              use: Span, text: str) -> Value | None:
        if node_id in self.done:
            return self._use(node_id, use, text)
        if any(n == node_id for n, _ in self.stack):
            self._cycle(node_id, expr.span)
            return None
        self.stack.append((node_id, expr.span))
        self._formula = expr
        interval = None
        if isinstance(expr, ast.Uncertain):
            value, interval = self._uncertain(expr, scope)
        else:
            value = self.expr(expr, scope)
        self.stack.pop()
        if node_id in self.done:  # a cycle through this node was reported meanwhile
            return None
        if value is not None and not self._conforms(value, meta.ftype, expr.span, meta):
            value = None
        self.done[node_id] = value if not isinstance(value, (ir.Lit, ir.Ref, ir.Op)) else value.dim  # type: ignore[assignment]
        if isinstance(value, (ir.Lit, ir.Ref, ir.Op)):
            self._record(node_id, value, expr, meta, interval)
        elif static_key(value) is not None:
            self.out.statics[node_id] = static_key(value)  # type: ignore[assignment]
        return self._use(node_id, use, text)

    def _use(self, node_id: str, use: Span, text: str) -> Value | None:
        done = self.done[node_id]
        if isinstance(done, (Dim, str)):
            return ir.Ref(node_id, done, use, text)
        return done

    def _record(self, node_id: str, value: ir.Expr, expr: ast.Expr, meta: _NodeMeta,
                interval: tuple[Fraction, Fraction] | None = None) -> None:
        notes = meta.notes
        base_notes = meta.spec.decl.notes if meta.spec is not None else None
        source = notes.source if notes and notes.source else None
        if source is None and not meta.overridden and base_notes is not None:
            source = base_notes.source
        description = (base_notes.description if base_notes else None) or (notes.description if notes else None)
        node = ir.Node(
            id=node_id, expr=value, dim=value.dim, is_input=_is_literal(value), span=expr.span,
            decl_span=meta.decl_span, description=description, source=source,
            symbol=base_notes.symbol if base_notes else None,
            section=(meta.spec.section or ("Inputs set from other inputs" if isinstance(meta.spec.decl, ast.InputDecl)
                                           else None)) if meta.spec is not None else None,
            unit=meta.ftype.unit if meta.ftype is not None else None,
            integral=meta.ftype is not None and meta.ftype.integral,
            type_span=meta.type_span,
            owner=meta.owner, field=meta.field, overridden=meta.overridden,
            deps=tuple(ir.refs(value)), interval=interval,
            # a spec the plan gives as a range (`hidden = 8000 .. 9000`) is uncertain: an assumption
            is_definition=interval is None and (meta.definition or (
                meta.spec is not None and (isinstance(meta.spec.decl, ast.DeriveDecl) or meta.spec.decl.spec))),
        )
        self.out.nodes[node_id] = node
        self.out.order.append(node_id)

    def _cycle(self, node_id: str, span: Span) -> None:
        start = next(i for i, (n, _) in enumerate(self.stack) if n == node_id)
        members = self.stack[start:]
        names = " → ".join(f"`{n}`" for n, _ in members) + f" → `{node_id}`"
        field = node_id.rsplit(".", 1)[-1]
        if len(members) == 1 and field in self.program.names:  # `student = student` in a block
            help_text = (f"inside the block, `{field}` is the field itself, which hides the top-level `{field}`; "
                         f"rename the top-level declaration")
        else:
            help_text = "break the cycle: make one of these an input with a value"
        self.sink.add(dx.CYCLE.at(
            members[0][1], f"`{members[0][0]}` is defined here", cycle=names,
            secondary=[dx.Label(s, f"`{n}` depends on it") for n, s in members[1:]],
            help=help_text,
        ))
        for n, _ in members:
            self.done[n] = None

    # ---- types ----------------------------------------------------------------------------
    def type_of(self, spec: FieldSpec) -> TypeInfo | None:
        key = id(spec.decl)
        if key not in self._types:
            t = spec.decl.type
            self._types[key] = self.resolve_type(t) if t is not None else None
        return self._types[key]

    def resolve_type(self, t: ast.TypeRef) -> TypeInfo | None:
        if isinstance(t, ast.BoolType):
            return TypeInfo("bool")
        if isinstance(t, ast.UnitType) and len(t.words) == 1:
            decl = self.program.names.get(t.words[0])
            if isinstance(decl, ast.EnumDecl):
                return TypeInfo("enum", enum=decl)
            if isinstance(decl, ast.KindDecl):
                return TypeInfo("kind", kind=self.kind(decl.name, t.span))
        if isinstance(t, ast.MapType):
            key = self.program.names.get(t.key)
            if not isinstance(key, ast.EnumDecl):
                self._unknown(t.key, t.key_span, [n for n, d in self.program.names.items()
                                                  if isinstance(d, ast.EnumDecl)], "enumeration")
                return None
            unit = self._unit(t.words, t.words_span)
            return TypeInfo("map", dim=unit[1], unit=unit[0], enum=key) if unit else None
        assert isinstance(t, ast.UnitType)
        if t.words[0] == INTEGER:  # `integer`, `integer tokens`: a count that takes whole numbers only
            if len(t.words) == 1:
                return TypeInfo("dim", dim=DIMENSIONLESS, integral=True)
            unit = self._unit(t.words[1:], t.span)
            return TypeInfo("dim", dim=unit[1], unit=unit[0], integral=True) if unit else None
        unit = self._unit(t.words, t.span)
        return TypeInfo("dim", dim=unit[1], unit=unit[0]) if unit else None

    def _unit(self, words: tuple[str, ...], span: Span) -> tuple[str | None, Dim] | None:
        try:
            scale, dim = parse_unit(words)
        except UnitError as exc:
            self._unknown_unit(exc, span)
            return None
        return (None if scale == 1 else " ".join(words)), dim

    def _conforms(self, value: Value, ftype: TypeInfo | None, span: Span, meta: _NodeMeta) -> bool:
        if ftype is None:
            return True
        ok = self._matches(value, ftype)
        if not ok:
            declared = meta.type_span or span
            if ftype.tag in ("dim", "map") and isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and value.dim != ir.BOOL:
                self.sink.add(dx.DIMENSION_MISMATCH.at(
                    span, f"this is `{value.dim}`", what=f"`{meta.field}` must be in `{ftype.dim}`",
                    left=f"`{ftype.dim}`", right=f"`{value.dim}`",
                    secondary=[dx.Label(declared, f"declared as `{ftype.dim}`")],
                    help=_unit_help(ftype.dim, value.dim),
                ))
            else:
                self.sink.add(dx.WRONG_TYPE.at(
                    span, "wrong type", expected=ftype.describe(), found=describe(value),
                    secondary=[dx.Label(declared, "declared here")],
                    help=f"`{meta.field}` takes {ftype.describe()}",
                ))
        return ok

    @staticmethod
    def _matches(value: Value, ftype: TypeInfo) -> bool:
        if ftype.tag in ("dim", "map"):
            return isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and value.dim == ftype.dim
        if ftype.tag == "bool":
            return isinstance(value, ir.StaticBool) or (
                isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and value.dim == ir.BOOL)
        if ftype.tag == "enum":
            return isinstance(value, ir.EnumValue) and value.enum is ftype.enum
        return isinstance(value, InstanceRef) and ftype.kind is not None and value.instance.kind.is_a(ftype.kind)

    # ---- lets, requirements ---------------------------------------------------------------
    def _let(self, name: str, use: Span) -> Value | None:
        decl = self.program.names[name]
        assert isinstance(decl, ast.LetDecl)
        ftype = self.resolve_type(decl.type) if decl.type is not None else None
        meta = _NodeMeta(owner="", field=name, spec=None, ftype=ftype, notes=decl.notes,
                         overridden=True, decl_span=decl.name_span, type_span=_type_span(decl.type))
        return self._node(name, decl.expr, None, meta, use, name)

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

    def _finding(self, inst: Instance, decl: ast.FindingDecl, section: str | None) -> None:
        """A kind's `finding`, for one instance: its condition a verdict, each hole a quantity."""
        cond = self._verdict(decl.expr, inst, "a finding is stated when its condition holds")
        if cond is True:
            cond = ir.Lit(Fraction(1), ir.BOOL, decl.expr.span, "true")
        parts = self._holes(decl.parts, inst)
        if cond is not None and cond is not False and parts is not None:
            self.out.findings.append(ir.Finding(inst.name, cond, parts, decl.span, section or ""))

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
        queue, seen = ir.refs(value), set()
        found: list[Span] = []
        while queue:
            ref = queue.pop(0)
            node = self.out.nodes.get(ref)
            if node is None or ref in seen:
                continue
            seen.add(ref)
            if node.overridden and node.is_input:
                if not node.span.file.is_stdlib:
                    return node.span
                found.append(node.span)
            queue.extend(node.deps)
        # no input of the user's own: their instance, else the catalog input the clause reads
        return found[0] if found and inst.decl.name_span.file.is_stdlib else inst.decl.name_span

    # ---- expressions ----------------------------------------------------------------------
    def expr(self, e: ast.Expr, scope: Instance | None) -> Value | None:
        return self._dispatch[type(e)](e, scope)

    def _name(self, e: ast.Name, scope: Instance | None) -> Value | None:
        if scope is not None and e.id in scope.kind.fields:
            return self.field(scope, e.id, e.span, e.id)
        decl = self.program.names.get(e.id)
        if isinstance(decl, ast.InstanceDecl):
            inst = self.instance(e.id)
            return InstanceRef(inst) if inst is not None else None
        if isinstance(decl, ast.LetDecl):
            return self._let(e.id, e.span)
        if isinstance(decl, ast.EnumDecl):
            return EnumTypeRef(decl)
        if isinstance(decl, ast.KindDecl):
            self.sink.add(dx.WRONG_TYPE.at(e.span, "a kind", expected="a value", found=f"the kind `{e.id}`",
                                           help=f"declare an instance: `{e.id} my_{e.id} {{ ... }}`"))
            return None
        members = self.program.members.get(e.id, [])
        if len(members) == 1:
            return ir.EnumValue(*members[0])
        if len(members) > 1:
            self.sink.add(dx.UNKNOWN_NAME.at(
                e.span, "ambiguous", name=e.id,
                secondary=[dx.Label(m.span, f"a `{en.name}` value") for en, m in members],
                help="qualify it: " + " or ".join(f"`{en.name}.{e.id}`" for en, _ in members),
            ))
            return None
        candidates = list(self.program.names) + list(self.program.members)
        if scope is not None:
            candidates += list(scope.kind.fields)
        self._unknown(e.id, e.span, candidates, "name")
        return None

    def _attribute(self, e: ast.Attribute, scope: Instance | None) -> Value | None:
        base = self.expr(e.value, scope)
        if base is None:
            return None
        text = e.span.text
        if isinstance(base, InstanceRef):
            inst = base.instance
            if e.attr in inst.kind.fields:
                return self.field(inst, e.attr, e.span, text)
            self._unknown(e.attr, e.attr_span, list(inst.kind.fields), "field",
                          owner=f"`{inst.kind.name}` `{inst.name}`")
            return None
        if isinstance(base, EnumTypeRef):
            member = next((m for m in base.decl.members if m.name == e.attr), None)
            if member is None:
                self._unknown(e.attr, e.attr_span, [m.name for m in base.decl.members], "field",
                              owner=f"enumeration `{base.decl.name}`")
                return None
            return ir.EnumValue(base.decl, member)
        if isinstance(base, ir.EnumValue):
            attr = next((a for a in base.member.attrs if a.name == e.attr), None)
            if attr is None:
                names = sorted({a.name for m in base.enum.members for a in m.attrs})
                self._unknown(e.attr, e.attr_span, names, "field", owner=f"`{base.id}`")
                return None
            meta = _NodeMeta(owner=base.id, field=e.attr, spec=None, ftype=None,
                             notes=base.member.notes,
                             overridden=False, decl_span=attr.name_span, definition=True)
            return self._node(f"{base.id}.{e.attr}", attr.value, None, meta, e.span, text)
        self.sink.add(dx.WRONG_TYPE.at(e.value.span, "has no fields", expected="an instance or enum value",
                                       found=describe(base), help=f"`.{e.attr}` reads a field of an instance"))
        return None

    def _index(self, e: ast.Index, scope: Instance | None) -> Value | None:
        base = self.expr(e.value, scope)
        key = self.expr(e.key, scope)
        if base is None or key is None:
            return None
        if not isinstance(base, MapRef):
            self.sink.add(dx.WRONG_TYPE.at(e.value.span, "not a map", expected="a map", found=describe(base),
                                           help="only fields declared `map[enum] unit` can be indexed"))
            return None
        inst, name = base.instance, base.field
        spec = inst.kind.fields[name]
        ftype = self.type_of(spec)
        assert ftype is not None and ftype.enum is not None
        if not isinstance(key, ir.EnumValue) or key.enum is not ftype.enum:
            self.sink.add(dx.WRONG_TYPE.at(e.key.span, "wrong key", expected=f"a `{ftype.enum.name}` value",
                                           found=describe(key), help=f"index `{name}` by a `{ftype.enum.name}`"))
            return None
        node_id = ir.node_id(inst.name, f"{name}[{key.member.name}]")
        entry = next((f for _, f in inst.assignments() if len(f.target.steps) == 2
                      and f.target.steps[0].name == name and f.target.steps[1].name == key.member.name), None)
        override = self.overrides.get((inst.name, f"{name}[{key.member.name}]"))
        if override is not None:
            entry = ast.Field(override.span, ast.Path(override.span, ()), override, ast.Annotations(override.span))
        if entry is None and inst.abstract:
            assert ftype.dim is not None
            return ir.Ref(node_id, ftype.dim, e.span, e.span.text)
        if entry is None:
            if node_id not in self.done:
                self.done[node_id] = None
                present = list(dict.fromkeys(f.target.steps[1].name for _, f in inst.assignments()
                                             if len(f.target.steps) == 2 and f.target.steps[0].name == name))
                has = f"`{inst.name}` has entries for {', '.join(f'`{k}`' for k in present)}; " if present else ""
                secondary = [dx.Label(inst.decl.name_span, f"`{inst.name}` is declared here")]
                chosen = self._chosen_by(e.key, scope)
                if chosen is not None:  # the user's line that picked the key, when a kind's formula reads it
                    secondary.insert(0, dx.Label(chosen.span, f"`{chosen.target.dotted}` leads to `{key.member.name}`"))
                self.sink.add(dx.MISSING_KEY.at(
                    e.span, "no such entry", owner=f"{inst.name}.{name}", key=key.member.name,
                    secondary=secondary,
                    help=f"{has}choose a `{ftype.enum.name}` it has, or add `{name}[{key.member.name}] = ...` to `{inst.name}`",
                ))
            return None
        meta = _NodeMeta(owner=inst.name, field=f"{name}[{key.member.name}]", spec=spec, ftype=ftype,
                         notes=entry.notes, overridden=True, decl_span=spec.decl.name_span,
                         type_span=_type_span(spec.decl.type))
        return self._node(node_id, entry.value, inst, meta, e.span, e.span.text)

    def _uncertain(self, e: ast.Uncertain, scope: Instance | None) -> tuple[Value | None, tuple[Fraction, Fraction] | None]:
        """`low .. high`: the midpoint, and the range the report carries through to the results."""
        ends = [self.expr(end, scope) for end in (e.low, e.high)]
        if any(end is None for end in ends):
            return None, None
        low, high = ends
        example = "like `mfu = 0.4 .. 0.6` or `latency = 30 ms .. 50 ms`"
        if not (isinstance(low, ir.Lit) and isinstance(high, ir.Lit) and isinstance(low.dim, Dim)
                and all(isinstance(end, ast.Number) for end in (e.low, e.high))):
            self.sink.add(dx.BAD_RANGE.at(e.span, "not two numbers", message="the ends of a range must be numbers",
                                          help=f"write both ends as numbers with their units, {example}"))
            return None, None
        if low.dim != high.dim:
            self.sink.add(dx.DIMENSION_MISMATCH.at(
                e.span, "the two ends differ", what="the ends of a range", left=f"`{low.dim}`", right=f"`{high.dim}`",
                secondary=[dx.Label(e.low.span, f"this is `{low.dim}`"), dx.Label(e.high.span, f"this is `{high.dim}`")],
                help=f"write both ends in the same dimension, {example}"))
            return None, None
        if not low.value < high.value:
            self.sink.add(dx.BAD_RANGE.at(e.span, "empty range",
                                          message=f"the low end `{e.low.span.text}` is not below the high end `{e.high.span.text}`",
                                          help=f"write the smaller value first, {example}"))
            return None, None
        middle = (low.value + high.value) / 2
        assert isinstance(e.low, ast.Number) and isinstance(e.high, ast.Number)
        text = _midpoint_text(e.low, e.high, middle, low.dim)
        return ir.Lit(middle, low.dim, e.span, text), (low.value, high.value)

    def _range_elsewhere(self, e: ast.Uncertain, scope: Instance | None) -> Value | None:
        self.sink.add(dx.BAD_RANGE.at(e.span, "a range inside an expression",
                                      message="a range `low .. high` can only be an input's whole value",
                                      help="give the input the range, and use the input in the expression"))
        return None

    @staticmethod
    def _chosen_by(key: ast.Expr, scope: Instance | None) -> ast.Field | None:
        """The assignment of the instance's own field that a key expression starts from
        (`weights.compute` → `weights = fp8`), if the instance's block set it."""
        root = key
        while isinstance(root, ast.Attribute):
            root = root.value
        if scope is None or not isinstance(root, ast.Name):
            return None
        return scope.assigned().get(root.id)

    def _number(self, e: ast.Number, scope: Instance | None) -> Value | None:
        try:
            scale, dim = parse_unit(e.units)
        except UnitError as exc:
            self._unknown_unit(exc, _word_span(e, exc.word))
            return None
        value = e.value * scale
        if abs(value) > FLOAT_MAX:
            self.sink.add(dx.OVERFLOW.at(e.span, "too large", name=e.text, detail="beyond ±1.8e308",
                                         help="check the exponent: values are kept in base units and must stay within ±1.8e308"))
            return None
        return ir.Lit(value, dim, e.span, e.span.text)

    def _bool(self, e: ast.Bool, scope: Instance | None) -> Value | None:
        return ir.StaticBool(e.value, e.span)

    def _unary(self, e: ast.Unary, scope: Instance | None) -> Value | None:
        operand = self.expr(e.operand, scope)
        if operand is None:
            return None
        if e.op == "not":
            if isinstance(operand, ir.StaticBool):
                return ir.StaticBool(not operand.value, e.span)
            if self._need_bool(operand, e.operand.span):
                return ir.Op("not", (operand,), ir.BOOL, e.span)  # type: ignore[arg-type]
            return None
        if not self._need_number(operand, e.operand.span):
            return None
        assert isinstance(operand, (ir.Lit, ir.Ref, ir.Op))
        if isinstance(operand, ir.Lit):
            return ir.Lit(-operand.value, operand.dim, e.span, e.span.text)
        return ir.Op("neg", (operand,), operand.dim, e.span)

    def _binop(self, e: ast.BinOp, scope: Instance | None) -> Value | None:
        left, right = self.expr(e.left, scope), self.expr(e.right, scope)
        if left is None or right is None:
            return None
        if not (self._need_number(left, e.left.span) and self._need_number(right, e.right.span)):
            return None
        assert isinstance(left, (ir.Lit, ir.Ref, ir.Op)) and isinstance(right, (ir.Lit, ir.Ref, ir.Op))
        ld, rd = left.dim, right.dim
        assert isinstance(ld, Dim) and isinstance(rd, Dim)
        if e.op in "+-":
            if ld != rd:
                self._mismatch(e, left, right, "add" if e.op == "+" else "subtract")
                return None
            # A term that a static condition turned off (`+ (if qkv_bias then … else 0)` for a
            # model without biases) is left out, so the formula does not read `… + 0`.
            if _vanished(e.right, right):
                return left
            if e.op == "+" and _vanished(e.left, left):
                return right
            return ir.Op(e.op, (left, right), ld, e.span)
        if e.op == "*":
            return ir.Op("*", (left, right), ld * rd, e.span)
        if e.op == "/":
            return ir.Op("/", (left, right), ld / rd, e.span)
        return self._power(e, left, right, ld, rd)

    def _power(self, e: ast.BinOp, left: ir.Expr, right: ir.Expr, ld: Dim, rd: Dim) -> Value | None:
        if rd != DIMENSIONLESS:
            self.sink.add(dx.DIMENSION_MISMATCH.at(
                e.right.span, f"this is `{rd}`", what="an exponent must be a plain number",
                left="a plain number", right=f"`{rd}`", help="divide the exponent by its unit"))
            return None
        if ld == DIMENSIONLESS:
            return ir.Op("^", (left, right), ld, e.span)
        if not isinstance(right, ir.Lit):
            self.sink.add(dx.DIMENSION_MISMATCH.at(
                e.right.span, "not a constant", what=f"a quantity in `{ld}` can only be raised to a constant power",
                left="a constant exponent", right="a computed one", help="make the base a plain number first"))
            return None
        return ir.Op("^", (left, right), ld ** right.value, e.span)

    def _mismatch(self, e: ast.BinOp | ast.Compare, left: ir.Expr, right: ir.Expr, verb: str) -> None:
        self.sink.add(dx.DIMENSION_MISMATCH.at(
            e.op_span, f"cannot {verb} these", what=f"cannot {verb} `{left.dim}` and `{right.dim}`",
            left=f"left side in `{left.dim}`", right=f"right side in `{right.dim}`",
            secondary=[dx.Label(e.left.span, f"this is `{left.dim}`"), dx.Label(e.right.span, f"this is `{right.dim}`")],
            help=_unit_help(left.dim, right.dim),
        ))

    def _compare(self, e: ast.Compare, scope: Instance | None) -> Value | None:
        left, right = self.expr(e.left, scope), self.expr(e.right, scope)
        if left is None or right is None:
            return None
        if isinstance(left, ir.EnumValue) and isinstance(right, ir.EnumValue) and e.op in ("==", "!="):
            return ir.StaticBool((left == right) == (e.op == "=="), e.span)
        if not (self._need_number(left, e.left.span) and self._need_number(right, e.right.span)):
            return None
        assert isinstance(left, (ir.Lit, ir.Ref, ir.Op)) and isinstance(right, (ir.Lit, ir.Ref, ir.Op))
        if left.dim != right.dim:
            self._mismatch(e, left, right, "compare")
            return None
        return ir.Op(e.op, (left, right), ir.BOOL, e.span)

    def _boolop(self, e: ast.BoolOp, scope: Instance | None) -> Value | None:
        left, right = self.expr(e.left, scope), self.expr(e.right, scope)
        if left is None or right is None:
            return None
        if isinstance(left, ir.StaticBool) and isinstance(right, ir.StaticBool):
            value = (left.value and right.value) if e.op == "and" else (left.value or right.value)
            return ir.StaticBool(value, e.span)
        args = [_as_bool_expr(v) for v in (left, right)]
        if not (self._need_bool(args[0], e.left.span) and self._need_bool(args[1], e.right.span)):
            return None
        return ir.Op(e.op, tuple(args), ir.BOOL, e.span)  # type: ignore[arg-type]

    def _where(self, e: ast.Where, scope: Instance | None) -> Value | None:
        """`value where (a = x, ...)`: `value` in the variant of the current instance that binds
        `a` to `x` (computed in the current instance)."""
        if scope is None:
            self.sink.add(dx.WRONG_TYPE.at(e.span, "outside an instance", expected="a formula of a kind or an instance",
                                           found="`where` at the top level",
                                           help="write `where` in a kind's formula or an instance's field, where its names are fields"))
            return None
        bound: dict[str, tuple[ir.Expr | None, ast.Expr]] = {}
        for b in e.bindings:
            name = b.target.steps[0].name
            if len(b.target.steps) > 1 or name not in scope.kind.fields:
                self._unknown(b.target.dotted, b.target.span, list(scope.kind.fields), "field",
                              owner=f"`{scope.kind.name}`")
                return None
            value = self.expr(b.value, scope)
            if value is None:
                return None
            if isinstance(value, ir.StaticBool):  # `flash_attention = false`: a verdict like any other
                value = ir.Lit(Fraction(int(value.value)), ir.BOOL, value.span, str(value.value).lower())
            if not isinstance(value, (ir.Lit, ir.Ref, ir.Op)):
                self.sink.add(dx.WRONG_TYPE.at(b.value.span, "not a quantity", expected="a quantity or a verdict",
                                               found=describe(value), help="`where` binds quantities; compare enum or instance choices with `compare`"))
                return None
            bound[name] = (value, b.value)
        return self.expr(e.value, self.variant(scope, bound, e.span))

    def _largest(self, e: ast.Call, scope: Instance | None) -> Value | None:
        """`largest(x, low, high, condition[, step])`: the largest `x` = low + k·step (step 1: whole
        values) up to `high` at which `condition` holds, `condition` read in the variant of the
        instance in which `x` is free."""
        def bad(span: Span, message: str, help: str) -> None:
            self.sink.add(dx.BAD_CALL.at(span, "bad `largest`", message=message, help=help))
        if len(e.args) not in (4, 5):
            bad(e.span, f"`largest` takes 4 or 5 arguments, found {len(e.args)}",
                "call it as `largest(batch, 1, max_num_seqs, tpot <= tpot_slo)`, with a step as a fifth argument for other than whole values")
            return None
        var = e.args[0]
        if scope is None or not isinstance(var, ast.Name) or var.id not in scope.kind.fields:
            bad(var.span, "the first argument of `largest` must be a field of the instance it is written in",
                "name the field the search varies, such as `batch`")
            return None
        if self._formula is not e:
            bad(e.span, "`largest(...)` must be the whole formula of a field",
                "give the search its own field and use that field in the larger formula")
            return None
        spec = scope.kind.fields[var.id]
        ftype = self.type_of(spec)
        bounds = [self.expr(a, scope) for a in (e.args[1], e.args[2], *e.args[4:])]
        if ftype is None or ftype.tag != "dim" or any(b is None for b in bounds):
            if ftype is not None and ftype.tag != "dim":
                bad(var.span, f"`{var.id}` is {ftype.describe()}, not a quantity", "search a counted quantity such as `batch`")
            return None
        for bound, arg in zip(bounds, (e.args[1], e.args[2], *e.args[4:])):
            if not isinstance(bound, (ir.Lit, ir.Ref, ir.Op)) or bound.dim != ftype.dim:
                found = describe(bound) if bound is not None else "nothing"
                self.sink.add(dx.WRONG_TYPE.at(arg.span, "not in the unit of the field", expected=f"a quantity like `{var.id}`",
                                               found=found, help=f"the ends of the search are values of `{var.id}`"))
                return None
        low, high = bounds[:2]
        step = bounds[2] if len(bounds) > 2 else ir.Lit(Fraction(1), ftype.dim, e.span, "1")  # type: ignore[arg-type]
        assert isinstance(low, (ir.Lit, ir.Ref, ir.Op)) and isinstance(high, (ir.Lit, ir.Ref, ir.Op))
        trial = self.variant(scope, {var.id: (None, var)}, e.span)
        node_id = ir.node_id(trial.name, var.id)
        if node_id not in self.done:
            self.done[node_id] = ftype.dim  # type: ignore[assignment]
            meta = _NodeMeta(owner=trial.name, field=var.id, spec=spec, ftype=ftype, notes=None,
                             overridden=True, decl_span=spec.decl.name_span, type_span=_type_span(spec.decl.type))
            self._record(node_id, low, e.args[1], meta)
            self.out.nodes[node_id].is_input = False
        cond = self.expr(e.args[3], trial)
        if cond is None or not self._need_bool(cond, e.args[3].span):
            return None
        cond = _as_bool_expr(cond)
        assert isinstance(cond, (ir.Lit, ir.Ref, ir.Op))
        free = ir.Ref(node_id, ftype.dim, var.span, var.id)  # type: ignore[arg-type]
        return ir.Op("largest", (free, low, high, cond, step), ftype.dim, e.span)  # type: ignore[arg-type]

    def _call(self, e: ast.Call, scope: Instance | None) -> Value | None:
        if e.func == "largest":
            return self._largest(e, scope)
        function = FUNCTIONS.get(e.func)
        if function is None:
            close = difflib.get_close_matches(e.func, FUNCTIONS, n=1)
            self.sink.add(dx.BAD_CALL.at(
                e.func_span, "unknown function", message=f"unknown function `{e.func}`",
                help=f"did you mean `{close[0]}`?" if close else "builtins: " + ", ".join(f"`{b}`" for b in FUNCTIONS)))
            return None
        arity = function.arity
        if not arity[0] <= len(e.args) <= arity[1]:
            want = str(arity[0]) if arity[0] == arity[1] else f"at least {arity[0]}"
            self.sink.add(dx.BAD_CALL.at(e.span, "wrong number of arguments",
                                         message=f"`{e.func}` takes {want} argument(s), found {len(e.args)}",
                                         help=f"call it as `{e.func}(...)` with {want}"))
            return None
        args = [self.expr(a, scope) for a in e.args]
        if any(a is None for a in args):
            return None
        if not all(self._need_number(a, s.span) for a, s in zip(args, e.args)):
            return None
        nums: list[ir.Expr] = [a for a in args if isinstance(a, (ir.Lit, ir.Ref, ir.Op))]
        return self._call_dim(e, nums)

    def _call_dim(self, e: ast.Call, args: list[ir.Expr]) -> Value | None:
        """A call's unit by its function's dimension rule (`builtins.FUNCTIONS`)."""
        first = args[0].dim
        assert isinstance(first, Dim)
        rule = FUNCTIONS[e.func].dims
        if rule == "same":
            for a, node in zip(args[1:], e.args[1:]):
                if a.dim != first:
                    self.sink.add(dx.DIMENSION_MISMATCH.at(
                        node.span, f"this is `{a.dim}`", what=f"`{e.func}` needs arguments of one unit",
                        left=f"`{first}`", right=f"`{a.dim}`",
                        secondary=[dx.Label(e.args[0].span, f"this is `{first}`")], help=_unit_help(first, a.dim)))
                    return None
            return ir.Op(e.func, tuple(args), first, e.span)
        for arg, node in zip(args, e.args):
            if rule == "plain" and arg.dim != DIMENSIONLESS:
                self.sink.add(dx.DIMENSION_MISMATCH.at(
                    node.span, f"this is `{arg.dim}`", what=f"`{e.func}` needs plain numbers",
                    left="a plain number", right=f"`{arg.dim}`", help="divide by a reference quantity first"))
                return None
        dim = first ** Fraction(1, 2) if rule == "sqrt" else first
        return ir.Op(e.func, tuple(args), dim, e.span)

    def _if(self, e: ast.If, scope: Instance | None) -> Value | None:
        cond = self.expr(e.cond, scope)
        if cond is None:
            return None
        if isinstance(cond, ir.StaticBool):
            return self.expr(e.then if cond.value else e.orelse, scope)
        if not self._need_bool(cond, e.cond.span):
            return None
        then, orelse = self.expr(e.then, scope), self.expr(e.orelse, scope)
        if then is None or orelse is None:
            return None
        if not (self._need_number(then, e.then.span) and self._need_number(orelse, e.orelse.span)):
            return None
        assert isinstance(then, (ir.Lit, ir.Ref, ir.Op)) and isinstance(orelse, (ir.Lit, ir.Ref, ir.Op))
        if then.dim != orelse.dim:
            self.sink.add(dx.DIMENSION_MISMATCH.at(
                e.orelse.span, f"this is `{orelse.dim}`", what="both branches of `if` need one unit",
                left=f"`{then.dim}`", right=f"`{orelse.dim}`",
                secondary=[dx.Label(e.then.span, f"this is `{then.dim}`")], help=_unit_help(then.dim, orelse.dim)))
            return None
        return ir.Op("if", (cond, then, orelse), then.dim, e.span)  # type: ignore[arg-type]

    # ---- shared checks and messages -------------------------------------------------------
    def _need_number(self, value: Value | None, span: Span) -> bool:
        if isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and value.dim != ir.BOOL:
            return True
        self.sink.add(dx.WRONG_TYPE.at(span, "not a number", expected="a number", found=describe(value),
                                       help="arithmetic works on quantities; compare enum values with `==`"))
        return False

    def _need_bool(self, value: Value | None, span: Span) -> bool:
        if isinstance(value, (ir.Lit, ir.Ref, ir.Op)) and value.dim == ir.BOOL:
            return True
        self.sink.add(dx.WRONG_TYPE.at(span, "not a condition", expected="a comparison", found=describe(value),
                                       help="write a comparison such as `batch <= 64`"))
        return False

    def _unknown(self, name: str, span: Span, candidates: list[str], what: str, owner: str = "",
                 preferred: list[str] | None = None) -> None:
        close = suggestion(name, candidates, preferred or [])
        help_ = f"did you mean `{close}`?" if close else (
            f"known {what}s: " + ", ".join(f"`{c}`" for c in sorted(set(candidates))[:10]) if candidates
            else f"declare the {what} first")
        if what == "field":
            self.sink.add(dx.UNKNOWN_FIELD.at(span, "unknown field", owner=owner, name=name, help=help_))
        else:
            self.sink.add(dx.UNKNOWN_NAME.at(span, f"not a declared {what}", name=name, help=help_))

    def _unknown_unit(self, exc: UnitError, span: Span) -> None:
        word = exc.factor
        if exc.reason.startswith("exponent too large"):  # `B^100`: a unit, but a power beyond the table's
            self.sink.add(dx.UNKNOWN_UNIT.at(
                span, "exponent too large", unit=word,
                help="a unit's exponent is at most 12 in magnitude (`tokens^2`, `s^-1`); "
                     "write a larger power as a number: `2 ^ 100`"))
            return
        if exc.reason == "malformed unit":
            self.sink.add(dx.UNKNOWN_UNIT.at(span, "malformed unit", unit=word,
                                             help="write unit factors joined by `*` or `/` without spaces: `TB/s`"))
            return
        if word in self._declared_words():
            hint = (f"`{word}` is a declared name, but a word right after a number is read as its unit; "
                    "write `*` between them, or start a new line if a statement ends there")
        elif exc.suggestion:
            hint = "did you mean " + " or ".join(f"`{s}`" for s in exc.suggestion.split(" or ")) + "?"
        elif word and word[0].islower() and word.isidentifier():
            hint = "a word after a number is read as its unit; is a newline missing before it?"
        else:
            hint = "units: see docs/language.md, section Quantities and units"
        self.sink.add(dx.UNKNOWN_UNIT.at(span, "not a unit", unit=word, help=hint))

    def _declared_words(self) -> set[str]:
        words = set(self.program.names) | set(self.program.members)
        for decl in self.program.names.values():
            if isinstance(decl, ast.KindDecl):
                words |= {item.name for item in _kind_fields(decl.items)}
        return words


@dataclass(frozen=True)
class _NodeMeta:
    owner: str
    field: str
    spec: FieldSpec | None
    ftype: TypeInfo | None
    notes: ast.Annotations | None
    overridden: bool
    decl_span: Span
    type_span: Span | None = None
    definition: bool = False  # an enumeration member's attribute: a definition whatever its kind


def _midpoint_text(low: ast.Number, high: ast.Number, middle: Fraction, dim: Dim) -> str:
    """The midpoint of `low .. high` as the plan would write it (`0.5`, `40 ms`); in the unit the
    report would choose when the ends are written in different units, or as money."""
    if low.units == high.units and not low.text.startswith("$"):
        number = format_number(float((low.value + high.value) / 2), 6).replace(",", "")
        return f"{number} {' '.join(low.units)}".strip()
    return format_quantity(float(middle), dim)


def _kind_fields(items: tuple[ast.KindItem, ...]) -> Iterator[ast.InputDecl | ast.DeriveDecl]:
    for item in items:
        if isinstance(item, ast.Section):
            yield from _kind_fields(item.items)
        elif isinstance(item, (ast.InputDecl, ast.DeriveDecl)):
            yield item


def _type_span(t: ast.TypeRef | None) -> Span | None:
    if isinstance(t, ast.MapType):
        return t.words_span
    return t.span if t is not None else None


def _word_span(e: ast.Number, word: str) -> Span:
    """The span of one unit word of a literal (the whole literal if it cannot be found)."""
    literal = e.span.text
    at = literal.find(word, len(e.text))
    if at < 0 or word == "$":
        return e.unit_span or e.span
    return Span(e.span.file, e.span.start + at, e.span.start + at + len(word))


def _as_bool_expr(value: Value | None) -> Value | None:
    if isinstance(value, ir.StaticBool):
        return ir.Lit(Fraction(int(value.value)), ir.BOOL, value.span, str(value.value).lower())
    return value


def _is_literal(value: ir.Expr) -> bool:
    return isinstance(value, ir.Lit)



def suggestion(name: str, candidates: list[str], preferred: list[str]) -> str | None:
    """The candidate a misspelt or abbreviated `name` most likely means, the preferred ones
    (a kind's inputs, which a plan sets) before the others, trying in turn: a candidate whose
    words' initials spell it (`tp` → `tensor_parallel`); a close spelling (difflib, ratio ≥ 0.8:
    `layer` → `layers`); a candidate that is one of its words (`kv_cache` → `kv`); one that shares
    most of its words; a looser spelling (ratio ≥ 0.6). None when nothing is close."""
    words = [w for w in name.lower().split("_") if w]
    groups = [sorted(set(preferred)), sorted(set(candidates) - set(preferred))]

    def initials(c: str) -> str:
        return "".join(w[0] for w in c.split("_") if w)

    def spelt(group: list[str], cutoff: float) -> str | None:
        return next(iter(difflib.get_close_matches(name, group, n=1, cutoff=cutoff)), None)

    rules: list[Callable[[list[str]], str | None]] = [
        lambda group: min((c for c in group if "_" not in name and len(name) >= 2 and "_" in c and initials(c) == name),
                          key=len, default=None),
        lambda group: spelt(group, 0.8),
        lambda group: min((c for c in group if len(words) > 1 and c in words), key=len, default=None),
        lambda group: min((c for c in group if len(words) > 1 and 2 * sum(w in c.split("_") for w in words) > len(words)),
                          key=len, default=None),
        lambda group: spelt(group, 0.6),
    ]
    for rule in rules:
        for group in groups:
            found = rule(group)
            if found is not None:
                return found
    return None


def _unit_help(want: Dim | str | None, got: Dim | str) -> str:
    if isinstance(want, Dim) and isinstance(got, Dim):
        ratio = want / got
        if ratio != DIMENSIONLESS:
            return f"the two sides differ by `{ratio}`; multiply the right side by a quantity in `{ratio}`"
    return "make both sides the same kind of quantity"


def elaborate(program: Program, sink: dx.Sink,
              overrides: dict[tuple[str, str], ast.Expr] | None = None, lean: bool = False) -> ir.Elaborated:
    """The plan as written, or a variant of it: each override `(instance, field) -> expression`
    (a question's `given`, a scenario's assignment, a sweep's point) replaces that field's
    definition everywhere, as an assignment in the plan would; `lean` builds only what the
    summary, the checks and the requirements read."""
    return Elaborator(program, sink, overrides, lean).run()


def elaborate_expr(program: Program, elaborated: ir.Elaborated, e: ast.Expr, sink: dx.Sink) -> Value | None:
    """An expression a question writes (`chat.ttft_p99 <= 500 ms`, `fp8`), elaborated against a
    plan already elaborated (the baseline or a variant): its names resolve to that plan's nodes
    as references, and its problems go to `sink`."""
    elab = Elaborator(program, sink)
    elab.out = elaborated
    elab.done = {n: node.dim for n, node in elaborated.nodes.items()}  # type: ignore[misc]
    return elab.expr(e, None)


def _vanished(node: ast.Expr, value: ir.Expr) -> bool:
    """A conditional whose static condition chose a literal zero."""
    return isinstance(node, ast.If) and isinstance(value, ir.Lit) and value.value == 0
