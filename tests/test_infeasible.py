"""A well-formed plan the physics cannot meet: E0408 at the user's line, the numbers of the
comparison that fails, and the inputs that would make it hold — each a real fix."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from planc.pipeline import Compilation

PLAN = '''import "models/{model}"
import "hardware/h100-sxm"
traffic t {{
  daily_active_users = 1 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 3
  prompt_tokens = 800 tokens
  output_tokens = 200 tokens
}}
deployment chat {{
  model = {instance}
  hardware = h100_sxm
  traffic = t
  tensor_parallel = {tp}{extra}
}}
'''


def _plan(model: str = "llama-3.1-8b", tp: int = 1, extra: str = "") -> str:
    return PLAN.format(model=model, instance=model.replace("-", "_").replace(".", "_"), tp=tp, extra=extra)


def _errors(c: Compilation, code: str) -> list[object]:
    return [d for d in c.diagnostics if d.is_error and d.code == code]


def test_weights_that_do_not_fit_are_infeasible_with_the_numbers_and_the_fix(
        compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(_plan("llama-3.1-70b"))
    assert c.exit_code == 1 and not c.ok  # infeasible, like a failed check; no report
    weights = next(d for d in _errors(c, "E0408") if "weights" in d.message)
    notes = " ".join(weights.notes)
    assert "it fails at `kv_budget > 0 B`: -63.85 GiB against 0 B" in notes
    assert "`chat.weight_bytes_per_device` = 131.4 GiB" in notes and "`chat.usable_memory` = 72.85 GiB" in notes
    assert "`chat.tensor_parallel` = 2 (now 1)" in weights.help
    # the fix it names is a fix
    fixed = compile_text(_plan("llama-3.1-70b", tp=2))
    assert not _errors(fixed, "E0408") and fixed.ok


def test_a_parallelism_the_heads_do_not_divide_names_the_nearest_that_does(
        compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(_plan(tp=3))
    (error,) = _errors(c, "E0408")
    assert c.exit_code == 1 and "divide the attention heads" in error.message
    proposed = re.search(r"`chat.tensor_parallel` = (\d+) \(now 3\)", error.help)
    assert proposed is not None and proposed.group(1) == "4"  # whole, and the nearest divisor of 32 heads
    assert compile_text(_plan(tp=4)).ok


def test_a_value_out_of_its_own_range_stays_invalid_input(compile_text: Callable[[str], Compilation]) -> None:
    c = compile_text(_plan(extra="\n  memory_utilization = 150 %"))
    (error,) = _errors(c, "E0404")
    assert c.exit_code == 2 and not _errors(c, "E0408")
    assert "it fails at `memory_utilization <= 1`: 1.5 against 1" in error.notes


@pytest.mark.parametrize("setting", ["draft_tokens = -2", "draft_cost_ratio = -0.1", "speculation_probe = 0",
                                     "preemption_target = 0", "depreciation_life = 0 years", "sector_efficiency = 0",
                                     "prefill_batch = -1", "normal_p99 = -1"])
def test_an_input_out_of_its_range_is_an_error_at_the_value_the_user_wrote(
        compile_text: Callable[[str], Compilation], setting: str) -> None:
    """Each of these once failed deep in the stdlib (a division by zero, a quantile of 0) at a
    stdlib line; a requirement now puts the error on the user's value (found by setting every
    input of the flagship's deployment to 0 and to -1)."""
    text = _plan(extra="\n  " + setting)
    if setting.startswith("normal_p99"):  # a traffic's: set in the traffic block
        text = _plan().replace("traffic t {\n", f"traffic t {{\n  {setting}\n")
    c = compile_text(text)
    (error,) = _errors(c, "E0404")
    assert c.exit_code == 2 and error.primary is not None
    assert not error.primary.span.file.is_stdlib and error.primary.span.text == setting.split(" = ")[1]
