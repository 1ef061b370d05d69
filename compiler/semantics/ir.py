"""The typed intermediate form that elaboration produces and lowering consumes.

Contract
- A *node* is one quantity of the plan: a field of an instance (`chat.weight_bytes`), an entry
  of a map field (`h100_sxm.peak_flops[bf16]`), an enum attribute (`dtype.bf16.bytes`) or a
  `let`. Nodes are identified by their dotted id and listed in `Elaborated.order`, which is
  topological (every node after the nodes it references).
- Numeric expressions are trees of `Lit`, `Ref` and `Op`, each with its dimension and the span
  it came from; `Ref` keeps the text as the user wrote it, so the report can print the formula
  as written. Booleans from comparisons are `Op`s with dimension `BOOL`.
- Enum members, instances and literal booleans are static: they are resolved during
  elaboration and never reach sympy.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from ..source import Span
from ..syntax import ast
from .units import Dim

BOOL = "bool"
Type = Dim | str  # a dimension, or BOOL

NodeId = str
"""A node's id: `instance.field`, `instance.field[member]` for a map entry, `enum.member.attribute`,
or a `let`'s name; a variant's nodes add `@` and the variant (`chat@mixed_step_time.batch`)."""
FieldRef = tuple[str, str]
"""(instance, field) as a question, a scenario or a lever names a field to override; its node is
`node_id(*ref)`."""


def node_id(instance: str, field: str) -> NodeId:
    """The id of an instance's field: the one place the dotted form is built from its parts."""
    return f"{instance}.{field}"


def field_ref(node: NodeId) -> FieldRef:
    """An id read back into (owner, field): `("chat", "batch")`, `("h100_sxm", "peak_flops[bf16]")`,
    `("dtype", "bf16.bytes")`; a `let` has no owner (`("", "total")`). The one place an id is split."""
    owner, dot, rest = node.partition(".")
    return (owner, rest) if dot else ("", owner)


def shown(node: NodeId) -> str:
    """An id as a reader sees it: a variant's node as the path of `where`s it lies in, outermost
    first (`chat@seen_step_time@mixed_step_time.iteration_time` → `chat.seen_step_time ›
    mixed_step_time › iteration_time`: the iteration time inside `mixed_step_time`'s `where`,
    itself inside `seen_step_time`'s); any other id as it is."""
    owner, rest = field_ref(node)
    if "@" not in owner:
        return node
    instance, *chain = owner.split("@")
    return f"{instance}." + " › ".join([*chain, rest])


@dataclass(frozen=True, slots=True)
class Lit:
    value: Fraction
    dim: Type
    span: Span
    text: str


@dataclass(frozen=True, slots=True)
class Ref:
    node: str
    dim: Type
    span: Span
    text: str


@dataclass(frozen=True, slots=True)
class Op:
    """`op` is one of + - * / ^ neg, < <= > >= == !=, and or not, if, min max ceil floor ..."""

    op: str
    args: tuple[Expr, ...]
    dim: Type
    span: Span


Expr = Lit | Ref | Op


def shape(expr: Expr) -> tuple[Any, ...]:
    """An expression's structure without its spans and texts: two formulas with the same shape
    compute the same value (the key under which `where (batch = operating_batch)` written in
    several fields is one variant)."""
    if isinstance(expr, Lit):
        return ("lit", expr.value, expr.dim)
    if isinstance(expr, Ref):
        return ("ref", expr.node)
    return (expr.op, expr.dim, *(shape(a) for a in expr.args))


@dataclass(frozen=True, slots=True)
class EnumValue:
    enum: ast.EnumDecl
    member: ast.EnumMember

    @property
    def id(self) -> str:
        return f"{self.enum.name}.{self.member.name}"


@dataclass(frozen=True, slots=True)
class StaticBool:
    value: bool
    span: Span


