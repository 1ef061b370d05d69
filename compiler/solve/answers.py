"""The answers: typed records of what each question found, which the report formats.

Contract: plain dataclasses over the typed IR (the question each answers, expressions,
dimensions); nothing here computes, and nothing imports the solver, so a module
that only reads answers (the report, `pipeline.Compilation`) depends on this file alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from ..semantics import ir
from ..semantics.units import Dim


@dataclass
class Limit:
    """How far one constraint lets the unknown go."""

    constraint: ir.Expr
    value: Fraction | float | None  # None: this constraint does not bound the unknown
    at_limit: tuple[Any, Any] | None = None  # both sides of the constraint at the limit
    beyond: Fraction | float | None = None  # the nearest value past the limit (where it no longer holds)
    requirement: bool = False  # a `require` of the plan's kinds (the end of the question's domain), not a constraint it asks


@dataclass
class AskAnswer:
    question: ir.Ask
    unknown: str
    unknown_dim: Dim
    integer: bool
    value: Fraction | float | None = None
    limits: list[Limit] = field(default_factory=list)
    binding: Limit | None = None
    bracket: tuple[float, float] | None = None
    iterations: int = 0
    monotone_checked: int = 0
    closed_form: str | None = None  # LaTeX of the isolated unknown
    steps: list[tuple[str, str]] = field(default_factory=list)  # (words, LaTeX)
    closed_value: float | None = None
    objective: str | None = None
    objective_value: Any = None
    infeasible: str | None = None
    lower_limits: bool = False  # the limits are lowest values the constraints need (a minimum), not highest they allow
    tolerance: float | None = None  # relative width of the final bracket; None: exact to the whole number


@dataclass
class TableAnswer:
    """Scenarios, comparisons, sweeps and searches: rows of values over the plan's variants."""

    question: ir.Question
    kind: str
    title: str
    columns: list[tuple[str, ir.Type, str | None]]  # label, dimension, display unit
    rows: list[tuple[str, list[Any]]]  # row label, values (None: not evaluable)
    notes: list[str] = field(default_factory=list)
    best: int | None = None
    best_setting: str = ""  # a search's best row as `axis = value, ...`
    axes: list[str] = field(default_factory=list)  # a search's axes, in the order of its row labels
    plot_columns: tuple[int, ...] = ()  # a search's plotted axes: their indices into `columns`
    pareto: list[int] = field(default_factory=list)  # indices into rows
    evaluated: int = 0
    feasible: int = 0  # a search's configurations that meet its constraints
    objective_node: str = ""  # a search's objective, when it is a quantity of the plan
    # a search's axes as the plan declares them: (the static choice's name, or "" and the node
    # that holds the declared number), parallel to `axes`
    declared: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Sensitivity:
    target: str
    dim: ir.Type
    entries: list[tuple[str, float]]  # input node, elasticity d ln y / d ln x


@dataclass
class Choice:
    """A `max`, `min` or `if` in the formulas behind a solved quantity, and which branch is in effect."""

    node: str  # the quantity whose formula makes the choice
    op: str
    branches: list[ir.Expr]  # the one in effect first
    values: list[Any]  # parallel to branches (None where undefined)


@dataclass
class SolveAnswer:
    """`solve <quantity> for <instance>`: a derived quantity with the choices that decide it, or an
    input with the range over which every check of the plan holds (the two ends as asks)."""

    question: ir.Solve
    unknown: str
    dim: ir.Type
    value: Any = None
    choices: list[Choice] = field(default_factory=list)
    low: AskAnswer | None = None
    high: AskAnswer | None = None


@dataclass
class LeverAnswer:
    """A lever priced: the summary items and checks of its variant, parallel to the baseline's."""

    offered: Any  # lower.Offered
    columns: list[tuple[str, ir.Type, str | None]]  # the summary items, then the checks
    baseline: list[Any]
    values: list[Any] | None  # None: the variant is not a valid plan
    reason: str = ""  # why not, in the compiler's words


Answer = AskAnswer | TableAnswer | SolveAnswer
