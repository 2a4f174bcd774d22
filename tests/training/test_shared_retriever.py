"""Training's rollouts search through the same shared retrieval server an evaluation uses: a recipe whose
`retriever:` is a /retrieve URL gets an HTTP client (one server for every training process on every node), and the
rollout loop sees exactly the passages the index itself gives."""

from __future__ import annotations

from pathlib import Path

import requests
import yaml

from evalsuite.agent.engine import RolloutConfig, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.models.replay import ReplayBackend
from evalsuite.protocol.recording import load_recording
from evalsuite.retrieval import ServerThread, create_app, load_retriever
from evalsuite.retrieval.http import HttpRetriever
from evalsuite.training.config import load_config
from evalsuite.training.trainer import load_retriever as training_retriever
from evalsuite.resources import method_configs_dir

REPO = Path(__file__).resolve().parents[2]
NQ_RECORDING = "nq_2026_04_28_16_43_search_r1_base_seed1.json"


def passages(rollouts):
    return [[turn.passages for turn in rollout.turns] for rollout in rollouts]


def test_a_recipe_with_a_retriever_url_searches_through_the_shared_server(tmp_path, trajectories_dir):
    from evalsuite.agent.default import demo_index_dir

    index = load_retriever(str(demo_index_dir()))
    recording = trajectories_dir / NQ_RECORDING
    questions = [(example.id, example.question) for example in list(load_recording(recording).values())[:6]]
    config = RolloutConfig(max_turns=4, max_tokens=500, topk=3)
    method = get_method("search-r1")

    def rollouts(retriever):
        return RolloutEngine(ReplayBackend(str(recording)), method, retriever, config, "instruct").run(questions)

    with ServerThread(create_app(index)) as server:
        recipe = yaml.safe_load((method_configs_dir("search-r1") / "gpu.yaml").read_text())
        recipe["retriever"] = server.url
        (tmp_path / "recipe.yaml").write_text(yaml.safe_dump(recipe))
        trained_with = load_config(tmp_path / "recipe.yaml", "search-r1").retriever
        retriever = training_retriever(trained_with)  # what build_grpo hands the rollout function
        assert isinstance(retriever, HttpRetriever) and retriever.url == server.url
        served = rollouts(retriever)
        health = requests.get(server.url.removesuffix("/retrieve") + "/health", timeout=10).json()
    searches = sum(1 for rollout in served for turn in rollout.turns if turn.query)
    assert searches > 0 and health["queries"] == searches
    assert passages(served) == passages(rollouts(index))