@dataclass
class Node:
    """One quantity, with everything the report needs to show where it came from."""

    id: str
    expr: Expr
    dim: Type
    is_input: bool
    span: Span  # where its value or formula is written
    decl_span: Span  # where the field is declared (the kind, or the let)
    description: str | None
    source: str | None
    symbol: str | None
    section: str | None
    unit: str | None  # display unit requested by the declared type, if any
    owner: str  # instance name, enum name or "" for lets
    field: str
    overridden: bool = False  # value set by an instance rather than the kind's default
    deps: tuple[str, ...] = ()
    interval: tuple[Fraction, Fraction] | None = None  # an input given as `low .. high` (value: the midpoint)
    # a fact of the thing it belongs to, not an assumption: a field declared `spec`, a `derive`
    # that happens to be a constant (`kv_shards = 1` for a shared latent), an enumeration
    # member's attribute (`dtype.fp8.bytes`); unless the plan gives it as a range
    is_definition: bool = False
    integral: bool = False  # declared `integer`: its value must be a whole number
    type_span: Span | None = None  # where its type is declared


@dataclass(frozen=True, slots=True)
class Requirement:
    """A kind's `require` clause, instantiated for one instance."""

    instance: str
    expr: Expr
    message: str | None
    span: Span
    blame: Span  # the user's assignment most responsible, else the instance


@dataclass(frozen=True, slots=True)
class Hole:
    """A number in a finding's sentence: a quantity (`percent`: a fraction shown in %)."""

    expr: Expr
    percent: bool
    span: Span


@dataclass(frozen=True, slots=True)
class Finding:
    """A kind's `finding`, instantiated for one instance: stated when `expr` holds."""

    instance: str
    expr: Expr
    parts: tuple[str | Hole, ...]
    span: Span
    section: str = ""  # the kind's section it is declared in: the group the document states it under


@dataclass(frozen=True, slots=True)
class Lever:
    """A lever of a kind for one instance, or of the plan (`instance` empty): the overrides it
    makes, where it applies (`cond`, None: everywhere), and what it takes and must pass first."""

    instance: str
    label: str
    cond: Expr | None
    targets: tuple[tuple[tuple[str, str], ast.Expr], ...]  # (instance, field) ← the value as written
    takes: tuple[str | Hole, ...]
    gate: tuple[str | Hole, ...]
    source: str | None
    span: Span


@dataclass(frozen=True, slots=True)
class Figure:
    """A kind's `figure`, for one instance: what to draw (`compiler/figure_roles.py`) and the
    node each role names, or for a static role the member's name."""

    instance: str
    name: str
    roles: tuple[tuple[str, str], ...]  # role → node id
    texts: tuple[tuple[str, str], ...]  # static role → its value's name
    span: Span


@dataclass(frozen=True, slots=True)
class Check:
    expr: Expr
    label: str | None
    span: Span


# ---- questions ------------------------------------------------------------------------
# A question's paths are resolved to fields when the plan is elaborated (a misspelt path is a
# diagnostic there, like any other name); its expressions (values, constraints, equation sides,
# plotted quantities) stay as written, because each is elaborated against the variant of the
# plan it is asked of: a `given`, a scenario or a sweep's point changes the graph they read.


@dataclass(frozen=True, slots=True)
class Setting:
    """A field a question sets (an ask's `given`, a scenario's assignment) and the value as written."""

    field: FieldRef
    value: ast.Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Axis:
    """A domain a question varies: the field (`label` its path as written), and its listed values
    or its range as written."""

    label: str
    field: FieldRef
    values: tuple[ast.Expr, ...] | None
    low: ast.Expr | None
    high: ast.Expr | None
    step: str | None  # log2, log10, linear; None: linear
    whole: bool  # the field is declared `integer`: every value must be a whole number
    span: Span


@dataclass(frozen=True, slots=True)
class Column:
    """A quantity a question reads in each variant (an objective, a plotted axis): its label as
    written, the field it names, and the expression that reads it."""

    label: str
    field: FieldRef
    expr: ast.Expr
    span: Span


@dataclass(frozen=True, slots=True)
class QuestionBase:
    keyword: str  # ask, solve, scenario, compare, sweep, search
    title: str  # an ask's or a scenario's as written (may be empty); a solve's text; else the keyword
    span: Span

    @property
    def text(self) -> str:
        """The question as written, on one line."""
        return " ".join(self.span.text.split())


@dataclass(frozen=True, slots=True)
class Ask(QuestionBase):
    """`ask "t": maximize x subject to c1, c2 given a = 1`, `... maximize q over x ...`, or
    `ask "t": solve l = r for x`. `unknown` is the field solved for; `quantity` the one to
    optimise when it is another (`over`); `objective` None for an equation."""

    objective: str | None
    unknown: FieldRef
    unknown_span: Span
    quantity: Column | None
    constraints: tuple[ast.Expr, ...]
    equation: tuple[ast.Expr, ast.Expr] | None
    given: tuple[Setting, ...]


