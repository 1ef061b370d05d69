"""The plan AST: frozen dataclasses, each with a mandatory source span.

Contract
- Every node has `span: Span` as its first field; children are tuples, never lists.
- Nodes carry what the source said and nothing derived: numbers keep their literal text and
  exact value, unit words are kept as written (the units table checks them later).
- This module imports nothing from Lark; it is what every stage after the parser sees.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..source import Span

# ---- expressions --------------------------------------------------------------------------


@dataclass(frozen=True)
class Name:
    span: Span
    id: str


@dataclass(frozen=True)
class Attribute:
    span: Span
    value: Expr
    attr: str
    attr_span: Span


@dataclass(frozen=True)
class Index:
    span: Span
    value: Expr
    key: Expr


@dataclass(frozen=True)
class Uncertain:
    """`low .. high` as an input's value: known only within a range (only where a field or a
    `let` is given its value)."""

    span: Span
    low: Expr
    high: Expr


@dataclass(frozen=True)
class Number:
    """A literal: `80 GiB`, `1.5 k tokens`, `$2.5/h` (money keeps `$` as its first unit word)."""

    span: Span
    text: str
    value: Fraction
    units: tuple[str, ...]
    unit_span: Span | None


@dataclass(frozen=True)
class Bool:
    span: Span
    value: bool


@dataclass(frozen=True)
class Unary:
    span: Span
    op: str  # "-" or "not"
    operand: Expr


@dataclass(frozen=True)
class BinOp:
    span: Span
    op: str  # + - * / ^
    left: Expr
    right: Expr
    op_span: Span


@dataclass(frozen=True)
class Compare:
    span: Span
    op: str  # < <= > >= == !=
    left: Expr
    right: Expr
    op_span: Span


@dataclass(frozen=True)
class BoolOp:
    span: Span
    op: str  # and / or
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Call:
    span: Span
    func: str
    func_span: Span
    args: tuple[Expr, ...]


@dataclass(frozen=True)
class Reduce:
    """`sum(body for var in enum)` (or `max`, `min`): body taken for every member of the
    enumeration, with `var` naming the member."""

    span: Span
    func: str
    func_span: Span
    body: Expr
    var: str
    var_span: Span
    over: str
    over_span: Span


@dataclass(frozen=True)
class If:
    span: Span
    cond: Expr
    then: Expr
    orelse: Expr


@dataclass(frozen=True)
class Where:
    """`value where (a = x, b = y)`: `value` computed as if the fields `a` and `b` of the same
    instance were `x` and `y` (themselves computed in the instance as it is); when `value` is
    `other.f` of an instance `other`, `a` and `b` are `other`'s fields."""

    span: Span
    value: Expr
    bindings: tuple[Assignment, ...]


Expr = Name | Attribute | Index | Number | Bool | Unary | BinOp | Compare | BoolOp | Call | Reduce | If | Uncertain | Where

# ---- annotations, types and paths ---------------------------------------------------------


@dataclass(frozen=True)
class Annotations:
    """The optional description, `source "..."` and `symbol "..."` after a value."""

    span: Span
    description: str | None = None
    source: str | None = None
    symbol: str | None = None


@dataclass(frozen=True)
class BoolType:
    span: Span


@dataclass(frozen=True)
class UnitType:
    """A unit (`B/s`, `count`) or, when it is a single word naming one, an enum or kind."""

    span: Span
    words: tuple[str, ...]


@dataclass(frozen=True)
class MapType:
    span: Span
    key: str
    key_span: Span
    words: tuple[str, ...]
    words_span: Span


TypeRef = BoolType | UnitType | MapType


@dataclass(frozen=True)
class PathStep:
    span: Span
    name: str
    indexed: bool  # `[name]` rather than `.name`


@dataclass(frozen=True)
class Path:
    span: Span
    steps: tuple[PathStep, ...]

    @property
    def dotted(self) -> str:
        out = ""
        for i, step in enumerate(self.steps):
            out += f"[{step.name}]" if step.indexed else (step.name if i == 0 else "." + step.name)
        return out


# ---- declarations -------------------------------------------------------------------------


@dataclass(frozen=True)
class Import:
    span: Span
    path: str
    path_span: Span


@dataclass(frozen=True)
class Meta:
    span: Span
    key: str  # title / scope
    value: str


@dataclass(frozen=True)
class Attr:
    span: Span
    name: str
    name_span: Span
    value: Expr


@dataclass(frozen=True)
class EnumMember:
    span: Span
    name: str
    attrs: tuple[Attr, ...]
    notes: Annotations


@dataclass(frozen=True)
class EnumDecl:
    span: Span
    name: str
    name_span: Span
    description: str | None
    members: tuple[EnumMember, ...]


@dataclass(frozen=True)
class InputDecl:
    span: Span
    name: str
    name_span: Span
    type: TypeRef
    default: Expr | None
    notes: Annotations
    spec: bool = False  # declared `spec`: what the thing is (architecture, datasheet), not an assumption


@dataclass(frozen=True)
class DeriveDecl:
    span: Span
    name: str
    name_span: Span
    type: TypeRef | None
    expr: Expr
    notes: Annotations


