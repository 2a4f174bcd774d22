"""The one declaration of the settings that make runs comparable (runs/comparable.py): each reader's selection."""

from evalsuite.leaderboard.submission import Setting
from evalsuite.runs.comparable import COMPARABLE_SETTINGS, Use, names_for
from evalsuite.runs.schema import Manifest


def test_each_reader_selects_the_settings_it_compared_before():
    resume = (
        "model",
        "backend",
        "method",
        "prompt_template_hash",
        "decoding",
        "retriever",
        "topk",
        "max_turns",
        "tasks",
        "splits",
        "subset",
        "subset_ids_hash",
        "task rows",
        "shard",
    )
    assert names_for(Use.RESUME) == resume
    assert names_for(Use.MERGE) == resume[:-1]  # all but the shard: a merge combines different ones
    assert names_for(Use.TABLE) == ("corpus", "retriever", "topk", "max_turns", "subset")
    assert names_for(Use.LEADERBOARD) == ("method", "corpus", "retriever", "topk", "max_turns")
    assert names_for(Use.PAPER_LIMIT) == ("topk", "max_turns")


def test_names_are_unique_and_the_site_and_submission_fields_exist():
    names = [setting.name for setting in COMPARABLE_SETTINGS]
    assert len(names) == len(set(names))
    # the site's run card reads each by its Manifest field name
    assert set(names_for(Use.SITE)) <= set(Manifest.model_fields)
    # a submission declares the method in info.method and the rest of the leaderboard's settings in info.setting
    assert set(Setting.model_fields) == set(names_for(Use.LEADERBOARD)) - {"method"}
