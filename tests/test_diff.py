"""`plan diff`: two versions of a plan compared as a reviewer reads them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from planc.pipeline import compile_plan
from planc.report.diff import ChangeRow, diff_documents, diff_json
from planc.report.markdown import render_diff_markdown
from planc.report.view import build_document

from .conftest import REPO
from .flagship import FLAGSHIP as FIGURES
from .test_cli import run

EXAMPLE = REPO / "examples" / "100m_dau.plan"
FLAGSHIP = EXAMPLE.read_text(encoding="utf-8")


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def lower_peak(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The flagship with a daily peak of 2.5 instead of 3: one input, a sixth fewer replicas."""
    text = FLAGSHIP.replace("peak_factor = 3 ", "peak_factor = 2.5 ")
    assert text != FLAGSHIP
    return write(tmp_path_factory.mktemp("diff"), "head.plan", text)


def rows(rs: list[ChangeRow]) -> dict[str, ChangeRow]:
    return {r.label: r for r in rs}


def test_one_changed_input_and_what_it_moves(lower_peak: Path) -> None:
    d = diff_documents(build_document(compile_plan(EXAMPLE)), build_document(compile_plan(lower_peak)))
    assert d.changed
    assert [(r.label, r.base, r.head, r.change) for r in d.inputs] == [
        ("chat_traffic.peak_factor", "3", "2.5", "-16.7 %")]
    assert d.inputs[0].source.startswith("single-region product") and d.inputs[0].location.endswith("head.plan:12")
    summary = rows(d.summary)
    # the fleet is sized on throughput at the peak: a sixth fewer replicas of 4 devices, plus a spare
    assert (summary["chat.devices"].base, summary["chat.devices"].head) == (
        FIGURES["chat.devices"], FIGURES["chat.devices@peak_factor=2.5"])
    assert summary["chat.devices"].change == FIGURES["chat.devices:change@peak_factor=2.5"]
    assert summary["chat.devices"].changed
    # each replica runs at the same share of its capacity, so its latency at the peak does not move
    # (to the rounding of the replica count: under 0.1 %)
    assert abs(float(summary["chat.tpot_at_peak"].change.replace("%", "").replace("\u2212", "-") or 0)) < 0.1
    derived = rows(d.derived)
    assert derived["chat.replicas"].head == FIGURES["chat.replicas@peak_factor=2.5"] and "chat.tpot" not in derived
    # a smaller fleet of the same replicas: what one replica sustains does not move
    assert "chat.replica_request_rate" not in derived and "chat.batch" not in derived
    assert 0 < len(d.derived) < d.derived_compared
    questions = rows(d.questions)
    assert not questions["ask: max batch at 8k context"].changed
    assert questions["scenario: 10x traffic"].head.endswith("(values changed)")


def test_the_same_plan_twice_changes_nothing(tmp_path: Path) -> None:
    copy = write(tmp_path, "copy.plan", FLAGSHIP)
    code, out, err = run("diff", str(EXAMPLE), str(copy))
    assert code == 0, err
    assert "The two plans give the same results" in out
    assert "### Inputs that changed" not in out and "<details>" not in out
    code, out, _ = run("diff", str(EXAMPLE), str(copy), "--format", "json")
    data = json.loads(out)
    assert data["schema"] == "plan.diff/2" and not data["changed"]
    assert data["inputs"] == [] and data["derived"] == [] and data["derived_compared"] > 150


def test_markdown_is_a_pull_request_comment(lower_peak: Path) -> None:
    code, out, err = run("diff", str(EXAMPLE), str(lower_peak))
    assert code == 0, err
    assert out.startswith("## Plan diff: ")
    change = FIGURES["chat.devices:change@peak_factor=2.5"].replace("-", "\\-")
    assert (f"| `chat.devices` | {FIGURES['chat.devices']} | **{FIGURES['chat.devices@peak_factor=2.5']}** "
            f"| {change} |") in out
    assert "| `chat_traffic.peak_factor` | 3 | 2.5 | \\-16.7 % |" in out
    assert re.search(r"<details><summary>\d+ of \d+ derived quantities changed</summary>", out)
    again = run("diff", str(EXAMPLE), str(lower_peak))[1]
    assert again == out  # byte-identical


