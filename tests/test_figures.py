"""The report's figures: which ones a plan gets, that they are valid self-contained SVG, that they
are byte-identical run to run, and that the Markdown path never loads matplotlib."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pytest
from planc.pipeline import Compilation, compile_plan
from planc.report.figures import Figure, build_figures

from .conftest import REPO

SVG_NS = "{http://www.w3.org/2000/svg}"
DEPLOYMENT_FIGURES = ("roofline", "memory-batch", "memory-context", "latency-throughput")
needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None,
                                      reason="figures need the `pdf` extra (matplotlib)")


def test_importing_figures_does_not_import_matplotlib() -> None:
    code = ("import sys, planc.report.figures, planc.report.markdown; "
            "sys.exit(1 if any(m == 'matplotlib' or m.startswith('matplotlib.') for m in sys.modules) else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert result.returncode == 0, result.stderr or "planc.report.figures imported matplotlib at import time"


@pytest.fixture(scope="module")
def flagship() -> Compilation:
    compilation = compile_plan(REPO / "examples" / "100m_dau.plan", shown="examples/100m_dau.plan")
    assert compilation.ok
    return compilation


@pytest.fixture(scope="module")
def figures(flagship: Compilation) -> list[Figure]:
    return build_figures(flagship)


def by_name(figures: list[Figure]) -> dict[str, Figure]:
    return {f.name: f for f in figures}


@needs_matplotlib
def test_flagship_gets_every_kind_of_figure(figures: list[Figure], flagship: Compilation) -> None:
    names = [f.name for f in figures]
    assert names[:4] == [f"chat-{kind}" for kind in DEPLOYMENT_FIGURES]
    tornadoes = [n for n in names if n.startswith("sensitivity-")]
    # one tornado, for the headline result (the first summary item)
    assert len(flagship.sensitivities) == len(flagship.lowered.elaborated.summary) == 8  # one per summary item
    assert tornadoes == ["sensitivity-chat-devices"]
    assert "chat-pareto" in names
    assert "input-ranges" in names  # the flagship gives two inputs as ranges
    assert len(set(names)) == len(names)


@needs_matplotlib
def test_figure_records_are_well_formed(figures: list[Figure]) -> None:
    for f in figures:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", f.name), f.name
        assert f.title and "\n" not in f.title
        assert f.caption.endswith(".") and f.caption.count(". ") == 0, f.caption


@needs_matplotlib
def test_svg_is_valid_and_standalone(figures: list[Figure]) -> None:
    for f in figures:
        root = ET.fromstring(f.svg.encode("utf-8"))
        assert root.tag == f"{SVG_NS}svg", f.name
        assert root.findtext(f"{SVG_NS}title") == f.title
        assert root.findtext(f"{SVG_NS}desc") == f.caption
        assert root.get("viewBox"), f.name
        assert "<image" not in f.svg, f.name
        assert "<!DOCTYPE" not in f.svg
        # the only URLs are namespace declarations (xmlns, xmlns:xlink)
        urls = re.findall(r"https?://", f.svg)
        declared = re.findall(r'\sxmlns(?::\w+)?="https?://[^"]*"', f.svg)
        assert len(urls) == len(declared), f"{f.name} references a URL"
        assert not re.search(r'href="(?!#)', f.svg), f"{f.name} links outside itself"


@needs_matplotlib
def test_svg_is_byte_identical_across_calls(figures: list[Figure], flagship: Compilation) -> None:
    again = build_figures(flagship)
    assert [f.name for f in again] == [f.name for f in figures]
    for a, b in zip(figures, again):
        assert a.svg == b.svg, f"{a.name} differs between two runs"


@needs_matplotlib
def test_figures_agree_with_the_plan(figures: list[Figure], flagship: Compilation) -> None:
    assert flagship.lowered is not None
    values = flagship.lowered.values
    named = by_name(figures)
    # the first batch that does not fit is one past the admission limit the plan computes
    assert f"out of memory from batch {int(values['chat.max_batch']) + 1}" in named["chat-memory-batch"].caption
    assert "h100_sxm" in named["chat-roofline"].title and "fp8" in named["chat-roofline"].title
    assert "590.7 FLOP/B" in named["chat-roofline"].caption  # the ridge point, H100 FP8
    assert "131,072 tokens" in named["chat-memory-context"].caption  # Llama-3.1-70B max context
    assert "out of memory beyond" in named["chat-memory-context"].caption
    assert "TPOT SLO" in named["chat-latency-throughput"].caption  # the plan checks tpot_worst <= tpot_slo (40 ms)
    pareto = named["chat-pareto"]
    assert "cost_per_month" in pareto.caption and "tpot" in pareto.caption
    # the band of each headline result ends at the interval the uncertainty stage found, in its unit
    ranges = named["input-ranges"]
    assert flagship.uncertainty is not None
    devices = flagship.uncertainty.summary[0]
    assert f"{int(devices.low):,} devices" in ranges.svg and f"{int(devices.high):,} devices" in ranges.svg
    assert "USD/month" in ranges.svg and "USD/s" not in ranges.svg


@needs_matplotlib
def test_plan_without_a_deployment() -> None:
    compilation = compile_plan(REPO / "examples" / "recommender.plan", shown="examples/recommender.plan")
    assert compilation.ok
    out = build_figures(compilation)
    assert not [f for f in out if f.name.endswith(DEPLOYMENT_FIGURES)]
    assert all(f.name.startswith("sensitivity-") for f in out)
    for f in out:
        ET.fromstring(f.svg.encode("utf-8"))


PLAN_WITHOUT_CHECKS = """
import "models/llama-3.1-70b"
import "hardware/h100-sxm"