@dataclass(frozen=True)
class RequireDecl:
    """`require cond "message"`: the plan is impossible unless cond holds; `advise`: a warning."""

    span: Span
    expr: Expr
    message: str | None
    advisory: bool = False


@dataclass(frozen=True)
class Hole:
    """`{path}` or `{path:%}` in a finding's sentence: the value of a quantity, linked to its
    derivation (`%`: a fraction shown as a percentage)."""

    span: Span
    expr: Expr
    percent: bool = False


@dataclass(frozen=True)
class FindingDecl:
    """`finding cond "sentence"`: a sentence the design document states when `cond` holds; its
    holes are quantities, so the sentence changes when the numbers do and is never free text."""

    span: Span
    expr: Expr
    parts: tuple[str | Hole, ...]


@dataclass(frozen=True)
class LeverDecl:
    """`lever "label" [if cond] { field = value, ... } ["takes"] [gate "..."] [source "..."]`: a
    change the report prices against the plan. In a kind its assignments name fields of each
    instance and `if` decides where it applies; in a plan they are paths (`chat.model = x`).
    `takes` (what it costs to get) and `gate` (what must pass before it rolls out) are sentences
    with holes, like a finding's."""

    span: Span
    label: str
    cond: Expr | None
    assignments: tuple[Assignment, ...]
    takes: tuple[str | Hole, ...]
    gate: tuple[str | Hole, ...]
    source: str | None


@dataclass(frozen=True)
class FigureDecl:
    """`figure NAME { role = expr; ... }` in a kind: a figure drawn for each instance from the
    quantities its roles name."""

    span: Span
    name: str
    name_span: Span
    roles: tuple[Attr, ...]


@dataclass(frozen=True)
class Section:
    span: Span
    title: str
    items: tuple[KindItem, ...]


KindItem = InputDecl | DeriveDecl | RequireDecl | FindingDecl | LeverDecl | FigureDecl | Section


@dataclass(frozen=True)
class KindDecl:
    span: Span
    name: str
    name_span: Span
    parent: str | None
    parent_span: Span | None
    description: str | None
    items: tuple[KindItem, ...]


@dataclass(frozen=True)
class Field:
    span: Span
    target: Path
    value: Expr
    notes: Annotations


@dataclass(frozen=True)
class InstanceDecl:
    span: Span
    kind: str
    kind_span: Span
    name: str
    name_span: Span
    base: str | None
    base_span: Span | None
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class LetDecl:
    span: Span
    name: str
    name_span: Span
    type: TypeRef | None
    expr: Expr
    notes: Annotations


# ---- questions ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Assignment:
    span: Span
    target: Path
    value: Expr


@dataclass(frozen=True)
class Domain:
    """`path in [a, b]` or `path in lo .. hi [log2|log10|linear]`."""

    span: Span
    target: Path
    values: tuple[Expr, ...] | None
    low: Expr | None
    high: Expr | None
    step: str | None


@dataclass(frozen=True)
class Plot:
    span: Span
    kind: str
    axes: tuple[Path, ...]


@dataclass(frozen=True)
class CheckStmt:
    span: Span
    expr: Expr
    label: str | None


@dataclass(frozen=True)
class SummaryStmt:
    """`summary chat.devices, chat.tpot`: the headline numbers of the design document."""

    span: Span
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class SolveStmt:
    span: Span
    subject: Path
    unknown: Path


@dataclass(frozen=True)
class AskStmt:
    """`ask "title": maximize x subject to c1, c2 given a = 1` or `ask "t": solve l = r for x`."""

    span: Span
    title: str
    objective: str | None  # maximize / minimize / None for an equation
    target: Path  # the unknown; or, with `over`, the quantity to optimise
    over: Path | None  # the unknown when the objective is a derived quantity
    constraints: tuple[Expr, ...]
    equation: tuple[Expr, Expr] | None
    given: tuple[Assignment, ...]


@dataclass(frozen=True)
class ScenarioStmt:
    span: Span
    title: str
    assignments: tuple[Assignment, ...]


@dataclass(frozen=True)
class CompareStmt:
    span: Span
    subject: Path
    domain: Domain


@dataclass(frozen=True)
class SweepStmt:
    span: Span
    subject: Path
    domains: tuple[Domain, ...]
    plot: Plot | None


@dataclass(frozen=True)
class SearchStmt:
    span: Span
    subject: Path
    domains: tuple[Domain, ...]
    objective: str
    target: Path
    constraints: tuple[Expr, ...]
    plot: Plot | None


Question = CheckStmt | SolveStmt | AskStmt | ScenarioStmt | CompareStmt | SweepStmt | SearchStmt
Statement = Import | Meta | EnumDecl | KindDecl | InstanceDecl | LetDecl | SummaryStmt | LeverDecl | Question


@dataclass(frozen=True)
class Module:
    span: Span
    statements: tuple[Statement, ...]


def shape(node: Any) -> Any:
    """A syntax tree without its spans: equal exactly when two trees are written alike (the
    lint's test for a restated formula, and `plan fmt`'s that a layout changed no meaning)."""
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return (type(node).__name__,) + tuple(
            shape(getattr(node, f.name)) for f in dataclasses.fields(node)
            if f.name != "span" and not f.name.endswith("_span"))
    if isinstance(node, tuple):
        return tuple(shape(x) for x in node)
    return node