def test_new_removed_and_failing(tmp_path: Path) -> None:
    base = write(tmp_path, "base.plan", 'title "a | b"\nlet x = 2 GB\nlet y = x * 2\n'
                                        'check y <= 8 GB "fits"\nsummary y\n')
    head = write(tmp_path, "head.plan", 'title "a | <script>"\nlet x = 5 GB\nlet y = x * 2\nlet z = y + 1 GB\n'
                                        'check y <= 8 GB "fits"\ncheck z > 0 B "z"\nsummary y, z\n')
    code, out, err = run("diff", str(base), str(head))
    assert code == 1, err  # a check of the head fails; the comparison is still written
    assert "**a \\| b** → **a \\| \\<script\\>**" in out and "<script>" not in out
    assert "| fits | ✅ pass, margin 3.725 GiB \\(50 %\\) | **❌ FAIL, margin \\-1.863 GiB \\(\\-25 %\\)** |" in out
    assert "| z |  | **✅ pass, margin 10.24 GiB** (new) |" in out
    data = json.loads(run("diff", str(base), str(head), "--format", "json")[1])
    summary = {r["label"]: r for r in data["summary"]}
    assert summary["y"]["change"] == "+150 %" and summary["z"]["change"] == "new"
    assert {r["label"]: r["change"] for r in data["derived"]} == {"y": "+150 %", "z": "new"}
    # the other way round: what the head no longer has
    back = json.loads(run("diff", str(head), str(base), "--format", "json")[1])
    assert {r["label"]: r["change"] for r in back["derived"]}["z"] == "removed"


def test_an_invalid_plan_writes_nothing(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.plan", "let x = 2 GB + 1 s\n")
    out_file = tmp_path / "diff.md"
    code, out, err = run("diff", str(EXAMPLE), str(bad), "-o", str(out_file))
    assert code == 2 and out == "" and not out_file.exists()
    assert "error[E0302]" in err and "bad.plan:1:" in err


def test_json_keys_are_documented(lower_peak: Path) -> None:
    doc = (REPO / "docs" / "diff.md").read_text(encoding="utf-8")
    tables = {title: set(re.findall(r"^\| `([a-z_]+)` \|", body, re.M))
              for title, body in re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", doc, re.M | re.S)}
    data = diff_json(diff_documents(build_document(compile_plan(EXAMPLE)),
                                    build_document(compile_plan(lower_peak))))
    assert set(data) == tables["JSON (`plan.diff/2`)"]
    assert set(data["inputs"][0]) == tables["row"]
    # and the shipped schema holds it: values as numbers beside their texts
    import jsonschema
    from planc.report.machine import schema_path

    document = json.loads(json.dumps(data))
    jsonschema.validate(document, json.loads(schema_path("plan.diff").read_text(encoding="utf-8")),
                        cls=jsonschema.Draft202012Validator)
    peak = next(r for r in document["inputs"] if r["label"].endswith("peak_factor"))
    assert peak["base_value"]["unit"] == "1" and peak["relative"] == pytest.approx(
        peak["head_value"]["value"] / peak["base_value"]["value"] - 1)


def test_template_only_lays_out(lower_peak: Path) -> None:
    """The view decides what changed and how it reads; the Markdown adds no number of its own."""
    d = diff_documents(build_document(compile_plan(EXAMPLE)), build_document(compile_plan(lower_peak)))
    out = render_diff_markdown(d)
    numbers = set(re.findall(r"\d[\d,.]*", out))
    shown = " ".join(f"{r.label} {r.base} {r.head} {r.change} {r.source}" for r in
                     [*d.summary, *d.checks, *d.questions, *d.inputs, *d.derived])
    allowed = set(re.findall(r"\d[\d,.]*", shown)) | {str(len(d.derived)), str(d.derived_compared)}
    allowed |= set(re.findall(r"\d[\d,.]*", f"{d.version} {d.base_plan} {d.head_plan} {d.head_title}"))
    assert numbers <= allowed