@dataclass(frozen=True, slots=True)
class Solve(QuestionBase):
    """`solve devices for chat`: a derived quantity with the choices that decide it, or an input
    with the range over which the plan's checks hold."""

    field: FieldRef
    field_span: Span


@dataclass(frozen=True, slots=True)
class Scenario(QuestionBase):
    settings: tuple[Setting, ...]


@dataclass(frozen=True, slots=True)
class Table(QuestionBase):
    """`compare` (one axis) and `sweep` (several): the summary and checks, or the plotted
    `columns` when given, at every point of the axes."""

    subject: str
    axes: tuple[Axis, ...]
    columns: tuple[Column, ...]


@dataclass(frozen=True, slots=True)
class Search(QuestionBase):
    """`search chat over ... minimize q subject to ...`: every configuration of the axes, ranked;
    `pareto` the two plotted quantities whose front it lists (empty without a pareto plot)."""

    subject: str
    axes: tuple[Axis, ...]
    objective: str
    target: Column
    constraints: tuple[ast.Expr, ...]
    pareto: tuple[Column, ...]


Question = Ask | Solve | Scenario | Table | Search


@dataclass
class Elaborated:
    nodes: dict[str, Node] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    requirements: list[Requirement] = field(default_factory=list)
    advisories: list[Requirement] = field(default_factory=list)  # `advise`: a warning when it fails
    findings: list[Finding] = field(default_factory=list)  # `finding`: stated in the report when it holds
    levers: list[Lever] = field(default_factory=list)  # `lever`: priced against the plan by the solve stage
    figures: list[Figure] = field(default_factory=list)  # `figure`: drawn by the report for each instance
    checks: list[Check] = field(default_factory=list)
    summary: list[Expr] = field(default_factory=list)
    instances: list[str] = field(default_factory=list)  # in the order they were first reached
    main_instances: list[str] = field(default_factory=list)
    title: str | None = None
    scope: str | None = None
    questions: list[Question] = field(default_factory=list)  # answered by the solve stage
    # fields whose value is static (an enum member, an instance, a literal boolean), by a key
    # that is equal exactly when the values are: `dtype.fp8`, `instance h100_sxm`, `true`
    statics: dict[str, str] = field(default_factory=dict)
    # each instance reached, by name: its kind followed by the kinds that kind extends
    # (`("deployment",)`, `("mla_decoder", "decoder")`), and its base instances nearest first
    # (`trtllm_0_9_xqa` → `("trtllm_0_9", "trtllm")`); tools such as `plan flags` read them
    kinds: dict[str, tuple[str, ...]] = field(default_factory=dict)
    bases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # each variant (`chat@mixed_step_time`, made by a `where` or a `largest`): the fields it binds
    variants: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # what the elaborator knew when it finished (`declarations.Memo`), so that a variant of this
    # plan elaborates again only the fields an override reaches; set on the plan as written
    memo: Any = field(default=None, repr=False, compare=False)


# ---- graph helpers shared by lowering, solving and vector evaluation ----------------------


def refs(expr: Expr) -> list[str]:
    """The nodes an expression references, in order, each once."""
    out: list[str] = []
    stack = [expr]
    while stack:
        e = stack.pop()
        if isinstance(e, Ref):
            out.append(e.node)
        elif isinstance(e, Op):
            stack.extend(reversed(e.args))
    return list(dict.fromkeys(out))


def set_inputs(nodes: dict[str, Node], start: list[str], depth: int | None = None) -> tuple[Span | None, Span | None]:
    """Where the plan set the inputs a formula reading `start` rests on, nearest first (breadth
    first through derived quantities, at most `depth` steps below `start` when given): the first
    set in the user's own files, and the first set in the stdlib's catalog (a model's or a
    board's value); None for either that there is not. A failed requirement or search is
    reported at the first (`tensor_parallel = 16`, not the board's size)."""
    queue, seen = [(ref, 0) for ref in start], set()
    catalog: Span | None = None
    while queue:
        ref, steps = queue.pop(0)
        node = nodes.get(ref)
        if node is None or ref in seen:
            continue
        seen.add(ref)
        if node.overridden and node.is_input:
            if not node.span.file.is_stdlib:
                return node.span, catalog
            catalog = catalog or node.span
        if depth is None or steps < depth:
            queue.extend((d, steps + 1) for d in node.deps)
    return None, catalog


