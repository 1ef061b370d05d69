"""The one table of units, and a small exact dimension algebra.

Contract
- `BASES` are the ten base dimensions. Every quantity is stored as a float in the canonical
  base units `s, B, FLOP, tokens, requests, users, devices, USD, W, g`.
- `Dim` is an immutable, hashable vector of `Fraction` exponents over `BASES` with `*`, `/`,
  `**`; `DIMENSIONLESS` is the zero vector; `Dim.of(bytes=1, time=-1)` builds one.
  `str(dim)` is the canonical unit text (`B/s`, `requests/user/s`, `W·s`, `1/s`, `1`):
  numerator symbols joined by `·`, then `/symbol` per denominator (singular nouns, time last).
  `dim.describe()` is the phrase diagnostics use (`a bandwidth (B/s)`, `a plain number`).
- `UNITS` maps every accepted unit word to `(scale, Dim)`: the exact size of one such unit in
  base units (a `Fraction`, never a float). It is generated from the data tables below;
  `UNIT_NAMES` is its key set. `KB`, `FLOPS`, `Kb` ... are rejected as ambiguous.
- `parse_unit(words)` multiplies the lexer's unit words (`["M", "users"]`). A word is `/`,
  `*` or `·` separated factors with optional integer exponents (`TB/s`, `s^-1`) and may start
  with `/` (`/h` after `$2.5`). It raises `UnitError(word, factor, suggestion)` on unknown
  or malformed factors. `unit_scale(text)` is `parse_unit(text.split())`.
- `format_quantity(value, dim, unit=None)` renders a base-unit value for humans, in `unit`
  if given (same Dim, else ValueError) or in a unit picked by dimension; `format_number`
  gives 4 significant digits with `,` separators. Pure functions: no locale, no globals.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Final

# ---- tables ---------------------------------------------------------------------------------

BASES: Final = (
    "time", "bytes", "flop", "tokens", "requests", "users", "devices", "currency", "power", "mass")

#: base -> (symbol in a numerator, symbol in a denominator)
BASE_SYMBOLS: Final[Mapping[str, tuple[str, str]]] = MappingProxyType({
    "time": ("s", "s"), "bytes": ("B", "B"), "flop": ("FLOP", "FLOP"),
    "tokens": ("tokens", "token"), "requests": ("requests", "request"),
    "users": ("users", "user"), "devices": ("devices", "device"),
    "currency": ("USD", "USD"), "power": ("W", "W"), "mass": ("g", "g"),
})
#: order of symbols in `str(dim)`: time last, so `requests/user/s` and `W·s`
_DISPLAY_ORDER: Final = (
    "bytes", "flop", "tokens", "requests", "users", "devices", "currency", "power", "mass", "time")
COUNTING_BASES: Final = frozenset({"tokens", "requests", "users", "devices"})

_F = Fraction
DECIMAL_PREFIXES: Final[Mapping[str, Fraction]] = MappingProxyType(
    {"k": _F(10**3), "M": _F(10**6), "G": _F(10**9), "T": _F(10**12), "P": _F(10**15), "E": _F(10**18)})
BINARY_PREFIXES: Final[Mapping[str, Fraction]] = MappingProxyType(
    {"Ki": _F(2**10), "Mi": _F(2**20), "Gi": _F(2**30), "Ti": _F(2**40), "Pi": _F(2**50), "Ei": _F(2**60)})
#: standalone multiplier words, for literals like `100 M users`
MULTIPLIERS: Final[Mapping[str, Fraction]] = MappingProxyType(
    {"k": _F(10**3), "M": _F(10**6), "G": _F(10**9), "T": _F(10**12)})
_SUBSECOND: Final = {
    "m": _F(1, 10**3), "u": _F(1, 10**6), "µ": _F(1, 10**6), "μ": _F(1, 10**6), "n": _F(1, 10**9)}
_KMG: Final = {p: DECIMAL_PREFIXES[p] for p in ("k", "M", "G")}
_BYTE_PREFIXES: Final = {**DECIMAL_PREFIXES, **BINARY_PREFIXES}
_NO_PREFIX: Final[Mapping[str, Fraction]] = {}
_YEAR: Final = _F(31_557_600)  # 365.25 days, exactly

_TIME: Final = {"time": 1}
_ENERGY: Final = {"power": 1, "time": 1}
_NUMBER: Final[Mapping[str, int]] = {}

_UnitRow = tuple[tuple[str, ...], Fraction, Mapping[str, int], Mapping[str, Fraction]]
#: (names, size in base units, dimension as base -> exponent, prefixes allowed on every name)
UNIT_ROWS: Final[tuple[_UnitRow, ...]] = (
    (("s",), _F(1), _TIME, _SUBSECOND),
    (("sec", "secs", "second", "seconds"), _F(1), _TIME, _NO_PREFIX),
    (("min", "minute", "minutes"), _F(60), _TIME, _NO_PREFIX),
    (("h", "hr", "hrs", "hour", "hours"), _F(3600), _TIME, _NO_PREFIX),
    (("day", "days"), _F(86_400), _TIME, _NO_PREFIX),
    (("week", "weeks"), _F(604_800), _TIME, _NO_PREFIX),
    (("month", "months"), _YEAR / 12, _TIME, _NO_PREFIX),
    (("year", "years"), _YEAR, _TIME, _NO_PREFIX),
    (("B",), _F(1), {"bytes": 1}, _BYTE_PREFIXES),
    (("byte", "bytes"), _F(1), {"bytes": 1}, _NO_PREFIX),
    (("bit",), _F(1, 8), {"bytes": 1}, _BYTE_PREFIXES),
    (("bits",), _F(1, 8), {"bytes": 1}, _NO_PREFIX),
    (("bps",), _F(1, 8), {"bytes": 1, "time": -1}, DECIMAL_PREFIXES),  # network rates: `400 Gbps` = `400 Gbit/s`
    (("FLOP", "FLOPs"), _F(1), {"flop": 1}, DECIMAL_PREFIXES),
    (("tokens", "token", "tok"), _F(1), {"tokens": 1}, _NO_PREFIX),
    (("requests", "request", "req", "reqs"), _F(1), {"requests": 1}, _NO_PREFIX),
    (("users", "user"), _F(1), {"users": 1}, _NO_PREFIX),
    (("devices", "device", "GPU", "GPUs"), _F(1), {"devices": 1}, _NO_PREFIX),
    (("USD", "$"), _F(1), {"currency": 1}, _NO_PREFIX),
    (("W",), _F(1), {"power": 1}, _KMG),
    (("watt", "watts"), _F(1), {"power": 1}, _NO_PREFIX),
    (("J",), _F(1), _ENERGY, _KMG),
    (("Wh",), _F(3600), _ENERGY, _KMG),
    (("g",), _F(1), {"mass": 1}, _KMG),  # of CO₂, for a fleet's emissions: `366 g/kWh`
    (("tonne", "tonnes"), _F(10**6), {"mass": 1}, _NO_PREFIX),
    (("count", "x"), _F(1), _NUMBER, _NO_PREFIX),
    (("%", "percent"), _F(1, 100), _NUMBER, _NO_PREFIX),
    *(((word,), size, _NUMBER, _NO_PREFIX) for word, size in MULTIPLIERS.items()),
)

#: words rejected on purpose, with the hint to show instead of a fuzzy match
AMBIGUOUS_UNITS: Final[Mapping[str, str]] = MappingProxyType({
    "KB": "kB or KiB", "Kb": "kbit or Kibit", "kb": "kbit or kB", "Kbit": "kbit or Kibit",
    "K": "k", "b": "bit or B", "FLOPS": "FLOP/s", "flops": "FLOP/s",
    **{f"{p}FLOPS": f"{p}FLOP/s" for p in DECIMAL_PREFIXES},
    **{f"{p}flops": f"{p}FLOP/s" for p in DECIMAL_PREFIXES},
    **{f"{p}b": f"{p}bit or {p}B" for p in ("M", "G", "T", "P", "E")},
    # `GBs`: gigabytes, or gigabytes per second; not the network's `Gbps`
    **{f"{p}Bs": f"{p}B or {p}B/s" for p in (*DECIMAL_PREFIXES, *BINARY_PREFIXES)},
})

# ---- dimensions -----------------------------------------------------------------------------

_ZERO: Final = (Fraction(0),) * len(BASES)


@dataclass(frozen=True, eq=False)
class Dim:
    """Exponents of each base dimension, in `BASES` order."""

    exponents: tuple[Fraction, ...] = _ZERO
    # the exponents as plain integers (numerator, denominator, ...): dimensions are hashed and
    # compared thousands of times per compile, and integers compare in C, Fractions in Python
    _key: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    _hash: int = field(default=0, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.exponents) != len(BASES):
            raise ValueError(f"a Dim needs {len(BASES)} exponents, got {len(self.exponents)}")
        exponents = tuple(Fraction(e) for e in self.exponents)
        key = tuple(n for e in exponents for n in (e.numerator, e.denominator))
        object.__setattr__(self, "exponents", exponents)
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Dim):
            return NotImplemented
        return self._key == other._key

    @classmethod
    def of(cls, **powers: int | Fraction) -> Dim:
        unknown = sorted(set(powers) - set(BASES))
        if unknown:
            raise ValueError(f"unknown base dimension(s) {unknown}; the bases are {BASES}")
        return cls(tuple(Fraction(powers.get(base, 0)) for base in BASES))

    def exponent(self, base: str) -> Fraction:
        return self.exponents[BASES.index(base)]

    @property
    def is_dimensionless(self) -> bool:
        return not any(self.exponents)

    # The algebra is memoised: a plan combines a few dozen dimensions thousands of times.
    def __mul__(self, other: Dim) -> Dim:
        return _combine(self, other, 1)

    def __truediv__(self, other: Dim) -> Dim:
        return _combine(self, other, -1)

    def __pow__(self, power: int | Fraction) -> Dim:
        return _power(self, Fraction(power))

    def __str__(self) -> str:
        if self.is_dimensionless:
            return "1"
        powers = [(base, self.exponent(base)) for base in _DISPLAY_ORDER]
        numerator = [_power_text(BASE_SYMBOLS[b][0], e) for b, e in powers if e > 0]
        denominator = [_power_text(BASE_SYMBOLS[b][1], -e) for b, e in powers if e < 0]
        return "·".join(numerator or ["1"]) + "".join("/" + d for d in denominator)

    def __repr__(self) -> str:
        args = ", ".join(f"{b}={_fraction_text(e)}" for b, e in zip(BASES, self.exponents) if e)
        return f"Dim.of({args})"

    def describe(self) -> str:
        """The phrase for diagnostics: `a plain number`, `a bandwidth (B/s)`, `tokens/s`."""
        if self.is_dimensionless:
            return "a plain number"
        kind = DIM_KINDS.get(self)
        return f"{kind} ({self})" if kind else str(self)


@functools.lru_cache(maxsize=8192)
def _combine(a: Dim, b: Dim, sign: int) -> Dim:
    return Dim(tuple(x + sign * y for x, y in zip(a.exponents, b.exponents, strict=True)))


@functools.lru_cache(maxsize=1024)
def _power(a: Dim, power: Fraction) -> Dim:
    return Dim(tuple(x * power for x in a.exponents))


def _fraction_text(value: Fraction) -> str:
    return str(value.numerator) if value.denominator == 1 else f"({value})"


def _power_text(symbol: str, exponent: Fraction) -> str:
    return symbol if exponent == 1 else f"{symbol}^{_fraction_text(exponent)}"


DIMENSIONLESS: Final = Dim()
_TIME_DIM: Final = Dim.of(time=1)
_BYTES_DIM: Final = Dim.of(bytes=1)
_FLOP_DIM: Final = Dim.of(flop=1)
_POWER_DIM: Final = Dim.of(power=1)
_MONEY_DIM: Final = Dim.of(currency=1)

DIM_KINDS: Final[Mapping[Dim, str]] = MappingProxyType({
    _TIME_DIM: "a duration", _BYTES_DIM: "a size", _BYTES_DIM / _TIME_DIM: "a bandwidth",
    _FLOP_DIM: "an amount of compute", _FLOP_DIM / _TIME_DIM: "a compute rate",
    _MONEY_DIM: "an amount of money", _MONEY_DIM / _TIME_DIM: "a cost rate",
    _POWER_DIM: "a power", _POWER_DIM * _TIME_DIM: "an energy",
})


def _build_units() -> dict[str, tuple[Fraction, Dim]]:
    table: dict[str, tuple[Fraction, Dim]] = {}
    for names, size, powers, prefixes in UNIT_ROWS:
        dim = Dim.of(**powers)
        entries = [(n, size) for n in names]
        entries += [(p + n, factor * size) for n in names for p, factor in prefixes.items()]
        for name, scale in entries:
            if name in table:
                raise ValueError(f"unit `{name}` is defined twice")
            table[name] = (scale, dim)
    return table


UNITS: Final[Mapping[str, tuple[Fraction, Dim]]] = MappingProxyType(_build_units())
UNIT_NAMES: Final = frozenset(UNITS)
#: lower-cased name -> name, to catch case slips (`gib` -> `GiB`); first in sorted order wins
_BY_LOWER: Final = {n.lower(): n for n in sorted(UNIT_NAMES, reverse=True)}

# ---- parsing --------------------------------------------------------------------------------


class UnitError(ValueError):
    """An unknown or malformed factor `factor` inside the unit word `word`."""

    def __init__(self, word: str, factor: str, suggestion: str | None, reason: str = "unknown unit") -> None:
        self.word, self.factor, self.suggestion, self.reason = word, factor, suggestion, reason
        where = "" if word == factor else f" in `{word}`"
        hint = f"; did you mean `{suggestion}`?" if suggestion else ""
        super().__init__(f"{reason} `{factor}`{where}{hint}")


_FACTOR: Final = re.compile(r"([*/·]?)([^*/·^\s]+)(?:\^(-?\d+))?")
_MAX_EXPONENT: Final = 12
_ONE: Final = (Fraction(1), DIMENSIONLESS)  # the `1` of `1/s`, so `str(dim)` parses back


def suggest(factor: str) -> str | None:
    """A hint for an unknown unit word: a specific one for ambiguous words, else the closest."""
    if factor in AMBIGUOUS_UNITS:
        return AMBIGUOUS_UNITS[factor]
    if factor.lower() in _BY_LOWER:
        return _BY_LOWER[factor.lower()]
    close = difflib.get_close_matches(factor.lower(), list(_BY_LOWER), n=1, cutoff=0.6)
    return _BY_LOWER[close[0]] if close else None


def _factors(word: str) -> Iterator[tuple[str, int]]:
    """(name, signed exponent) for each factor of one unit word."""
    pos = 0
    while True:
        match = _FACTOR.match(word, pos)
        allowed = ("", "/") if pos == 0 else ("*", "/", "·")
        if match is None or match.group(1) not in allowed:
            raise UnitError(word, word[pos:], None, reason="malformed unit")
        exponent = int(match.group(3) or 1)
        if abs(exponent) > _MAX_EXPONENT:
            raise UnitError(word, f"{match.group(2)}^{exponent}", None, reason="exponent too large in unit")
        yield match.group(2), -exponent if match.group(1) == "/" else exponent
        pos = match.end()
        if pos == len(word):
            return


def parse_unit(words: Sequence[str]) -> tuple[Fraction, Dim]:
    """Multiply unit words (juxtaposition) into an exact (scale in base units, Dim)."""
    if isinstance(words, str):
        raise TypeError("parse_unit takes a sequence of words; use unit_scale for a string")
    return _parse_words(tuple(words))


@functools.lru_cache(maxsize=4096)
def _parse_words(words: tuple[str, ...]) -> tuple[Fraction, Dim]:
    # Cached: a plan repeats a few dozen unit words hundreds of times.
    scale, dim = Fraction(1), DIMENSIONLESS
    for word in words:
        for name, exponent in _factors(word):
            unit = _ONE if name == "1" else UNITS.get(name)
            if unit is None:
                raise UnitError(word, name, suggest(name))
            scale *= unit[0] ** exponent
            dim *= unit[1] ** exponent
    return scale, dim


def unit_scale(unit: str) -> tuple[Fraction, Dim]:
    """`parse_unit` of a unit expression written as one string (`"M users"`, `"GiB"`)."""
    return parse_unit(unit.split())


# ---- formatting -----------------------------------------------------------------------------

_Ladder = tuple[tuple[float, float, str], ...]  # (use from this magnitude, unit size, label)


def _prefix_ladder(symbol: str, prefixes: Mapping[str, Fraction]) -> _Ladder:
    return ((0.0, 1.0, symbol), *((float(f), float(f), p + symbol) for p, f in prefixes.items()))


_BINARY_TO_P: Final = {p: BINARY_PREFIXES[p] for p in ("Ki", "Mi", "Gi", "Ti", "Pi")}
_DECIMAL_TO_T: Final = {p: DECIMAL_PREFIXES[p] for p in ("k", "M", "G", "T")}
_TIME_LADDER: Final[_Ladder] = (
    (0.0, 1e-9, "ns"), (1e-6, 1e-6, "µs"), (1e-3, 1e-3, "ms"), (1.0, 1.0, "s"),
    (120.0, 60.0, "min"), (7200.0, 3600.0, "h"), (172_800.0, 86_400.0, "days"),
)
#: the unit ladder used by `format_quantity` when no unit is asked for
AUTO_LADDERS: Final[Mapping[Dim, _Ladder]] = MappingProxyType({
    _BYTES_DIM: _prefix_ladder("B", _BINARY_TO_P),
    _BYTES_DIM / _TIME_DIM: _prefix_ladder("B/s", _DECIMAL_TO_T),
    _FLOP_DIM: _prefix_ladder("FLOP", DECIMAL_PREFIXES),
    _FLOP_DIM / _TIME_DIM: _prefix_ladder("FLOP/s", DECIMAL_PREFIXES),
    _TIME_DIM: _TIME_LADDER,
    _POWER_DIM: _prefix_ladder("W", _KMG),
    Dim.of(mass=1): ((0.0, 1.0, "g"), (1e3, 1e3, "kg"), (1e6, 1e6, "tonnes")),
})
_RATE_MULTIPLIERS: Final = ("k", "M", "G")
_SIG: Final = 4
_ROUNDS_TO_ONE: Final = 1 - 0.5 * 10.0**-_SIG  # 0.99995 shows as 1.000 with 4 digits
_PLAIN_RANGE: Final = (Decimal("1e-3"), Decimal("1e15"))


def _strip_zeros(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_number(x: float, sig: int = 4) -> str:
    """`sig` significant digits, `,` thousands separators, no trailing zeros; scientific
    (`1.5e-5`) outside 1e-3 <= |x| < 1e15."""
    if sig < 1:
        raise ValueError("sig must be at least 1")
    if not math.isfinite(x):
        return str(float(x))
    if x == 0:
        return "0"
    exact = Decimal(repr(float(x)))
    rounded = exact.quantize(Decimal(1).scaleb(exact.adjusted() - sig + 1), rounding=ROUND_HALF_UP)
    low, high = _PLAIN_RANGE
    if low <= abs(rounded) < high:
        return _strip_zeros(format(rounded, ",f"))
    mantissa = _strip_zeros(format(rounded.scaleb(-rounded.adjusted()), "f"))
    return f"{mantissa}e{rounded.adjusted()}"


def _is_count(dim: Dim) -> bool:
    """A pure count of one counting base (`tokens`, `users`, ...)."""
    return dim.is_dimensionless or dim in _COUNTS


_COUNTS: Final = frozenset(Dim.of(**{base: 1}) for base in COUNTING_BASES)


def _is_counting_rate(dim: Dim) -> bool:
    """One counting base in the numerator over anything: `tokens/s`, `requests/user/day`."""
    positive = [(b, e) for b, e in zip(BASES, dim.exponents) if e > 0]
    return (len(positive) == 1 and positive[0][0] in COUNTING_BASES and positive[0][1] == 1
            and any(e < 0 for e in dim.exponents))


#: per-something quantities (`B/token`, `FLOP/token`, `W/device`) get their numerator's prefixes
_NUMERATOR_LADDERS: Final = (("bytes", "B", _BINARY_TO_P), ("flop", "FLOP", DECIMAL_PREFIXES), ("power", "W", _KMG),
                              ("mass", "g", {"k": DECIMAL_PREFIXES["k"]}))
#: derived units shown by their name, alone or per count: energy is `J` and `J/token`, not `W·s/token`
_NAMED_LADDERS: Final = ((Dim.of(**_ENERGY), "J", _KMG),)


def _per_count(dim: Dim) -> bool:
    """`1/token`, `1/request/user`: only counting bases, all in the denominator."""
    return not dim.is_dimensionless and all(
        e == 0 or (e < 0 and base in COUNTING_BASES) for base, e in zip(BASES, dim.exponents))


def _ladder_for(dim: Dim) -> _Ladder:
    if dim in AUTO_LADDERS:
        return AUTO_LADDERS[dim]
    for named, symbol, prefixes in _NAMED_LADDERS:
        if dim == named:
            return _prefix_ladder(symbol, prefixes)
        if _per_count(dim / named):
            return _prefix_ladder(symbol + str(dim / named)[1:], prefixes)
    text = str(dim)
    for base, symbol, ladder in _NUMERATOR_LADDERS:
        if dim.exponent(base) == 1 and text.startswith(symbol + "/"):
            return _prefix_ladder(text, ladder)
    if _is_counting_rate(dim):
        steps = ((float(MULTIPLIERS[m]), float(MULTIPLIERS[m]), f"{m} {dim}") for m in _RATE_MULTIPLIERS)
        return ((0.0, 1.0, str(dim)), *steps)
    return ((0.0, 1.0, "" if dim.is_dimensionless else str(dim)),)


def _pick(ladder: _Ladder, value: float) -> tuple[float, str]:
    """The largest step the magnitude reaches (once rounded); the base step for 0/inf/nan."""
    magnitude = abs(value)
    if magnitude == 0 or not math.isfinite(magnitude):
        return next(((size, label) for _, size, label in ladder if size == 1.0), ladder[0][1:])
    chosen = ladder[0]
    for step in ladder:
        if magnitude >= step[0] * _ROUNDS_TO_ONE:
            chosen = step
    return chosen[1], chosen[2]


def _render(x: float, label: str, exact: bool) -> str:
    """Number then label; exact integers of counts in full; `$` before plain dollars."""
    integral = exact and math.isfinite(x) and x.is_integer() and abs(x) < 1e15
    if label in ("USD", "$"):
        return ("-" if x < 0 else "") + "$" + _render(abs(x), "", integral)
    number = f"{int(x):,}" if integral else format_number(x, _SIG)
    return f"{number} {label}" if label else number


def format_quantity(value: float, dim: Dim, unit: str | None = None) -> str:
    """Human text for `value` (in base units of `dim`), in `unit` if given, else a unit
    chosen by dimension (`128 KiB`, `20.5 ms`, `34.72 k requests/s`)."""
    if unit is not None:
        scale, unit_dim = unit_scale(unit)
        if unit_dim != dim:
            raise ValueError(f"cannot show {dim.describe()} in `{unit}`, which is {unit_dim.describe()}")
        shown = float(Fraction(value) / scale) if math.isfinite(value) else value
        return _render(shown, unit.strip(), _is_count(dim))
    size, label = _pick(_ladder_for(dim), value)
    return _render(value / size, label, _is_count(dim))
