"""Cost beyond a list price (stdlib `deployment`, section Devices and cost): owning the fleet, a
hosted API as the alternative with the load where serving starts to pay, and the fleet's CO₂ —
each restated here in numbers and checked on the flagship and on variants of it."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from planc.builtins import poisson_quantile
from planc.pipeline import Compilation, compile_plan
from planc.report.markdown import render_markdown
from planc.report.view import build_document

from .conftest import REPO
from .test_engine_model import values

FLAGSHIP = REPO / "examples" / "100m_dau.plan"
MONTH = 365.25 * 86400 / 12
# the flagship with an H100's purchase price and a hosted API's price set (it sets neither, so
# that its design document's body keeps to ten pages)
PRICES = ('  device_capex = 33750 USD source "assumption: a DGX H100, about $270,000 for 8 GPUs (SemiAnalysis, 2023)"\n'
          '  api_price = $0.88 source "assumption: Llama 3.1 70B Turbo (together.ai/pricing, 2024)"\n')


def priced(text: str = "") -> str:
    text = text or FLAGSHIP.read_text(encoding="utf-8")
    out = text.replace("deployment chat {\n", "deployment chat {\n" + PRICES, 1)
    assert out != text
    return out


@pytest.fixture(scope="module")
def flagship(tmp_path_factory: pytest.TempPathFactory) -> Compilation:
    path = tmp_path_factory.mktemp("cost") / "priced.plan"
    path.write_text(priced(), encoding="utf-8")
    return compile_plan(path)


def test_owning_is_the_devices_written_off_and_the_electricity(flagship: Compilation) -> None:
    v = values(flagship)
    assert v["chat.device_capex"] == 33_750 and v["chat.depreciation_life"] == 5 * 365.25 * 86400
    kwh = 3.6e6  # J
    energy = v["chat.facility_power"] * MONTH / kwh * 0.08  # USD a month at 8 ¢/kWh
    capex = v["chat.devices"] * 33_750 / (5 * 12)  # USD a month
    assert v["chat.owned_cost_per_month"] * MONTH == pytest.approx(capex + energy, rel=1e-12)
    assert capex + energy == pytest.approx(9.5873e6, rel=1e-3)  # against 28.63 M USD to rent
    assert v["chat.owned_cost_per_month"] < v["chat.cost_per_month"] / 2


def test_the_api_costs_its_price_per_token_and_serving_pays_above_the_breakeven(flagship: Compilation) -> None:
    v = values(flagship)
    tokens = v["chat_traffic.average_tokens_per_s"]
    assert v["chat.api_cost_per_month"] == pytest.approx(0.88 * tokens / 1e6, rel=1e-12)
    scaling = v["chat.cost_per_million_tokens"] * v["chat.failover_replicas"] / v["chat.total_replicas"]
    assert v["chat.scaling_cost_per_million_tokens"] == pytest.approx(scaling, rel=1e-12)
    # the smallest fleet: one replica of 4 devices, down 4 h in 5.78 years each, needs no spare at 99.9 %
    mean_down = v["chat.repair_time"] * 4 / v["chat.device_mtbf"]
    assert v["chat.smallest_fleet_replicas"] == 1 + poisson_quantile(0.999, mean_down) == 1
    replica_cost = 4 * v["h100_sxm.price"]  # USD/s
    breakeven = replica_cost * 1e6 / (0.88 - scaling)
    assert v["chat.api_breakeven_tokens_per_s"] == pytest.approx(breakeven, rel=1e-12)
    assert breakeven == pytest.approx(21_583, rel=1e-3) and breakeven < tokens


def test_the_fleets_carbon_is_its_energy_at_the_grids_intensity(flagship: Compilation) -> None:
    v = values(flagship)
    per_joule = 366 / 3.6e6  # g/J: 366 g/kWh
    assert v["chat.carbon_per_month"] == pytest.approx(v["chat.facility_power"] * MONTH * per_joule, rel=1e-12)
    assert v["chat.carbon_per_month"] / 1e6 == pytest.approx(3521, rel=1e-3)  # tonnes
    assert v["chat.carbon_per_million_tokens"] == pytest.approx(v["chat.energy_per_token"] * 1e6 * per_joule, rel=1e-12)


def findings(c: Compilation) -> list[str]:
    text = render_markdown(build_document(c))
    return [line for line in text.splitlines() if line.startswith("- ")]


def test_the_decision_compares_owning_and_the_api_only_when_their_prices_are_given(flagship: Compilation) -> None:
    lines = findings(flagship)
    assert any(line.startswith("- Owning the fleet would cost [9,587,000 USD/month]") for line in lines)
    assert any(line.startswith("- Serving beats the hosted API at [\\$0.88]") and "21.58 k tokens/s" in line
               for line in lines)
    assert any("[3,521 tonnes](#q-chat-carbon-per-month) of CO₂ a month" in line for line in lines)
    lines = findings(compile_plan(FLAGSHIP))  # the flagship sets neither price
    assert not any("Owning" in line or "hosted API" in line or "than owning" in line for line in lines)


def test_a_cheap_api_and_dear_hardware_say_so(compile_text: Callable[..., Compilation]) -> None:
    text = priced().replace("device_capex = 33750 USD", "device_capex = 2000000 USD").replace("api_price = $0.88", "api_price = $0.30")
    c = compile_text(text, "cheap_api.plan")
    lines = findings(c)
    assert any(line.startswith("- Renting the fleet at [") for line in lines)
    assert any(line.startswith("- The hosted API is cheaper at any load: [\\$0.3]") for line in lines)
    assert values(c)["chat.api_breakeven_tokens_per_s"] == 0
