"""The declarations part of the elaborator: kinds and instances, each field's definition and
the node it becomes, variants (`where`, `largest`), declared types and units, and lets.

Contract: `Declarations` holds the elaboration's state (the program, the sink, the overrides,
the graph being built) and resolves declarations; it elaborates the expressions it meets
through `expr`, which `expressions.Expressions` defines. Only `elaborate.Elaborator`, which
adds the entry points, is constructed.

Incremental variants. While it elaborates, the elaborator records for every node the nodes its
definition read, in order (`reads`: through a name, an attribute, a map entry, or as a reference
in its formula), the override keys its definition was looked up under (`consults`: `(instance,
field)`, and `(instance, "map[key]")` for a map entry) and how it was reached (`requests`).
`memo()` hands that over; a variant (`resume(memo)`, then `run`) keeps a node of the memo,
instead of elaborating it again, when its definition consults no overridden key and every node
it read is, in the variant, what it was (the same dimension, or the same static value: a node's
formula names the nodes it reads, not their formulas, so it elaborates to the same formula).
That is decided on demand, where the variant reaches the node, and recursively for what it read;
so an override that changes a value but not the shape of the plan (`cuda_graphs = false`)
re-elaborates the few nodes whose formulas it changes, not the many that read them. Variants
(`x where (...)`, a search's trials) keep their names and their keys, so a kept node means what
it meant. An override that changes which fields of a variant differ from its instance (what
`_varies` decides from the definitions) makes the memo unusable, and the variant is elaborated
in full.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from .. import diagnostics as dx
from ..figure_roles import FIGURES
from ..identity import ByIdentity
from ..source import Span
from ..syntax import ast
from . import ir
from .resolve import Program
from .units import DIMENSIONLESS, Dim, UnitError, parse_unit
from .values import (
    INTEGER,
    FieldSpec,
    Instance,
    InstanceRef,
    Kind,
    MapRef,
    NodeMeta,
    TypeInfo,
    Value,
    describe,
    is_literal,
    kind_fields,
    span_of_type,
    static_key,
    suggestion,
    unit_help,
)


@dataclasses.dataclass
class Memo:
    """The state of a finished elaboration that a variant of the same program may start from.
    Shared between variants and never mutated: `resume` copies what it extends."""

    kinds: dict[str, Kind | None]
    types: dict[int, TypeInfo | None]
    instances: dict[str, Instance | None]
    variants: dict[Any, Instance]
    done: dict[str, Value | None]
    reads: dict[str, dict[str, None]]
    consults: dict[str, set[tuple[str, str]]]
    requests: dict[str, tuple[Any, ...]]
    varying: dict[Any, bool]
    varying_at: dict[Any, Instance]
    elaborated: ir.Elaborated


class Restart(Exception):
    """A variant started from a memo met an error while checking a node it might not need."""


def _same(a: Value | None, b: Value | None) -> bool:
    """Whether a node elaborated to what it did in the memo: a quantity of the same dimension, or
    the same static value."""
    if a is None or b is None:
        return False
    if isinstance(a, (Dim, str)) or isinstance(b, (Dim, str)):
        return type(a) is type(b) and a == b
    key = static_key(a)
    return key is not None and key == static_key(b)


class Declarations:
    def __init__(self, program: Program, sink: dx.Sink,
                 overrides: dict[tuple[str, str], ast.Expr] | None = None, lean: bool = False) -> None:
        self.program = program
        self.sink = sink
        # lean: only what the summary, the checks and the requirements read (a lever's variant,
        # which the report reads nothing else of), without the findings and levers
        self.lean = lean
        # a question's expressions, which a lean variant builds in place of the summary and checks
        # (`elaborate_reads`), and whether one of them met a problem there
        self.question_reads: tuple[ast.Expr, ...] | None = None
        self.unread = False
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
        self._varying_at: dict[Any, Instance] = {}
        self._varies_memo: dict[tuple[str, str], bool] = {}  # (variant, field) -> `_varies`, read at every use
        # (instance, field) -> the made node it reads as: its own, or, for a field a variant does not
        # vary, the node of the instance it varies; set once that node is made (a node once made
        # stays made, and which fields a variant varies is fixed for the run)
        self._made: dict[tuple[str, str], str] = {}
        self.reads: dict[str, dict[str, None]] = {}  # node -> the nodes its definition read, in order
        self.consults: dict[str, set[tuple[str, str]]] = {}  # node -> the override keys it was looked up under
        self.requests: dict[str, tuple[Any, ...]] = {}  # node -> how it is reached again
        self._memo: Memo | None = None
        self._members: list[dict[str, Value]] = []  # the variables of the reductions being elaborated
        self._stale: set[str] = set()  # nodes of the memo this variant elaborates again

    # ---- incremental variants (see the module's contract) ------------------------------------
    def memo(self) -> Memo:
        return Memo(self.kinds, self._types, self.instances, self._variants, self.done, self.reads,
                    self.consults, self.requests, self._varying, self._varying_at, self.out)

    def resume(self, memo: Memo) -> None:
        """Start this variant from a finished elaboration of the same program."""
        for key, inst in memo.varying_at.items():
            if (key[0], key[2]) in self.overrides and self._name_depends(inst, key[2], key[3]) != memo.varying[key]:
                return  # which fields of a variant differ from its instance changes: no memo
        self._memo = memo
        self._stale = {n for n, keys in memo.consults.items() if not keys.isdisjoint(self.overrides)}
        self.kinds, self._types = dict(memo.kinds), dict(memo.types)
        self.instances, self._variants = dict(memo.instances), dict(memo.variants)
        self.out.instances = list(memo.elaborated.instances)

    def _adopt(self, node_id: str) -> bool:
        """Keep the memo's node `node_id` if nothing it was made from has changed."""
        memo = self._memo
        if memo is None or node_id in self._stale or node_id not in memo.done:
            return False
        self._stale.add(node_id)  # until shown otherwise: a failed check is not made twice
        for read in memo.reads.get(node_id, ()):
            if not self._reach(read) or not _same(self.done[read], memo.done[read]):
                return False
        self._stale.discard(node_id)
        self.done[node_id] = memo.done[node_id]
        node = memo.elaborated.nodes.get(node_id)
        if node is not None:
            self.out.nodes[node_id] = node
            self.out.order.append(node_id)
        static = memo.elaborated.statics.get(node_id)
        if static is not None:
            self.out.statics[node_id] = static
        return True

    def _reach(self, node_id: str) -> bool:
        """Make sure the variant has the memo's node `node_id`, kept or elaborated again."""
        if node_id in self.done or self._adopt(node_id):
            return self.done[node_id] is not None
        assert self._memo is not None
        request = self._memo.requests.get(node_id)
        if request is None:
            return False
        how, *args = request
        sink, self.sink = self.sink, dx.Sink()
        try:
            if how == "field":
                self.field(args[0], args[1], args[0].decl.name_span)
            elif how == "expr":  # a map entry, in the reductions it was read in (`load[h]`)
                members, self._members = self._members, list(args[2])
                try:
                    self.expr(args[0], args[1])
                finally:
                    self._members = members
            else:
                self._let(args[0], args[1])
        finally:
            reached, self.sink = self.sink, sink
        if reached.has_errors:  # it may not be read in the variant at all: elaborate it in full
            raise Restart
        for d in reached.items:
            sink.add(d)
        return self.done.get(node_id) is not None

    def finish_resumed(self) -> None:
        """The memo's variants that the variant's nodes belong to."""
        if self._memo is not None:
            owners = {node.owner for node in self.out.nodes.values()}
            for name, bound in self._memo.elaborated.variants.items():
                if name in owners:
                    self.out.variants.setdefault(name, bound)

    def expr(self, e: ast.Expr, scope: Instance | None) -> Value | None:
        raise NotImplementedError  # expressions.Expressions

    def _uncertain(self, e: ast.Uncertain, scope: Instance | None
                   ) -> tuple[Value | None, tuple[Fraction, Fraction] | None]:
        raise NotImplementedError  # expressions.Expressions

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
            kind.figures.extend(parent.figures)
        self._collect_items(kind, decl.items, None)
        self.kinds[name] = kind
        return kind

    def _figure_declared(self, decl: ast.FigureDecl) -> bool:
        """A figure the report can draw, with every role it needs and none it does not know."""
        figure = FIGURES.get(decl.name)
        if figure is None:
            close = suggestion(decl.name, list(FIGURES), [])
            self.sink.add(dx.BAD_FIGURE.at(
                decl.name_span, "no such figure", message=f"the report draws no figure `{decl.name}`",
                help=(f"did you mean `{close}`? " if close else "") + "figures: " + ", ".join(f"`{f}`" for f in FIGURES)))
            return False
        ok = True
        for role in decl.roles:
            if role.name not in figure.roles:
                close = suggestion(role.name, list(figure.roles), [])
                self.sink.add(dx.BAD_FIGURE.at(
                    role.name_span, "no such role", message=f"figure `{decl.name}` has no role `{role.name}`",
                    help=(f"did you mean `{close}`? " if close else "") + "its roles: "
                    + ", ".join(f"`{r}`" for r in figure.roles)))
                ok = False
        given = {r.name for r in decl.roles}
        missing = [r for r in figure.required if r not in given]
        if missing:
            self.sink.add(dx.BAD_FIGURE.at(
                decl.name_span, "roles missing", message=f"figure `{decl.name}` needs "
                + ", ".join(f"`{r}`" for r in missing),
                help="name the quantity for each: " + "; ".join(f"`{r} = ...` ({figure.required[r]})" for r in missing)))
            ok = False
        return ok

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
            elif isinstance(item, ast.FigureDecl):
                if self._figure_declared(item):
                    kind.figures.append(item)
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
        made = self._made.get((inst.name, name))
        if made is not None:  # read before, as this node: read it again
            return self._use(made, use, text or name)
        spec = inst.kind.fields[name]
        ftype = self.type_of(spec)
        if ftype is not None and ftype.tag == "map":
            return MapRef(inst, name)
        node_id = ir.node_id(inst.name, name)
        if self.done.get(node_id) is not None:  # made already (a variant's own node only where it varies): read it
            self._made[inst.name, name] = node_id
            return self._use(node_id, use, text or name)
        if inst.outer is not None:
            if name in inst.bound:
                return self._bound(inst, spec, ftype, use, text or name)
            if name in inst.pinned or not self._varies(inst, name):  # the same in the variant as in the instance it varies
                value = self.field(inst.outer, name, use, text)
                made = self._made.get((inst.outer.name, name))
                if made is not None:
                    self._made[inst.name, name] = made
                return value
        if node_id not in self.done and node_id not in self.requests:
            self.consults.setdefault(node_id, set()).add((inst.origin.name, name))
            self.requests[node_id] = ("field", inst, name)
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
        meta = NodeMeta(owner=inst.name, field=name, spec=spec, ftype=ftype, notes=notes,
                         overridden=overridden, decl_span=spec.decl.name_span, type_span=span_of_type(spec.decl.type))
        return self._node(node_id, expr, inst, meta, use, text or name)

    # ---- variants ---------------------------------------------------------------------------
    def variant(self, inst: Instance, bound: dict[str, tuple[ir.Expr | None, ast.Expr]], span: Span,
                pinned: frozenset[str] = frozenset()) -> Instance:
        """The instance `inst` with some fields bound to other values: every field that depends
        on a bound one gets its own node (`chat~1.step_time`); the others are `inst`'s own, and so
        are the `pinned` fields, bound to their own value in `inst`, and what reads only them.
        One variant per distinct binding, named in the order they are first met."""
        key = (inst.name, tuple(sorted((k, None if v[0] is None else ir.shape(v[0])) for k, v in bound.items())), tuple(sorted(pinned)), None if all(
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
                             abstract=inst.abstract, outer=inst, bound=dict(bound), pinned=pinned)
            self._variants[key] = found
            self.instances[found.name] = found
            self.out.variants[found.name] = tuple(bound)
        return found

    def _varies(self, inst: Instance, name: str) -> bool:
        """Whether a field of a variant differs from the instance it varies: its definition
        reads a field the variant binds, directly or through other fields (read from the
        definitions, so a field that does not vary is never elaborated twice). Memoised per
        variant and field: nothing it reads changes during a run, and no `_name_depends` is under
        way when it is called (that recursion reads definitions, never fields)."""
        key = (inst.name, name)
        found = self._varies_memo.get(key)
        if found is not None:
            return found
        on: frozenset[str] | None = inst.__dict__.get("_bound_names")  # made once: the variant's binding is fixed
        if on is None:
            on = inst.__dict__["_bound_names"] = frozenset(inst.bound)
        found = self._varies_memo[key] = self._name_depends(inst, name, on)
        return found

    def _name_depends(self, inst: Instance, name: str, on: frozenset[str]) -> bool:
        if name in on:
            return True
        if name not in inst.kind.fields or self._fixed(inst, name):
            return False  # not a field, or fixed by a variant further out (or pinned): the same here
        key = (inst.origin.name, inst.kind.name, name, on, self._leaves(inst))
        if key not in self._varying:
            self._varying[key] = False  # a cycle is reported by the instance itself
            self._varying_at[key] = inst
            definition = self._definition(inst, inst.kind.fields[name])
            self._varying[key] = definition is not None and self._depends(inst, definition[0], on)
        return self._varying[key]

    def _depends(self, inst: Instance, e: Any, on: frozenset[str]) -> bool:
        """Whether an expression written in `inst`'s kind reads any of the fields `on`; a
        `where` or `largest` that rebinds a field hides it from the expression it rebinds it in."""
        for name, hidden in _reads(e):
            if hidden is None:
                if self._name_depends(inst, name, on):
                    return True
            elif (inner := on - hidden) and self._name_depends(inst, name, inner):
                return True
        return False

    @staticmethod
    def _fixed(inst: Instance, name: str) -> bool:
        """Bound by a variant further out, or pinned by this one or one further out."""
        if name in inst.pinned:
            return True
        outer = inst.outer
        while outer is not None:
            if name in outer.bound or name in outer.pinned:
                return True
            outer = outer.outer
        return False

    @staticmethod
    def _leaves(inst: Instance) -> frozenset[str]:
        """What the variants out to the plan's instance bind, and what they pin (marked `=`);
        computed once per instance, whose `outer`, `bound` and `pinned` are set when it is made."""
        found: frozenset[str] | None = inst.__dict__.get("_leaves")
        if found is None:
            names: set[str] = {"=" + n for n in inst.pinned}  # what the variant or one further out pins, marked
            outer = inst.outer
            while outer is not None:
                names.update(outer.bound)
                names.update("=" + n for n in outer.pinned)
                outer = outer.outer
            found = inst.__dict__["_leaves"] = frozenset(names)
        return found

    def _bound(self, inst: Instance, spec: FieldSpec, ftype: TypeInfo | None, use: Span, text: str) -> Value | None:
        """A field a variant binds: a node whose formula is the binding, computed in the
        instance the variant varies; the free variable of a `largest` starts at its low end."""
        node_id = ir.node_id(inst.name, spec.name)
        self.requests.setdefault(node_id, ("field", inst, spec.name))
        if node_id not in self.done and not self._adopt(node_id):
            value, written = inst.bound[spec.name]
            assert value is not None, "the free variable is recorded by `largest`"
            meta = NodeMeta(owner=inst.name, field=spec.name, spec=spec, ftype=ftype, notes=None,
                             overridden=True, decl_span=spec.decl.name_span, type_span=span_of_type(spec.decl.type))
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

    def _node(self, node_id: str, expr: ast.Expr, scope: Instance | None, meta: NodeMeta,
              use: Span, text: str) -> Value | None:
        if node_id in self.done or self._adopt(node_id):
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
        if self.stack and self.stack[-1][0] != node_id:
            self.reads.setdefault(self.stack[-1][0], {})[node_id] = None
        done = self.done[node_id]
        if isinstance(done, (Dim, str)):
            return ir.Ref(node_id, done, use, text)
        return done

    def _record(self, node_id: str, value: ir.Expr, expr: ast.Expr, meta: NodeMeta,
                interval: tuple[Fraction, Fraction] | None = None) -> None:
        notes = meta.notes
        base_notes = meta.spec.decl.notes if meta.spec is not None else None
        source = notes.source if notes and notes.source else None
        if source is None and not meta.overridden and base_notes is not None:
            source = base_notes.source
        description = (base_notes.description if base_notes else None) or (notes.description if notes else None)
        node = ir.Node(
            id=node_id, expr=value, dim=value.dim, is_input=is_literal(value), span=expr.span,
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
        if node.deps:
            self.reads.setdefault(node_id, {}).update(dict.fromkeys(node.deps))

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

    def _conforms(self, value: Value, ftype: TypeInfo | None, span: Span, meta: NodeMeta) -> bool:
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
                    help=unit_help(ftype.dim, value.dim),
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
        meta = NodeMeta(owner="", field=name, spec=None, ftype=ftype, notes=decl.notes,
                         overridden=True, decl_span=decl.name_span, type_span=span_of_type(decl.type))
        self.requests.setdefault(name, ("let", name, use))
        return self._node(name, decl.expr, None, meta, use, name)

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
                words |= {item.name for item in kind_fields(decl.items)}
        return words


_READS: ByIdentity[tuple[tuple[str, frozenset[str] | None], ...]] = ByIdentity(200_000)


def _reads(e: Any) -> tuple[tuple[str, frozenset[str] | None], ...]:
    """The names an expression reads, in the order `_depends` asks of them, each with the fields
    hidden from it by the `where`s and `largest`s around it (None: inside none of them).
    Made once per expression: `_depends` asks it of the same definitions in every variant."""
    seen = _READS.get(e)
    if seen is not None:
        return seen
    found: list[tuple[str, frozenset[str] | None]] = []
    _collect(e, None, found)
    return _READS.put(e, tuple(found))


def _collect(e: Any, hidden: frozenset[str] | None, out: list[tuple[str, frozenset[str] | None]]) -> None:
    if isinstance(e, ast.Name):
        out.append((e.id, hidden))
    elif isinstance(e, ast.Attribute):
        _collect(e.value, hidden, out)
    elif isinstance(e, ast.Where):
        # `other.f where (...)` binds `other`'s fields: in this instance it reads `other` and the bindings
        for b in e.bindings:
            _collect(b.value, hidden, out)
        outer = hidden or frozenset()
        _collect(e.value, outer if isinstance(e.value, ast.Attribute) else outer | {b.target.steps[0].name for b in e.bindings}, out)
    elif isinstance(e, ast.Call) and e.func == "largest" and e.args and isinstance(e.args[0], ast.Name):
        for a in e.args[1:3]:
            _collect(a, hidden, out)
        for a in e.args[3:]:
            _collect(a, (hidden or frozenset()) | {e.args[0].id}, out)
    elif isinstance(e, tuple):
        for item in e:
            _collect(item, hidden, out)
    elif dataclasses.is_dataclass(e) and not isinstance(e, (ast.Number, Span)):
        for f in dataclasses.fields(e):
            if f.name != "span":
                _collect(getattr(e, f.name), hidden, out)