def instance_line(nodes: dict[str, Node], instance: str) -> Span | None:
    """The first input the user's own file sets in this instance (its first line that sets a
    quantity), or None when it sets none there."""
    spans = [n.span for n in nodes.values() if n.owner == instance and n.overridden and n.is_input
             and not n.span.file.is_stdlib]
    return min(spans, key=lambda s: (str(s.file.path), s.start), default=None)


def with_literals(elaborated: Elaborated, literals: dict[str, tuple[Lit, Span]]) -> Elaborated:
    """The graph with each node of `literals` made an input holding that literal, written at that
    span (a question's numeric override, a varied number of `pipeline.vary`): what the plan
    would be with the number written there, without elaborating it again."""
    nodes = dict(elaborated.nodes)
    for node_id, (literal, span) in literals.items():
        nodes[node_id] = replace(nodes[node_id], expr=literal, deps=(), is_input=True, overridden=True, interval=None,
                                 span=span, source=None)
    return replace(elaborated, nodes=nodes)


def downstream(elaborated: Elaborated, node: str) -> set[str]:
    """The node and every node that depends on it, transitively."""
    out = {node}
    nodes = elaborated.nodes
    for node_id in elaborated.order:
        if not out.isdisjoint(nodes[node_id].deps):
            out.add(node_id)
    return out


def upstream(elaborated: Elaborated, exprs: list[Expr]) -> set[str]:
    """The nodes these expressions read, transitively."""
    return upstream_of(elaborated, [r for e in exprs for r in refs(e)])


def upstream_of(elaborated: Elaborated, node_ids: list[str], searches_as_leaves: bool = False) -> set[str]:
    """These nodes and every node they read, transitively. With `searches_as_leaves`, a search
    (`largest`) reads only its range: the trial nodes of its condition are how it is found, not
    what it is made of."""
    stack = list(node_ids)
    out: set[str] = set()
    while stack:
        n = stack.pop()
        if n in out or n not in elaborated.nodes:
            continue
        out.add(n)
        expr = elaborated.nodes[n].expr
        if searches_as_leaves and is_search(expr):
            stack.extend(refs(expr.args[1]) + refs(expr.args[2]) + refs(expr.args[4]))  # type: ignore[union-attr]
        else:
            stack.extend(elaborated.nodes[n].deps)
    return out


def trial_nodes(elaborated: Elaborated, node_id: str) -> list[str]:
    """For a node defined by `largest(x, low, high, condition)`: the nodes between its free
    variable and its condition, in evaluation order — what each trial value re-evaluates."""
    cache = elaborated.__dict__.setdefault("_trials", {})
    if node_id not in cache:
        expr = elaborated.nodes[node_id].expr
        assert isinstance(expr, Op) and expr.op == "largest" and isinstance(expr.args[0], Ref)
        free = expr.args[0].node
        down = downstream(elaborated, free)
        up = upstream(elaborated, [expr.args[3]])
        cache[node_id] = [n for n in elaborated.order if n in down and n in up and n != free]
    return cache[node_id]  # type: ignore[no-any-return]


