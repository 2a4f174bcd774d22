"""The built site: escaping of submitted text, settings kept apart, badges, hand-checked significance groups."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scipy.stats import binomtest

from evalsuite.errors import EvalsuiteError
from evalsuite.leaderboard.site import build_site
from leaderboard_support import BASE_SEED1, INSTRUCT_SEED1
from tests.conftest import requires_extra

BASE_ENTRY = "search-r1-qwen2-5-3b-base-third-party-rerun-seed-1"
INSTRUCT_ENTRY = "search-r1-qwen2-5-3b-instruct-third-party-rerun-seed-1"
XSS_ENTRY = "script-alert-1-script"


def all_html(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_site_has_index_methods_entry_and_paged_example_pages(built_site: Path):
    assert (built_site / "index.html").is_file() and (built_site / "methods.html").is_file()
    entry = built_site / "entries" / BASE_ENTRY
    assert (entry / "index.html").is_file() and (entry / "plot-em.svg").is_file()
    # 1,000 NQ examples at 25 a page, 125 Bamboogle examples.
    assert len(list((entry / "nq").glob("page-*.html"))) == 40
    assert len(list((entry / "bamboogle").glob("page-*.html"))) == 5
    assert (built_site / "assets" / "leaderboard.js").is_file()


def test_submitted_text_is_escaped_everywhere(built_site: Path):
    index = (built_site / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index
    entry = (built_site / "entries" / XSS_ENTRY / "index.html").read_text()
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in entry
    assert "&lt;b onmouseover=alert(3)&gt;me&lt;/b&gt;" in entry
    for page in all_html(built_site):
        text = page.read_text()
        assert "<script>alert" not in text and "<img src=x" not in text and "<b onmouseover" not in text, page
        # The only script element is the site's own asset.
        assert text.count("<script") == 1, page


def test_settings_are_separate_tables_and_badges_are_shown(built_site: Path):
    index = (built_site / "index.html").read_text()
    # A setting is the entries' claim whatever their manifests say (issue 37): the heading says so for every table,
    # and what each entry's files agree on is in its proof, not in the table's name.
    assert "Setting (as the entries claim it): wiki-18 · e5 · top-3</h2>" in index
    assert "Setting (as the entries claim it): wiki-18 · e5 · top-5</h2>" in index
    assert index.count('class="badge reported"') > 20  # transcribed paper rows
    assert 'id="reported-em"' in index and "Progress: Coverage-guided RL to Train Search-augmented LLM Agent, Table 1" in index


def _recorded_em(trajectories_dir: Path, stem: str) -> dict[str, float]:
    return {i["id"]: i["output"]["metric_score"]["em"] for i in json.loads((trajectories_dir / f"{stem}.json").read_text())}


def test_significance_group_against_the_top_entry_matches_exact_mcnemar(built_site: Path, trajectories_dir: Path):
    base = _recorded_em(trajectories_dir, BASE_SEED1)
    top = _recorded_em(trajectories_dir, INSTRUCT_SEED1)
    only_base = sum(base[i] == 1 and top[i] == 0 for i in top)
    only_top = sum(base[i] == 0 and top[i] == 1 for i in top)
    p = binomtest(only_base, only_base + only_top, 0.5).pvalue
    assert p < 0.05  # 11 vs many more correct answers: the base run is significantly below
    index = (built_site / "index.html").read_text()
    # Bamboogle is the only column where the base entry meets another entry, so Holm leaves p unchanged.
    assert f"vs top: Holm-adjusted p = {p:.3g} (significantly below)" in index
    # The script-named entry is the same outputs as the top one: zero discordant pairs, p = 1, group a.
    assert "vs top: Holm-adjusted p = 1 (not significantly different)" in index


@requires_extra("site", "jinja2")  # the site's templates
def test_build_refuses_an_entry_that_no_longer_verifies(site_results: Path, tmp_path: Path, benchmarks_dir: Path):
    results = tmp_path / "leaderboard"
    shutil.copytree(site_results / "entries" / BASE_ENTRY, results / "entries" / BASE_ENTRY)
    manifest = next((results / "entries" / BASE_ENTRY / "runs").glob("nq_*")) / "manifest.json"
    manifest.write_text(manifest.read_text().replace("import", "run", 1))
    with pytest.raises(EvalsuiteError, match=rf"leaderboard entry .*{BASE_ENTRY} does not verify: \[checksum\]"):
        build_site(results, tmp_path / "site", data_dir=benchmarks_dir)


def test_build_does_not_wipe_a_foreign_directory(tmp_path: Path):
    from evalsuite.leaderboard.site import _prepare_output

    foreign = tmp_path / "precious"
    foreign.mkdir()
    (foreign / "keep.txt").write_text("mine")
    with pytest.raises(EvalsuiteError, match="not empty and was not built by evalsuite"):
        _prepare_output(foreign)
    assert (foreign / "keep.txt").read_text() == "mine"


def test_entry_page_says_how_its_setting_was_checked(built_site: Path):
    page = (built_site / "entries" / BASE_ENTRY / "index.html").read_text()
    # Imported outputs record no setting: the page says the setting is the submitter's declaration.
    assert "topk: declared: not stated by the manifest of bamboogle_2026_04_28_16_36_search_r1_base_seed1" in page


def test_hyphenated_words_are_kept_whole_and_everything_is_escaped():
    """A name cell keeps "pre-registered" on one line (a nowrap span per hyphenated word) and escapes the rest."""
    pytest.importorskip("jinja2")
    from evalsuite.leaderboard.site import unbroken_words

    html = str(unbroken_words('Qwen2.5-Coder <script>x</script> "a-b" run'))
    assert html == (
        '<span class="word">Qwen2.5-Coder</span> &lt;script&gt;x&lt;/script&gt; '
        '<span class="word">&#34;a-b&#34;</span> run'
    )
