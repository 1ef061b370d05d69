"""The expressions part of the elaborator: every syntax-tree expression, elaborated in the scope
of an instance (or of the plan), becomes a typed IR expression or a static value, with its
dimensions checked and every problem a diagnostic at its own span.

Contract: `Expressions.expr(e, scope)` dispatches on the node's type; names resolve to the
scope's fields first, then the program's declarations, then enum members.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .. import diagnostics as dx
from ..builtins import FUNCTIONS
from ..identity import ByIdentity
from ..source import Span
from ..syntax import ast
from . import ir
from .declarations import Declarations
from .resolve import Program, check_set_once
from .units import DIMENSIONLESS, Dim, UnitError, parse_unit
from .values import (
    FLOAT_MAX,
    EnumTypeRef,
    Instance,
    InstanceRef,
    MapRef,
    NodeMeta,
    Value,
    as_bool_expr,
    describe,
    midpoint_text,
    span_of_type,
    unit_help,
    word_span,
)

REDUCTIONS = ("sum", "max", "min")
"""What `f(body for h in enum)` may take over an enumeration's members."""


_NUMBERS: ByIdentity[ir.Lit] = ByIdentity(100_000)
"""A number written in a program → its literal (immutable), made once: a formula is elaborated in
every variant of its instance that reads a bound field."""