def search_aliases(elaborated: Elaborated, node_id: str) -> dict[str, str]:
    """For a node defined by `largest(x, low, high, condition)`: the plan's own nodes that hold,
    at the search's answer, the value one of its trial nodes holds there (plan node → trial node).

    A search's trials are the variant of its instance with the free variable bound
    (`chat@batch.tpot`, `chat@batch@step_time.gemm_time`); the plan's nodes read the answer
    (`chat.tpot`, `chat@step_time.gemm_time`). The two are paired by name (the variant's prefix
    dropped) and kept only where the formulas have the same shape once the variant's refs are
    renamed to their pairs and the free variable to the search itself: by induction over the
    evaluation order each pair then computes the same value from the same inputs wherever the
    search has an answer (its trial nodes left at it). A nested search, and what reads a node
    without a pair, are not paired. Both evaluators use this to read the plan's quantities at the
    answer off the trials instead of computing them a second time (`vector.evaluate_many`,
    `lower.lower`)."""
    cache = elaborated.__dict__.setdefault("_search_aliases", {})
    if node_id in cache:
        return cache[node_id]  # type: ignore[no-any-return]
    expr = elaborated.nodes[node_id].expr
    assert isinstance(expr, Op) and expr.op == "largest" and isinstance(expr.args[0], Ref)
    free = expr.args[0].node
    variant = field_ref(free)[0]  # `chat@batch`
    outer = variant.rsplit("@", 1)[0]  # `chat`
    renamed = {free: node_id}

    prefixes = (variant + ".", variant + "@")

    def pair(node: str) -> str | None:
        if not node.startswith(prefixes):  # most of the plan: not a node of the variant
            return None
        owner, rest = field_ref(node)
        if owner == variant or owner.startswith(variant + "@"):
            return f"{outer}{owner[len(variant):]}.{rest}"
        return None

    def same(e: Expr, plan: Expr) -> bool:
        """`shape(plan) == shape(e)` with e's refs renamed to their pairs, walked side by side and
        left at the first difference."""
        if e is plan and not renamed.keys() & refs(e):  # one formula, shared by both: nothing renamed in it
            return True
        kind = type(e)
        if kind is not type(plan):
            return False
        if kind is Ref:
            return renamed.get(e.node, e.node) == plan.node  # type: ignore[union-attr]
        if kind is Lit:
            return e.value == plan.value and e.dim == plan.dim  # type: ignore[union-attr]
        return (e.op == plan.op and e.dim == plan.dim and len(e.args) == len(plan.args)  # type: ignore[union-attr]
                and all(same(a, b) for a, b in zip(e.args, plan.args)))  # type: ignore[union-attr]

    nodes = elaborated.nodes
    for n in elaborated.order:
        other = pair(n)
        if other is not None and other != n and other in nodes and not is_search(nodes[n].expr) \
                and same(nodes[n].expr, nodes[other].expr):
            renamed[n] = other
    trials = set(trial_nodes(elaborated, node_id))
    cache[node_id] = {other: n for n, other in renamed.items() if n in trials}
    return cache[node_id]  # type: ignore[no-any-return]


def is_search(expr: Expr) -> bool:
    return isinstance(expr, Op) and expr.op == "largest"


def free_variables(elaborated: Elaborated) -> set[str]:
    """The trial-value nodes of the plan's searches (their values are the searches' answers)."""
    return {n.expr.args[0].node for n in elaborated.nodes.values()  # type: ignore[union-attr]
            if is_search(n.expr)}


def conjuncts(elaborated: Elaborated, expr: Expr) -> list[Expr]:
    """The parts of an `and`, through the boolean quantities it names (`serves_slos` → its own
    `and`), as a condition's separate limits."""
    if isinstance(expr, Op) and expr.op == "and":
        return [p for a in expr.args for p in conjuncts(elaborated, a)]
    if isinstance(expr, Ref) and expr.dim == BOOL and expr.node in elaborated.nodes:
        inner = elaborated.nodes[expr.node].expr
        if isinstance(inner, (Op, Ref)) and (isinstance(inner, Ref) or inner.op == "and"):
            return conjuncts(elaborated, inner)
    return [expr]


def all_trial_nodes(elaborated: Elaborated) -> set[str]:
    """Every search's free variable and trial nodes: the evaluators leave them to their search."""
    cache = elaborated.__dict__.get("_all_trials")
    if cache is None:
        cache = set()
        for n in elaborated.order:
            expr = elaborated.nodes[n].expr
            if is_search(expr):
                cache.add(expr.args[0].node)  # type: ignore[union-attr]
                cache.update(trial_nodes(elaborated, n))
        elaborated.__dict__["_all_trials"] = cache
    return cache


def search_inputs(elaborated: Elaborated, node_id: str) -> set[str]:
    """The nodes outside a search's trial nodes that its trials read: they must have values first.
    The free variable of a search nested in the trials is not one: that search sets it."""
    trials = set(trial_nodes(elaborated, node_id))
    free = elaborated.nodes[node_id].expr.args[0].node  # type: ignore[union-attr]
    nested = {elaborated.nodes[n].expr.args[0].node for n in trials  # type: ignore[union-attr]
              if is_search(elaborated.nodes[n].expr)}
    return {d for n in trials for d in elaborated.nodes[n].deps if d not in trials and d != free and d not in nested}
