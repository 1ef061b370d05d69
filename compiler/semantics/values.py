"""The elaborator's working values: kinds, instances and the static values that name them
(an instance, an enumeration, a map), the types fields declare, and the helpers the elaborator's
parts share (`declarations`, `expressions`, `elaborate`).

Contract: plain data and pure functions; nothing here reads a program or reports a problem.
`Value` is what elaborating an expression gives: an IR expression or a static value.
`static_key` is a key equal exactly for equal static values, across elaborations.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from ..source import Span
from ..syntax import ast
from . import ir
from .units import DIMENSIONLESS, Dim, format_number, format_quantity

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
    figures: list[ast.FigureDecl] = field(default_factory=list)

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
    # fields the variant binds to their own value in `outer` (`batch = batch`): they keep that
    # value, so nothing varies through them, and no node is made for what reads only them
    pinned: frozenset[str] = frozenset()

    @property
    def origin(self) -> Instance:
        """The instance of the plan this one is a variant of (itself if it is one; computed once:
        a variant's `outer` is set when it is made)."""
        found = self.__dict__.get("_origin")
        if found is None:
            found = self.__dict__["_origin"] = self if self.outer is None else self.outer.origin
        return found

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

    def map_entry(self, name: str, key: str) -> tuple[ast.Field | None, ast.Field | None]:
        """What sets entry `key` of the map field `name`: the nearest instance of the base chain
        that sets the entry (`name[key] = ...`) or the map as a whole (`name = ...`) decides, its
        own entry before its whole value. Returns (entry, None), (None, whole) or, where no
        instance sets either, (None, None): the kind's default stands. So `engine mine = vllm {
        attention_latency = 5 us }` sets every entry of `mine`, vLLM's own entries included."""
        inst: Instance | None = self
        while inst is not None:
            own = [f for f in inst.decl.fields if f.target.steps and f.target.steps[0].name == name]
            entry = next((f for f in own if len(f.target.steps) == 2 and f.target.steps[1].name == key), None)
            if entry is not None:
                return entry, None
            whole = next((f for f in own if len(f.target.steps) == 1), None)
            if whole is not None:
                return None, whole
            inst = inst.base
        return None, None

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



@dataclass(frozen=True)
class NodeMeta:
    owner: str
    field: str
    spec: FieldSpec | None
    ftype: TypeInfo | None
    notes: ast.Annotations | None
    overridden: bool
    decl_span: Span
    type_span: Span | None = None
    definition: bool = False  # an enumeration member's attribute: a definition whatever its kind


def midpoint_text(low: ast.Number, high: ast.Number, middle: Fraction, dim: Dim) -> str:
    """The midpoint of `low .. high` as the plan would write it (`0.5`, `40 ms`); in the unit the
    report would choose when the ends are written in different units, or as money."""
    if low.units == high.units and not low.text.startswith("$"):
        number = format_number(float((low.value + high.value) / 2), 6).replace(",", "")
        return f"{number} {' '.join(low.units)}".strip()
    return format_quantity(float(middle), dim)


def kind_fields(items: tuple[ast.KindItem, ...]) -> Iterator[ast.InputDecl | ast.DeriveDecl]:
    for item in items:
        if isinstance(item, ast.Section):
            yield from kind_fields(item.items)
        elif isinstance(item, (ast.InputDecl, ast.DeriveDecl)):
            yield item


def span_of_type(t: ast.TypeRef | None) -> Span | None:
    if isinstance(t, ast.MapType):
        return t.words_span
    return t.span if t is not None else None


def word_span(e: ast.Number, word: str) -> Span:
    """The span of one unit word of a literal (the whole literal if it cannot be found)."""
    literal = e.span.text
    at = literal.find(word, len(e.text))
    if at < 0 or word == "$":
        return e.unit_span or e.span
    return Span(e.span.file, e.span.start + at, e.span.start + at + len(word))


def as_bool_expr(value: Value | None) -> Value | None:
    if isinstance(value, ir.StaticBool):
        return ir.Lit(Fraction(int(value.value)), ir.BOOL, value.span, str(value.value).lower())
    return value


def is_literal(value: ir.Expr) -> bool:
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


def unit_help(want: Dim | str | None, got: Dim | str) -> str:
    if isinstance(want, Dim) and isinstance(got, Dim):
        ratio = want / got
        if ratio != DIMENSIONLESS:
            return f"the two sides differ by `{ratio}`; multiply the right side by a quantity in `{ratio}`"
    return "make both sides the same kind of quantity"
