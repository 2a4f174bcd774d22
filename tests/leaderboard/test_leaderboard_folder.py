"""The leaderboard folder: which one `add`/`build` use by default, and site.yaml's settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from evalsuite.errors import DataError, EvalsuiteError
from evalsuite.leaderboard.results import resolve_leaderboard_dir
from evalsuite.leaderboard.site import build_site
from tests.conftest import requires_extra

REPO = Path(__file__).resolve().parents[2]


def test_default_is_the_working_directorys_leaderboard_else_the_shipped_one(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_leaderboard_dir(None) == REPO / "leaderboard"  # in a source tree the shipped copy is the repo's
    (tmp_path / "leaderboard" / "entries").mkdir(parents=True)
    assert resolve_leaderboard_dir(None) == Path("leaderboard")
    with pytest.raises(EvalsuiteError, match="leaderboard directory missing does not exist"):
        resolve_leaderboard_dir("missing")


@requires_extra("site", "jinja2")  # the site's templates
def test_site_yaml_names_the_site_and_a_wrong_key_is_refused(tmp_path):
    board = tmp_path / "board"
    (board / "entries").mkdir(parents=True)
    (board / "site.yaml").write_text('title: "Agents & <friends>"\nheading: Our board\npage_size: 10\n')
    summary = build_site(board, tmp_path / "site")
    index = (tmp_path / "site" / "index.html").read_text()
    assert "<title>Agents &amp; &lt;friends&gt;</title>" in index and "<h1>Our board</h1>" in index
    assert summary.entries == 0 and summary.source == board
    (board / "site.yaml").write_text("titel: x\n")
    with pytest.raises(DataError, match=r"site.yaml: titel: Extra inputs are not permitted"):
        build_site(board, tmp_path / "site2")
