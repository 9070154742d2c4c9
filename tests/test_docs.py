"""The docs site: the job-file reference is the code's, every page is in the nav, links lead
somewhere, and the Python examples on the pages run as written."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import re
import unicodedata
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
EXAMPLES = [
    (page, i, block)
    for page in PAGES
    for i, block in enumerate(
        re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)
    )
]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_job_file_reference_is_current() -> None:
    committed = (DOCS / "reference" / "job-file.md").read_text(encoding="utf-8")
    assert committed == _generator().render(), (
        "docs/reference/job-file.md is stale: run python docs/gen_reference.py"
    )


def test_job_file_reference_lists_every_key() -> None:
    gen = _generator()
    text = gen.render()
    walked = dict(gen.sections())
    from mfgtx.jobfile import JobConfig, SourceSection

    assert walked["data.source"] is SourceSection and walked[""] is JobConfig
    assert "evaluate.truth" in walked and "images.tiles" in walked and "train" in walked
    for key, cls in walked.items():
        block = text.split(f"{{#{gen._anchor(key)}}}", 1)[1].split("\n## ", 1)[0]
        if "The same keys as" in block:
            continue
        for f in dataclasses.fields(cls):
            if f.init and f.compare and f.name != "kind_sections":
                assert f"`{f.name}`" in block, f"{key or 'top level'}: {f.name} is missing"


def test_every_page_is_in_the_nav_and_every_nav_entry_is_a_page() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())

    def entries(nav):
        for item in nav:  # "page.md", {"Title": "page.md"} or {"Section": [...]}
            for value in [item] if isinstance(item, str) else item.values():
                yield from entries(value) if isinstance(value, list) else [value]

    nav = sorted(entries(config["nav"]))
    assert nav == PAGES


def _slug(heading: str) -> str:
    """Python-Markdown's toc slug of a heading (``{#id}`` wins)."""
    explicit = re.search(r"\{#([\w-]+)\}\s*$", heading)
    if explicit:
        return explicit.group(1)
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(h) for h in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def _links(source: Path) -> list[tuple[str, str]]:
    text = re.sub(r"```.*?```", "", source.read_text(), flags=re.S)
    out = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        out.append((path, anchor))
    return out


@pytest.mark.parametrize("source", ["README.md", *(f"docs/{p}" for p in PAGES)])
def test_links_lead_to_a_page_and_heading(source: str) -> None:
    """Relative links and their #anchors (mkdocs --strict checks the pages too; this also
    covers the README, which is not part of the site)."""
    here = (ROOT / source).parent
    for path, anchor in _links(ROOT / source):
        target = (here / path).resolve() if path else ROOT / source
        assert target.exists(), f"{source} links to {path}, which does not exist"
        if anchor and target.suffix == ".md":
            assert anchor in _anchors(target), f"{source}: no heading #{anchor} in {path}"


def test_docs_hold_examples() -> None:
    assert len(EXAMPLES) >= 8


@pytest.mark.parametrize(
    ("page", "index", "block"), EXAMPLES, ids=[f"{p}-{i}" for p, i, _ in EXAMPLES]
)
def test_docs_example_runs(page: str, index: int, block: str) -> None:
    cwd = Path.cwd()
    os.chdir(ROOT)  # the examples use paths relative to the repository
    try:
        exec(compile(block, f"docs/{page} example {index + 1}", "exec"), {})
    finally:
        os.chdir(cwd)
