"""The flagship's figures as its design document prints them: the one table the tests read.

A change to the stdlib physics moves these numbers. Update them here, and only here: run
`python -m tests.flagship` from the repository root, which prints the table as it is now, and
paste it below after reading why each number moved (docs/contributing.md).
"""

from __future__ import annotations

# quantity id (and the plan variant, after '@') -> the text the report prints
FLAGSHIP: dict[str, str] = {
    'chat.devices': '15,676 devices',
    'chat.tpot': '37.86 ms',
    'chat.cost_per_month': '28,630,000 USD/month',
    'chat.replicas': '3,913',
    'chat.burst_replicas': '3,756',
    'chat.batch': '105',
    'chat.refused_share': '0.006485',
    'chat.kv_budget': '51.25 GiB',
    'chat.step_time': '19.09 ms',
    'chat.mixed_step_time': '73.6 ms',
    'chat.ttft_tail': '799.6 ms',
    'chat.device_seconds_per_request': '360.6 ms',
    'chat.cost_per_million_tokens': '$0.7524',
    'chat.facility_power': '13.17 MW',
    'chat.energy_per_token': '0.9102 J/token',
    'chat.devices@peak_factor=2.5': '13,064 devices',
    'chat.replicas@peak_factor=2.5': '3,261',
    'chat.devices:change@peak_factor=2.5': '-16.7 %',
}


def current() -> dict[str, str]:
    """The table as the compiler computes it now."""
    import tempfile
    from pathlib import Path

    from planc.pipeline import compile_plan
    from planc.report.view import build_document

    from .conftest import REPO

    out: dict[str, str] = {}
    text = (REPO / "examples" / "100m_dau.plan").read_text(encoding="utf-8")
    variants = {"": text, "@peak_factor=2.5": text.replace("peak_factor = 3 ", "peak_factor = 2.5 ")}
    values: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for suffix, plan in variants.items():
            path = Path(tmp) / "100m_dau.plan"
            path.write_text(plan, encoding="utf-8")
            doc = build_document(compile_plan(path))
            quantities = {q.id: q for s in doc.sections for q in s.quantities}
            values[suffix] = {k: q.value for k, q in quantities.items()}
            for key in FLAGSHIP:
                name, _, variant = key.partition("@")
                if (("@" + variant) if variant else "") == suffix and ":" not in name:
                    out[key] = quantities[name].text
    from planc.report.diff import _relative

    out["chat.devices:change@peak_factor=2.5"] = _relative(values[""]["chat.devices"],
                                                          values["@peak_factor=2.5"]["chat.devices"])
    return out


if __name__ == "__main__":
    for key, value in current().items():
        print(f"    {key!r}: {value!r},")