class Expressions(Declarations):
    def __init__(self, program: Program, sink: dx.Sink,
                 overrides: dict[tuple[str, str], ast.Expr] | None = None, lean: bool = False) -> None:
        super().__init__(program, sink, overrides, lean)
        self._dispatch: dict[type, Callable[[Any, Instance | None], Value | None]] = {
            ast.Name: self._name, ast.Attribute: self._attribute, ast.Index: self._index,
            ast.Number: self._number, ast.Bool: self._bool, ast.Unary: self._unary,
            ast.BinOp: self._binop, ast.Compare: self._compare, ast.BoolOp: self._boolop,
            ast.Call: self._call, ast.Reduce: self._reduce, ast.If: self._if, ast.Uncertain: self._range_elsewhere,
            ast.Where: self._where,
        }

    # ---- expressions ----------------------------------------------------------------------
    def expr(self, e: ast.Expr, scope: Instance | None) -> Value | None:
        return self._dispatch[type(e)](e, scope)

    def _name(self, e: ast.Name, scope: Instance | None) -> Value | None:
        for bound in reversed(self._members):  # the variable of an enclosing `sum(... for h in hour)`
            if e.id in bound:
                return bound[e.id]
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
            meta = NodeMeta(owner=base.id, field=e.attr, spec=None, ftype=None,
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
        # indexed by a reduction's variable (`load[h]` in `sum(... for h in hour)`), each term reads `load[h00]`, ...
        text = e.span.text
        if isinstance(e.key, ast.Name) and any(e.key.id in bound for bound in self._members):
            text = f"{e.value.span.text}[{key.member.name}]"
        entry, whole = inst.map_entry(name, key.member.name)
        entry_key = (inst.name, f"{name}[{key.member.name}]")
        for reached in (node_id, ir.node_id(inst.name, name)):  # the entry, or the map's own node
            if reached not in self.done:
                self.consults.setdefault(reached, set()).add(entry_key)
                self.requests.setdefault(reached, ("expr", e, scope, tuple(dict(m) for m in self._members)))
        override = self.overrides.get(entry_key)
        if override is not None:
            entry = ast.Field(override.span, ast.Path(override.span, ()), override, ast.Annotations(override.span))
        # the map as a whole, set in the instance (`hourly_load = 0.5`), stands for the entries it does not set
        default = whole.value if whole is not None else spec.decl.default if isinstance(spec.decl, ast.InputDecl) else None
        if entry is None and default is not None and (inst.name, f"{name}[{key.member.name}]") not in self.overrides:
            # `input f: map[e] unit = value`: one quantity, the map's own node, that every entry the
            # instance does not set reads (one assumption, not one per key)
            meta = NodeMeta(owner=inst.name, field=name, spec=spec, ftype=ftype,
                            notes=whole.notes if whole is not None else spec.decl.notes, overridden=whole is not None,
                            decl_span=spec.decl.name_span, type_span=span_of_type(spec.decl.type))
            return self._node(ir.node_id(inst.name, name), default, inst, meta, e.span, text)
        if entry is None and inst.abstract:
            assert ftype.dim is not None
            return ir.Ref(node_id, ftype.dim, e.span, text)
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
        meta = NodeMeta(owner=inst.name, field=f"{name}[{key.member.name}]", spec=spec, ftype=ftype,
                         notes=entry.notes, overridden=True, decl_span=spec.decl.name_span,
                         type_span=span_of_type(spec.decl.type))
        return self._node(node_id, entry.value, inst, meta, e.span, text)

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
        text = midpoint_text(e.low, e.high, middle, low.dim)
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
        made = _NUMBERS.get(e)  # the same literal in every variant that elaborates its formula
        if made is not None:
            return made
        try:
            scale, dim = parse_unit(e.units)
        except UnitError as exc:
            self._unknown_unit(exc, word_span(e, exc.word))
            return None
        value = e.value * scale
        if abs(value) > FLOAT_MAX:
            self.sink.add(dx.OVERFLOW.at(e.span, "too large", name=e.text, detail="beyond ±1.8e308",
                                         help="check the exponent: values are kept in base units and must stay within ±1.8e308"))
            return None
        return _NUMBERS.put(e, ir.Lit(value, dim, e.span, e.span.text))

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
            help=unit_help(left.dim, right.dim),
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
        args = [as_bool_expr(v) for v in (left, right)]
        if not (self._need_bool(args[0], e.left.span) and self._need_bool(args[1], e.right.span)):
            return None
        return ir.Op(e.op, tuple(args), ir.BOOL, e.span)  # type: ignore[arg-type]

    def _where(self, e: ast.Where, scope: Instance | None) -> Value | None:
        """`value where (a = x, ...)`: `value` in the variant of the current instance that binds
        `a` to `x` (computed in the current instance). `other.f where (a = x, ...)`, where `other`
        is an instance, is `f` of the variant of `other` that binds `other`'s field `a` to `x`
        (still computed in the current instance): one instance's quantity at another's arguments."""
        if scope is None:
            self.sink.add(dx.WRONG_TYPE.at(e.span, "outside an instance", expected="a formula of a kind or an instance",
                                           found="`where` at the top level",
                                           help="write `where` in a kind's formula or an instance's field, where its names are fields"))
            return None
        target, value = scope, e.value
        if isinstance(e.value, ast.Attribute):
            base = self.expr(e.value.value, scope)
            if base is None:
                return None
            if isinstance(base, InstanceRef):
                target, value = base.instance, ast.Name(e.value.attr_span, e.value.attr)
                if e.value.attr not in target.kind.fields:
                    self._unknown(e.value.attr, e.value.attr_span, list(target.kind.fields), "field",
                                  owner=f"`{target.kind.name}` `{target.name}`")
                    return None
        if not check_set_once(e.bindings, self.sink, "", "a `where` binds each field once", verb="bound"):
            return None
        bound: dict[str, tuple[ir.Expr | None, ast.Expr]] = {}
        pinned: set[str] = set()
        for b in e.bindings:
            name = b.target.steps[0].name
            if len(b.target.steps) > 1 or name not in target.kind.fields:
                self._unknown(b.target.dotted, b.target.span, list(target.kind.fields), "field",
                              owner=f"`{target.kind.name}`")
                return None
            bound_value = self.expr(b.value, scope)
            if bound_value is None:
                return None
            if isinstance(bound_value, ir.StaticBool):  # `flash_attention = false`: a verdict like any other
                bound_value = ir.Lit(Fraction(int(bound_value.value)), ir.BOOL, bound_value.span, str(bound_value.value).lower())
            if not isinstance(bound_value, (ir.Lit, ir.Ref, ir.Op)):
                self.sink.add(dx.WRONG_TYPE.at(b.value.span, "not a quantity", expected="a quantity or a verdict",
                                               found=describe(bound_value), help="`where` binds quantities; compare enum or instance choices with `compare`"))
                return None
            if self._own_value(target, name, bound_value, b.target.span):
                pinned.add(name)  # `batch = batch`: the field keeps its value, nothing varies through it
                continue
            bound[name] = (bound_value, b.value)
        if not bound:
            return self.expr(value, target)
        return self.expr(value, self.variant(target, bound, e.span, frozenset(pinned)))

    def _own_value(self, target: Instance, name: str, value: ir.Expr, span: Span) -> bool:
        """Whether a binding's value is the field's own node in the instance it varies."""
        if not isinstance(value, ir.Ref) or not value.node.endswith("." + name):
            return False
        own = self.field(target, name, span)
        return isinstance(own, ir.Ref) and own.node == value.node

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
        if node_id not in self.done and not self._adopt(node_id):
            self.done[node_id] = ftype.dim  # type: ignore[assignment]
            meta = NodeMeta(owner=trial.name, field=var.id, spec=spec, ftype=ftype, notes=None,
                             overridden=True, decl_span=spec.decl.name_span, type_span=span_of_type(spec.decl.type))
            self._record(node_id, low, e.args[1], meta)
            self.out.nodes[node_id].is_input = False
        cond = self.expr(e.args[3], trial)
        if cond is None or not self._need_bool(cond, e.args[3].span):
            return None
        cond = as_bool_expr(cond)
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

    def _reduce(self, e: ast.Reduce, scope: Instance | None) -> Value | None:
        """`sum(body for h in hour)`: body for every member of the enumeration, `h` naming it —
        one `+` (or one `max`, `min`) over the members, in their declared order."""
        if e.func not in REDUCTIONS:
            self.sink.add(dx.BAD_CALL.at(
                e.func_span, "cannot take this over an enumeration", message=f"`{e.func}(... for ...)` is not a reduction",
                help="reduce over an enumeration with " + ", ".join(f"`{f}(... for h in e)`" for f in REDUCTIONS)))
            return None
        enum = self.program.names.get(e.over)
        if not isinstance(enum, ast.EnumDecl):
            self.sink.add(dx.WRONG_TYPE.at(e.over_span, "not an enumeration", expected="an enumeration",
                                           found=f"`{e.over}`" if enum is not None else "an unknown name",
                                           help="`for h in e` takes the members of the enumeration `e` one by one"))
            return None
        terms: list[ir.Expr] = []
        for member in enum.members:
            self._members.append({e.var: ir.EnumValue(enum, member)})
            try:
                value = self.expr(e.body, scope)
            finally:
                self._members.pop()
            if value is None or not self._need_number(value, e.body.span):
                return None
            assert isinstance(value, (ir.Lit, ir.Ref, ir.Op))
            if terms and value.dim != terms[0].dim:
                self.sink.add(dx.DIMENSION_MISMATCH.at(
                    e.body.span, f"this is `{value.dim}` for `{member.name}`", what=f"`{e.func}` needs terms of one unit",
                    left=f"`{terms[0].dim}`", right=f"`{value.dim}`", help=unit_help(terms[0].dim, value.dim)))
                return None
            terms.append(value)
        if not terms:
            return None
        if e.func != "sum":
            return ir.Op(e.func, tuple(terms), terms[0].dim, e.span) if len(terms) > 1 else terms[0]
        total = terms[0]
        for term in terms[1:]:
            total = ir.Op("+", (total, term), total.dim, e.span)
        return total

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
                        secondary=[dx.Label(e.args[0].span, f"this is `{first}`")], help=unit_help(first, a.dim)))
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
                secondary=[dx.Label(e.then.span, f"this is `{then.dim}`")], help=unit_help(then.dim, orelse.dim)))
            return None
        return ir.Op("if", (cond, then, orelse), then.dim, e.span)  # type: ignore[arg-type]


def _vanished(node: ast.Expr, value: ir.Expr) -> bool:
    """A conditional whose static condition chose a literal zero."""
    return isinstance(node, ast.If) and isinstance(value, ir.Lit) and value.value == 0
