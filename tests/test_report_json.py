"""docs/report-json.md documents the JSON report (`plan.report/2`): every key it lists is in the
output and every key of the output is listed, section by section, so the page cannot drift; and
every value is a number beside its text."""

from __future__ import annotations

import json
import re

import pytest
from planc.pipeline import compile_plan
from planc.report.machine import document_json
from planc.report.markdown import render_json
from planc.report.view import build_document

from .conftest import REPO
from .flagship import FLAGSHIP

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
    assert report["schema"] == "plan.report/2"
    assert _documented()["Top level"] == set(report)


@pytest.mark.parametrize(("section", "key"), [
    ("summary item", "summary"), ("quantity", "quantities"), ("check", "checks"), ("question", "questions"),
    ("sensitivity", "sensitivities"), ("uncertainty", "uncertainty"),
])
def test_record_keys_are_documented(report: dict, section: str, key: str) -> None:
    documented = _documented()[section]
    records = report[key] if isinstance(report[key], list) else [report[key]]
    assert records and all(set(r) == documented for r in records)


def test_every_value_is_a_number_beside_its_text(report: dict) -> None:
    documented = _documented()
    numbers = [q["value"] for q in report["quantities"] if isinstance(q["value"], dict)]
    numbers += [c[side] for c in report["checks"] for side in ("left", "right") if c[side]]
    numbers += [x["midpoint"] for x in report["uncertainty"]["inputs"]]
    assert numbers and all(set(n) == documented["number"] for n in numbers)
    intervals = [report["summary"][0]["range"], *(x["range"] for x in report["uncertainty"]["inputs"])]
    assert all(set(i) == documented["interval"] for i in intervals)
    devices = next(q for q in report["quantities"] if q["id"] == "chat.devices")
    text = FLAGSHIP["chat.devices"]  # e.g. "14,480 devices"
    assert devices["value"] == {"value": float(text.split()[0].replace(",", "")), "unit": "devices", "text": text}
    low, high = report["summary"][0]["range"]["low"], report["summary"][0]["range"]["high"]
    assert low < devices["value"]["value"] < high  # the range brackets the midpoint's value
    mbu = next(x for x in report["uncertainty"]["inputs"] if x["input"] == "chat.mbu")
    assert (mbu["range"]["low"], mbu["range"]["high"], mbu["range"]["method"]) == (0.7, 0.8, "given")
    margin = report["checks"][0]["margin"]
    assert margin["value"] == pytest.approx(report["checks"][0]["right"]["value"] - report["checks"][0]["left"]["value"])
    lever = report["levers"][0]["changes"]["chat.devices"]
    assert lever["relative"] == pytest.approx(lever["value"] / devices["value"]["value"] - 1)
    shares = [row["share"] for q in report["quantities"] for row in q["breakdown"]]
    assert shares and all(0 < x <= 1 for x in shares)
    table = next(q for q in report["questions"] if q["values"])
    assert len(table["values"]) == len(table["rows"]) and len(table["columns"]) == len(table["headers"]) - 1
    assert all(isinstance(v, (float, bool)) or v is None for row in table["values"] for v in row)


def test_bindings_are_documented(report: dict) -> None:
    assert _documented()["bindings"] == set(report["bindings"])
    text = DOC.read_text(encoding="utf-8")
    for choice in report["bindings"]["choices"]:
        assert all(f"`{k}`" in text for k in choice), sorted(choice)


def test_bindings_carry_their_values_as_numbers(report: dict) -> None:
    """What decides the headline, as numbers: the batch search stops where `ttft_tail <= ttft_slo`
    fails one sequence past the answer, and `replicas` takes the larger of its branches."""
    quantities = {q["id"]: q for q in report["quantities"]}
    choices = {c["quantity"]: c for c in report["bindings"]["choices"]}
    batch = choices["chat.batch"]
    assert batch["op"] == "largest" and batch["number"]["value"] == quantities["chat.batch"]["value"]["value"] + 1
    ttft = next(c for c in batch["conditions"] if c["condition"] == "ttft_tail <= ttft_slo")
    assert ttft["holds"] is False and ttft["left"]["value"] > ttft["right"]["value"] == 0.8
    assert ttft["left"]["unit"] == "s" and ttft["left"]["text"] in batch["value"]
    tpot = next(c for c in batch["conditions"] if c["condition"] == "tpot <= tpot_slo")
    assert tpot["holds"] is True and tpot["left"]["value"] < tpot["right"]["value"] == 0.04
    replicas = choices["chat.replicas"]
    assert replicas["op"] == "max" and replicas["conditions"] == []
    assert replicas["number"]["value"] == quantities["chat.throughput_replicas"]["value"]["value"]
    assert [o["branch"] for o in replicas["others"]] == ["burst_replicas"]
    assert replicas["others"][0]["value"]["value"] < replicas["number"]["value"]


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