traffic chat_traffic {
  daily_active_users = 100 M users
  requests_per_user = 10 requests/user/day
  peak_factor = 3
  prompt_tokens = 1000 tokens
  output_tokens = 250 tokens
  prompt_tokens_p99 = 6000 tokens
  output_tokens_p99 = 1000 tokens
}

deployment chat {
  model = llama_3_1_70b
  hardware = h100_sxm
  traffic = chat_traffic
  weights = fp8
  tensor_parallel = 4
  batch = 64
}
"""


@needs_matplotlib
def test_no_slo_line_without_a_tpot_check(compile_text: Callable[[str], Compilation]) -> None:
    compilation = compile_text(PLAN_WITHOUT_CHECKS)
    assert compilation.ok, [d.message for d in compilation.diagnostics]
    out = build_figures(compilation)
    assert [f.name for f in out] == [f"chat-{kind}" for kind in DEPLOYMENT_FIGURES]
    assert "SLO" not in by_name(out)["chat-latency-throughput"].caption


def test_a_plan_that_did_not_compile_has_no_figures_and_needs_no_matplotlib() -> None:
    assert build_figures(Compilation("broken.plan")) == []


@needs_matplotlib
def test_point_labels_do_not_overlap() -> None:
    """A crowded Pareto front (the flagship's first four points sit within a few percent of each
    other): every label stays inside the axes and clear of every other label and point."""
    from matplotlib.figure import Figure as MplFigure
    from planc.report.answer_figures import _label_points, _overlap

    fig = MplFigure(figsize=(6.4, 3.6))
    ax = fig.subplots()
    xs, ys = [28.8, 29.5, 35.8, 48.6, 74.3, 126.0, 39.7, 44.6], [24.0, 21.1, 13.2, 9.2, 7.2, 6.2, 16.4, 24.5]
    ax.plot(xs, ys, "o")
    ax.set_xlim(20, 180)
    ax.set_ylim(0, 90)
    labels = [((x, y), f"fp8, {k}, {2 ** (7 - k)}") for k, (x, y) in enumerate(zip(xs[:6], ys[:6]))]
    _label_points(fig, ax, labels, list(zip(xs, ys)))
    fig.draw_without_rendering()
    boxes = [t.get_window_extent() for t in ax.texts]
    assert len(boxes) == 6
    frame = ax.get_window_extent()
    for k, box in enumerate(boxes):
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        assert all(_overlap(box, other) == 0 for other in boxes[k + 1:])
    for x, y in ax.transData.transform(list(zip(xs, ys))):  # no label covers a point's centre
        assert not any(b.contains(x, y) for b in boxes)


@needs_matplotlib
@pytest.mark.parametrize("example", sorted(p.stem for p in (REPO / "examples").glob("*.plan")))
def test_every_text_of_every_figure_of_every_example_lies_inside_it(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No layout engine places the figures: `chart._fit` sets the axes' margins from the font's
    measures of the tick labels, axis labels, title and an outside legend. Every figure of every
    example keeps all its text inside the canvas, with air to spare, as matplotlib itself measures
    the drawn figure; and the axes keep most of the width and height."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from planc.report import answer_figures, chart, figures

    measured: list[tuple[str, tuple[float, float, float, float], tuple[float, float]]] = []
    finish = chart._finish

    def measuring(fig: object, name: str, title: str, caption: str) -> Figure:
        drawn = finish(fig, name, title, caption)
        FigureCanvasAgg(fig)
        box = fig.get_tightbbox(fig.canvas.get_renderer())  # type: ignore[attr-defined]
        width, height = fig.get_size_inches()  # type: ignore[attr-defined]
        axes = fig.axes[0].get_position()  # type: ignore[attr-defined]
        measured.append((name, (box.x0 * 72, (width - box.x1) * 72, box.y0 * 72, (height - box.y1) * 72),
                         (axes.width, axes.height)))
        return drawn

    monkeypatch.setattr(figures, "_finish", measuring)
    monkeypatch.setattr(answer_figures, "_finish", measuring)
    compilation = compile_plan(REPO / "examples" / f"{example}.plan")
    assert compilation.ok
    assert len(build_figures(compilation)) == len(measured) > 0
    for name, (left, right, bottom, top), (axes_width, axes_height) in measured:
        assert min(left, right, bottom, top) >= 1.0, f"{name}: text {left:.1f}, {right:.1f}, {bottom:.1f}, {top:.1f} pt from the edges"
        assert max(left, right, bottom, top) <= 16.0, f"{name}: {left:.1f}, {right:.1f}, {bottom:.1f}, {top:.1f} pt of empty margin"
        assert axes_width >= 0.45 and axes_height >= 0.6, name


# ---- the contract between the physics and the figures (compiler/figure_roles.py) ----------


def test_every_declarable_figure_has_a_drawing_and_every_drawing_a_declaration() -> None:
    from planc.figure_roles import FIGURES
    from planc.report import figures

    assert set(figures._DECLARED) == set(FIGURES)


def test_the_figures_module_names_no_field_of_any_kind() -> None:
    """The report draws from the quantities a kind's `figure` names, never a field by name: no
    node id is built or matched in figures.py (`f"{inst}.tpot"`, `"chat.batch"`, a suffix such as
    `".max_context"`) for any field of the stdlib's kinds."""
    from planc.semantics.resolve import stdlib_root

    source = (REPO / "compiler" / "report" / "figures.py").read_text(encoding="utf-8")
    fields = set()
    for path in (stdlib_root() / "kinds").glob("*.plan"):
        fields |= set(re.findall(r"^\s*(?:input|spec|derive)\s+(\w+)", path.read_text(encoding="utf-8"), re.M))
    assert {"tpot", "batch", "ridge_point", "memory_bandwidth", "max_context"} <= fields
    ids = re.findall(r"[\"'][^\"'\n]*[}\w]?\.(\w+)[\"']", source)  # `.field` at the end of a string
    assert sorted({f for f in ids if f in fields}) == []


