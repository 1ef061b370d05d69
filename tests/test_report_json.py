"""docs/report-json.md documents the JSON report (`plan.report/1`): every key it lists is in the
output and every key of the output is listed, section by section, so the page cannot drift."""

from __future__ import annotations

import json
import re
from dataclasses import fields

import pytest
from planc.pipeline import compile_plan
from planc.report.markdown import render_json
from planc.report.view import (
    CheckView,
    QuantityView,
    QuestionView,
    SensitivityView,
    SummaryView,
    UncertaintyView,
    build_document,
    document_json,
)

from .conftest import REPO

DOC = REPO / "docs" / "report-json.md"


def _documented() -> dict[str, set[str]]:
    """Section title → the keys in the first column of its table (`a`, `b` cells give both)."""
    out: dict[str, set[str]] = {}
    for block in re.split(r"^## ", DOC.read_text(encoding="utf-8"), flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        keys = set()
        for line in body.splitlines():
            if line.startswith("| `"):
                keys |= set(re.findall(r"`([a-z_]+)`", line.split("|")[1]))
        out[title.strip()] = keys
    return out


@pytest.fixture(scope="module")
def report() -> dict:
    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    return json.loads(render_json(document_json(build_document(c), c)))


def test_top_level_keys_are_documented(report: dict) -> None:
    assert report["schema"] == "plan.report/1"
    assert _documented()["Top level"] == set(report)


@pytest.mark.parametrize(("section", "view", "key"), [
    ("summary item", SummaryView, "summary"), ("quantity", QuantityView, "quantities"),
    ("check", CheckView, "checks"), ("question", QuestionView, "questions"),
    ("sensitivity", SensitivityView, "sensitivities"), ("uncertainty", UncertaintyView, "uncertainty"),
])
def test_record_keys_are_documented(report: dict, section: str, view: type, key: str) -> None:
    documented = _documented()[section]
    assert documented == {f.name for f in fields(view)}
    records = report[key] if isinstance(report[key], list) else [report[key]]
    assert records and all(set(r) == documented for r in records)


def test_bindings_are_documented(report: dict) -> None:
    assert _documented()["bindings"] == set(report["bindings"])
    text = DOC.read_text(encoding="utf-8")
    for choice in report["bindings"]["choices"]:
        assert all(f"`{k}`" in text for k in choice), sorted(choice)


def test_decision_is_documented(report: dict) -> None:
    documented = _documented()
    assert documented["decision"] == set(report["decision"])
    sentences = [x for part in report["decision"].values() for x in part]
    assert sentences and all(set(x) == documented["sentence"] for x in sentences)
    numbers = [n for x in sentences for n in x["numbers"]]
    assert numbers and all(set(n) == {"text", "quantity"} and n["text"] in x["text"] for x in sentences for n in x["numbers"])


def test_levers_are_documented(report: dict) -> None:
    assert report["levers"] and all(set(v) == _documented()["lever"] for v in report["levers"])
    first = report["summary"][0]["label"]
    assert all(first in v["changes"] for v in report["levers"])


def test_specifications_are_listed_apart_from_the_assumptions(report: dict) -> None:
    """The ledger opens with what a reviewer may question; the models' architecture, the
    datasheet figures and the enumerations' attributes follow as specifications."""
    c = compile_plan(REPO / "examples" / "100m_dau.plan")
    doc = build_document(c)
    assumptions = {q.id for q in doc.assumptions}
    specifications = {q.id for q in doc.specifications}
    assert {"chat.mbu", "h100_sxm.price", "chat_traffic.daily_active_users"} <= assumptions
    assert {"llama_3_1_70b.hidden", "h100_sxm.memory_bandwidth", "dtype.bf16.bytes",
            "chat.static_batching_wait"} <= specifications
    assert not assumptions & specifications
    flags = {q["id"]: q["is_definition"] for q in report["quantities"]}
    assert flags["llama_3_1_70b.hidden"] and not flags["h100_sxm.price"]
    # the JSON lists the assumptions, then the specifications, then the derived quantities
    order = [q["id"] for q in report["quantities"]]
    assert order.index("h100_sxm.price") < order.index("llama_3_1_70b.hidden") < order.index("chat.devices")
