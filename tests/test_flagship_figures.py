"""The flagship's figure table (tests/flagship.py) is what the compiler computes now, and the
worked example of docs/physics.md §14 states those figures, so it cannot describe an older plan."""

from __future__ import annotations

from .conftest import REPO
from .flagship import FLAGSHIP, current

# the figures §14 walks through, as the report prints them
WORKED_EXAMPLE = ("chat.kv_budget", "chat.batch", "chat.step_time", "chat.mixed_step_time", "chat.tpot",
                  "chat.device_seconds_per_request", "chat.replicas", "chat.burst_replicas", "chat.devices",
                  "chat.ttft_tail", "chat.cost_per_month", "chat.cost_per_million_tokens", "chat.facility_power",
                  "chat.energy_per_token")


def test_the_flagship_table_is_current() -> None:
    # on a physics change: `python -m tests.flagship` prints the new table to paste
    assert current() == FLAGSHIP


def test_the_worked_example_states_the_flagship_figures() -> None:
    text = (REPO / "docs" / "physics.md").read_text(encoding="utf-8")
    section = text[text.index("## 14 Worked example"):text.index("## 15 ")]
    missing = [f"{key} = {FLAGSHIP[key]}" for key in WORKED_EXAMPLE if FLAGSHIP[key] not in section]
    assert not missing, f"docs/physics.md §14 does not state: {missing}"
    assert "examples/100m_dau.plan" in section and "tests/test_flagship_figures.py" in section