def test_the_deployment_declares_its_four_figures_from_its_own_quantities(flagship: Compilation) -> None:
    declared = [(f.instance, f.name) for f in flagship.lowered.elaborated.figures]
    assert declared == [("chat", "roofline"), ("chat", "memory_batch"), ("chat", "memory_context"),
                        ("chat", "latency_throughput")]
    roofline = flagship.lowered.elaborated.figures[0]
    assert dict(roofline.roles)["peak"] == "chat.compute_flops"
    assert dict(roofline.roles)["bandwidth"] == "h100_sxm.memory_bandwidth"  # the deployment's hardware
    assert dict(roofline.texts) == {"compute_class": "fp8"}  # the compute class of its weights


LINK = """
kind link {{
  input bandwidth: B/s
  input size: B = 1 GB
  derive transfer: s = size / bandwidth
  derive rate: B/s = size / transfer
  {figure}
}}
link uplink {{ bandwidth = 50 GB/s }}
"""


@pytest.mark.parametrize(("figure", "code", "text", "help"), [
    ("figure latency_thruput { batch = size; tpot = transfer; rate = rate }", "E0212", "latency_thruput",
     "did you mean `latency_throughput`?"),
    ("figure latency_throughput { batch = size; tpot = transfer; rate = rate; speed = rate }", "E0212", "speed",
     "its roles: `batch`, `tpot`, `rate`, `tpot_worst`, `headroom`"),
    ("figure latency_throughput { batch = size; tpot = transfer }", "E0212", "latency_throughput", "`rate = ...`"),
    # a field the figure is declared from, renamed or gone: an error at the role, not a vanished figure
    ("figure latency_throughput { batch = size; tpot = transfer_time; rate = rate }", "E0201", "transfer_time",
     "did you mean `transfer`?"),
    ("figure latency_throughput { batch = size; tpot = 2 * transfer; rate = rate }", "E0303", "2 * transfer",
     "names one quantity"),
    ("figure roofline { peak = rate; ridge = rate; compute_class = transfer }", "E0303", "transfer",
     "names one value"),
])
def test_a_bad_figure_declaration_is_an_error_at_its_place(compile_text: Callable[[str], Compilation], figure: str,
                                                            code: str, text: str, help: str) -> None:
    compilation = compile_text(LINK.format(figure=figure))
    assert not compilation.ok and compilation.exit_code == 2
    (found,) = [d for d in compilation.diagnostics if d.is_error]
    assert (found.code, found.primary.span.text) == (code, text)
    assert help in (found.help or "")


@needs_matplotlib
def test_a_kind_of_the_plans_own_gets_the_figures_it_declares(compile_text: Callable[[str], Compilation]) -> None:
    compilation = compile_text(LINK.format(figure="figure latency_throughput { batch = size; tpot = transfer; rate = rate }"))
    assert compilation.ok
    assert [f.name for f in build_figures(compilation)] == ["uplink-latency-throughput"]
