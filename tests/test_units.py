"""Tests for the unit table, the dimension algebra and quantity formatting."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from planc.semantics.units import (
    BASES,
    BINARY_PREFIXES,
    DECIMAL_PREFIXES,
    DIMENSIONLESS,
    UNIT_NAMES,
    UNITS,
    Dim,
    UnitError,
    format_number,
    format_quantity,
    parse_unit,
    unit_scale,
)

SIZE = Dim.of(bytes=1)
TIME = Dim.of(time=1)
FLOP = Dim.of(flop=1)
MONEY = Dim.of(currency=1)
TOKENS = Dim.of(tokens=1)
REQUESTS = Dim.of(requests=1)


# ---- exactness and the table ----------------------------------------------------------------

def test_decimal_and_binary_bytes_are_exact() -> None:
    assert unit_scale("GB") == (Fraction(10**9), SIZE)
    assert unit_scale("GiB") == (Fraction(2**30), SIZE)
    assert unit_scale("kB") == (Fraction(1000), SIZE)
    assert unit_scale("KiB") == (Fraction(1024), SIZE)
    assert unit_scale("EiB") == (Fraction(2**60), SIZE)
    assert 80 * unit_scale("GB")[0] != 80 * unit_scale("GiB")[0]
    assert 80 * unit_scale("GiB")[0] - 80 * unit_scale("GB")[0] == 80 * (2**30 - 10**9)


def test_bits_are_an_eighth_of_a_byte() -> None:
    assert unit_scale("bit") == (Fraction(1, 8), SIZE)
    assert unit_scale("Gbit") == (Fraction(10**9, 8), SIZE)
    assert unit_scale("Kibit") == (Fraction(1024, 8), SIZE)
    assert unit_scale("bits")[0] == unit_scale("bit")[0]


def test_network_rates_in_bits_per_second() -> None:
    # `400 Gbps` is how a NIC is sold: 400 Gbit/s = 50 GB/s
    assert unit_scale("Gbps") == unit_scale("Gbit/s") == (Fraction(10**9, 8), SIZE / TIME)
    assert 400 * unit_scale("Gbps")[0] == 50 * unit_scale("GB/s")[0]
    assert unit_scale("Mbps")[0] == Fraction(10**6, 8)


@pytest.mark.parametrize(
    ("unit", "seconds"),
    [("ms", Fraction(1, 1000)), ("us", Fraction(1, 10**6)), ("µs", Fraction(1, 10**6)),
     ("ns", Fraction(1, 10**9)), ("min", 60), ("h", 3600), ("hours", 3600), ("day", 86_400),
     ("weeks", 604_800), ("year", 31_557_600), ("years", 31_557_600), ("month", 2_629_800)],
)
def test_time_units(unit: str, seconds: Fraction | int) -> None:
    assert unit_scale(unit) == (Fraction(seconds), TIME)


def test_year_is_365_25_days_and_month_a_twelfth() -> None:
    assert unit_scale("year")[0] == Fraction(1461, 4) * unit_scale("day")[0]
    assert unit_scale("month")[0] * 12 == unit_scale("year")[0]


def test_other_families() -> None:
    assert unit_scale("TFLOP") == (Fraction(10**12), FLOP)
    assert unit_scale("FLOPs") == unit_scale("FLOP")
    assert unit_scale("GPUs") == (Fraction(1), Dim.of(devices=1))
    assert unit_scale("$") == unit_scale("USD") == (Fraction(1), MONEY)
    assert unit_scale("kW") == (Fraction(1000), Dim.of(power=1))
    assert unit_scale("kWh") == (Fraction(3_600_000), Dim.of(power=1, time=1))
    assert unit_scale("J") == unit_scale("W*s")
    assert unit_scale("tok") == unit_scale("tokens") == (Fraction(1), TOKENS)
    assert unit_scale("req") == (Fraction(1), REQUESTS)


def test_dimensionless_words() -> None:
    assert unit_scale("%") == (Fraction(1, 100), DIMENSIONLESS)
    assert unit_scale("percent") == (Fraction(1, 100), DIMENSIONLESS)
    assert unit_scale("x") == (Fraction(1), DIMENSIONLESS)
    assert unit_scale("count") == (Fraction(1), DIMENSIONLESS)
    assert [unit_scale(m)[0] for m in ("k", "M", "G", "T")] == [10**3, 10**6, 10**9, 10**12]
    assert "P" not in UNIT_NAMES and "KB" not in UNIT_NAMES and "FLOPS" not in UNIT_NAMES


def test_unit_names_match_table() -> None:
    assert frozenset(UNITS) == UNIT_NAMES
    assert {"GiB", "TB", "Gbit", "EFLOP", "µs", "months", "GW", "Wh"} <= UNIT_NAMES


# ---- parsing ----------------------------------------------------------------------------------

def test_compound_units() -> None:
    assert parse_unit(["TB/s"]) == (Fraction(10**12), Dim.of(bytes=1, time=-1))
    assert parse_unit(["requests/user/day"]) == (
        Fraction(1, 86_400), Dim.of(requests=1, users=-1, time=-1))
    assert parse_unit(["USD/h"]) == (Fraction(1, 3600), Dim.of(currency=1, time=-1))
    assert parse_unit(["s^-1"]) == (Fraction(1), Dim.of(time=-1))
    assert parse_unit(["B*s"]) == (Fraction(1), Dim.of(bytes=1, time=1))
    assert parse_unit(["ms^2"]) == (Fraction(1, 10**6), Dim.of(time=2))
    assert parse_unit(["GB/s^2"]) == (Fraction(10**9), Dim.of(bytes=1, time=-2))


def test_juxtaposition_multiplies() -> None:
    assert parse_unit(["M", "users"]) == (Fraction(10**6), Dim.of(users=1))
    assert parse_unit(["k", "tokens/s"]) == (Fraction(1000), Dim.of(tokens=1, time=-1))
    assert unit_scale("M users") == parse_unit(["M", "users"])
    assert parse_unit([]) == (Fraction(1), DIMENSIONLESS)


def test_leading_slash_means_per() -> None:
    assert parse_unit(["/h"]) == (Fraction(1, 3600), Dim.of(time=-1))
    # `$2.5/h`: the money literal supplies USD, the word supplies `/h`
    assert parse_unit(["USD", "/h"]) == parse_unit(["USD/h"])


@pytest.mark.parametrize(
    ("word", "factor", "suggestion"),
    [("GBs", "GBs", "GB or GB/s"), ("GiBs", "GiBs", "GiB or GiB/s"), ("KB", "KB", "kB or KiB"), ("FLOPS", "FLOPS", "FLOP/s"),
     ("TFLOPS", "TFLOPS", "TFLOP/s"), ("Kb", "Kb", "kbit or Kibit"), ("KB/s", "KB", "kB or KiB"),
     ("gib", "gib", "GiB"), ("GB/sek", "sek", "sec"), ("xyzzy", "xyzzy", None)],
)
def test_unknown_units_suggest(word: str, factor: str, suggestion: str | None) -> None:
    with pytest.raises(UnitError) as caught:
        parse_unit([word])
    assert (caught.value.word, caught.value.factor, caught.value.suggestion) == (word, factor, suggestion)
    assert factor in str(caught.value)


@pytest.mark.parametrize("word", ["TB//s", "s^", "*s", "", "s^99"])
def test_malformed_words(word: str) -> None:
    with pytest.raises(UnitError) as caught:
        parse_unit([word])
    assert caught.value.suggestion is None


def test_a_string_is_not_a_word_list() -> None:
    with pytest.raises(TypeError):
        parse_unit("GB")


# ---- dimension algebra ------------------------------------------------------------------------

def test_dim_algebra() -> None:
    bandwidth = SIZE / TIME
    assert bandwidth == Dim.of(bytes=1, time=-1)
    assert bandwidth * TIME == SIZE
    assert Dim.of(time=2) == TIME ** 2
    assert (TIME ** 2) ** Fraction(1, 2) == TIME
    assert (TIME ** Fraction(1, 2)).exponent("time") == Fraction(1, 2)
    assert (SIZE / SIZE).is_dimensionless and not SIZE.is_dimensionless
    assert Dim.of() == DIMENSIONLESS and DIMENSIONLESS.is_dimensionless
    assert len({bandwidth, Dim.of(time=-1, bytes=1), SIZE}) == 2
    assert len(SIZE.exponents) == len(BASES)
    assert all(isinstance(e, Fraction) for e in Dim((1,) * len(BASES)).exponents)  # type: ignore[arg-type]


def test_dim_rejects_bad_input() -> None:
    with pytest.raises(ValueError):
        Dim.of(bites=1)
    with pytest.raises(ValueError):
        Dim((Fraction(1),))


@pytest.mark.parametrize(
    ("dim", "text"),
    [(Dim.of(bytes=1, time=-1), "B/s"), (Dim.of(flop=1, time=-1), "FLOP/s"),
     (Dim.of(tokens=1, time=-1), "tokens/s"), (Dim.of(requests=1, users=-1, time=-1), "requests/user/s"),
     (Dim.of(flop=1, tokens=-1), "FLOP/token"), (Dim.of(currency=1, time=-1), "USD/s"),
     (Dim.of(bytes=1, tokens=-1), "B/token"), (Dim.of(time=-1), "1/s"), (Dim.of(time=2), "s^2"),
     (Dim.of(power=1, time=1), "W·s"), (Dim.of(currency=1, devices=-1, time=-1), "USD/device/s"),
     (Dim.of(time=Fraction(1, 2)), "s^(1/2)"), (DIMENSIONLESS, "1")],
)
def test_dim_str(dim: Dim, text: str) -> None:
    assert str(dim) == text


def test_describe() -> None:
    assert DIMENSIONLESS.describe() == "a plain number"
    assert (SIZE / TIME).describe() == "a bandwidth (B/s)"
    assert TIME.describe() == "a duration (s)"
    assert Dim.of(tokens=1, time=-1).describe() == "tokens/s"
    assert repr(SIZE / TIME) == "Dim.of(time=-1, bytes=1)"


# ---- formatting -------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("value", "dim", "text"),
    [(131_072, SIZE, "128 KiB"), (70_553_706_496, SIZE, "65.71 GiB"), (512, SIZE, "512 B"),
     (1023.99 * 1024, SIZE, "1 MiB"), (3.35e12, SIZE / TIME, "3.35 TB/s"),
     (0.0205, TIME, "20.5 ms"), (5e-7, TIME, "500 ns"), (90, TIME, "90 s"), (300, TIME, "5 min"),
     (10_800, TIME, "3 h"), (360_000, TIME, "4.167 days"), (0, TIME, "0 s"),
     (989e12, FLOP / TIME, "989 TFLOP/s"), (1.979e15, FLOP / TIME, "1.979 PFLOP/s"),
     (1.6e10, FLOP, "16 GFLOP"), (700, Dim.of(power=1), "700 W"), (1.2e6, Dim.of(power=1), "1.2 MW"),
     (8_030_261_248, TOKENS, "8,030,261,248 tokens"), (8_030_261_248, DIMENSIONLESS, "8,030,261,248"),
     (0.5, DIMENSIONLESS, "0.5"), (34_722.2, REQUESTS / TIME, "34.72 k requests/s"),
     (2.5e6, TOKENS / TIME, "2.5 M tokens/s"), (12, REQUESTS / TIME, "12 requests/s"),
     (1234.5, MONEY, "$1,235"), (-5.5, MONEY, "-$5.5"),
     (3.6e6, Dim.of(power=1, time=1), "3.6 MJ"), (0.9146, Dim.of(power=1, time=1, tokens=-1), "0.9146 J/token"),
     (2500, Dim.of(power=1, time=1, requests=-1), "2.5 kJ/request"), (700, Dim.of(power=1, devices=-1), "700 W/device"),
     (2.0, Dim.of(flop=1, tokens=-1), "2 FLOP/token")],
)
def test_format_quantity_auto(value: float, dim: Dim, text: str) -> None:
    assert format_quantity(value, dim) == text


def test_format_quantity_in_a_given_unit() -> None:
    assert format_quantity(100 / 2_629_800, MONEY / TIME, "USD/month") == "100 USD/month"
    assert format_quantity(80e9, SIZE, "GB") == "80 GB"
    assert format_quantity(80 * 2**30, SIZE, "GB") == "85.9 GB"
    assert format_quantity(1234, MONEY, "USD") == "$1,234"
    assert format_quantity(0.25, DIMENSIONLESS, "%") == "25 %"
    assert format_quantity(0.0205, TIME, "s") == "0.0205 s"
    assert format_quantity(8_030_261_248, TOKENS, "M tokens") == "8,030 M tokens"
    assert format_quantity(50_000, TOKENS / TIME, "tokens/s") == "50,000 tokens/s"
    with pytest.raises(ValueError, match="cannot show"):
        format_quantity(1.0, SIZE, "ms")


@pytest.mark.parametrize(
    ("x", "text"),
    [(0, "0"), (0.0205, "0.0205"), (1_234_567, "1,235,000"), (-1234.5, "-1,235"), (999.96, "1,000"),
     (8_030_261_248.0, "8,030,000,000"), (0.001, "0.001"), (1e-5, "1e-5"), (1.5e20, "1.5e20"),
     (1e15, "1e15"), (128.0, "128"), (float("inf"), "inf")],
)
def test_format_number(x: float, text: str) -> None:
    assert format_number(x) == text


def test_format_number_digits() -> None:
    assert format_number(3.14159, sig=2) == "3.1"
    assert format_number(3.14159, sig=6) == "3.14159"


# ---- properties -------------------------------------------------------------------------------

_PREFIXED = st.one_of(
    st.tuples(st.sampled_from(sorted(DECIMAL_PREFIXES)), st.sampled_from(["B", "bit", "FLOP", "FLOPs"])),
    st.tuples(st.sampled_from(sorted(BINARY_PREFIXES)), st.sampled_from(["B", "bit"])),
    st.tuples(st.sampled_from(["k", "M", "G"]), st.sampled_from(["W", "J", "Wh"])),
)


@given(_PREFIXED)
def test_prefixed_unit_is_prefix_times_base(pair: tuple[str, str]) -> None:
    prefix, base = pair
    factor = {**DECIMAL_PREFIXES, **BINARY_PREFIXES}[prefix]
    base_scale, base_dim = unit_scale(base)
    assert unit_scale(prefix + base) == (factor * base_scale, base_dim)


@given(st.tuples(*(st.integers(-3, 3) for _ in BASES)))
def test_str_of_an_integer_dim_parses_back(powers: tuple[int, ...]) -> None:
    dim = Dim.of(**dict(zip(BASES, powers)))
    assert parse_unit([str(dim)]) == (Fraction(1), dim)


@given(st.floats(min_value=1e-3, max_value=1e14, allow_nan=False))
def test_format_number_is_within_rounding(x: float) -> None:
    shown = float(format_number(x).replace(",", ""))
    assert abs(shown - x) <= 5e-4 * x


def test_mass_of_co2_in_grams_kilograms_and_tonnes() -> None:
    mass = Dim.of(mass=1)
    assert unit_scale("g") == (Fraction(1), mass) and unit_scale("kg") == (Fraction(1000), mass)
    assert unit_scale("tonnes") == (Fraction(10**6), mass)
    scale, dim = parse_unit(("g/kWh",))
    assert scale == Fraction(1, 3_600_000) and dim == mass / Dim.of(power=1, time=1)  # grams per joule
    assert format_quantity(366.0, mass) == "366 g"
    assert format_quantity(3.252e9, mass) == "3,252 tonnes"
    assert format_quantity(85_470.0, mass) == "85.47 kg"
