"""`leaderboard build` where the gold answers are not available (offline, no --data-dir): the site is built with
everything that does not need them, and the entries are listed as not re-verified here, in one line."""

from __future__ import annotations

from leaderboard_support import XSS_NAME, cli
from tests.conftest import import_extra

# markupsafe (jinja2 brings it): the escaping of the site's templates; without it the file is skipped, naming the extra
escape = import_extra("site", "markupsafe").escape


def test_without_gold_files_the_site_lists_entries_as_not_re_verified_and_keeps_the_paper_tables(site_results, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("EVALSUITE_CACHE_DIR", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("EVALSUITE_DATA_DIR", raising=False)
    empty = tmp_path / "no-data"
    empty.mkdir()
    out = tmp_path / "site"
    result = cli("leaderboard", "build", "--leaderboard", site_results, "-o", out, "--data-dir", empty)
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if line.startswith("warning:")]
    assert warnings == ["warning: 5 entries not re-verified here (gold answers not found: bamboogle/test, nq/test_sub1000, "
                        "triviaqa/test_sub1000): listed without scores; pass --data-dir DIR, or fetch them with "
                        "`evalsuite data download` (offline: --from DIR)"]
    index = (out / "index.html").read_text(encoding="utf-8")
    section = index[index.index('id="not-reverified"'):index.index('id="reported"')]
    assert section.count('<span class="badge reported">not re-verified here</span>') == 5
    assert str(escape(XSS_NAME)) in section and XSS_NAME not in index  # the four filed entries and the script-named one; a name stays text
    assert "Reported in the papers" in index and "reported-em" in index  # the paper tables need no gold answers
