"""The field reference in docs/reference/ is generated from the stdlib and kept current."""

from __future__ import annotations

from planc.reference import reference_pages

from .conftest import REPO

FOLDER = REPO / "docs" / "reference"


def test_the_committed_reference_is_the_generated_one() -> None:
    pages = reference_pages()
    assert sorted(p.name for p in FOLDER.glob("*.md")) == sorted(pages)
    for name, text in pages.items():
        assert (FOLDER / name).read_text(encoding="utf-8") == text, f"run: python -m planc.reference docs/reference ({name})"


def test_every_field_of_the_deployment_kind_is_listed_with_its_unit_and_source() -> None:
    page = reference_pages()["deployment.md"]
    assert "| `batch` | input | `integer` |" in page
    assert "| `devices` | derived | `devices` | `(total_replicas * replica_devices + prefill_pool_devices) * (1 device)` |" in page
    assert "## Disaggregated prefill" in page and "## Requirements" in page
    # an input with a default and no source is flagged as the assumption it is
    assert "| `tensor_parallel` | input | `integer` | `1` | devices that shard every layer of one replica (Megatron TP) | **assumption** |" in page
