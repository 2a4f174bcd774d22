"""Grouping sampled requests into one request for n samples (`native_n_groups`), and the seeding that makes a
question's K samples consecutive (`request_seed`). No engine here: tests/models/test_vllm_parallel_sampling.py
checks on the real vLLM engine that such a group's `n` request draws what its single requests draw."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from evalsuite.models.base import GenerationRequest, native_n_groups, request_seed


def settings_of(request: GenerationRequest) -> tuple:
    return request.prompt, tuple(request.stop), request.max_tokens, request.temperature, request.top_p


requests_strategy = st.lists(
    st.builds(
        GenerationRequest,
        prompt=st.sampled_from(["p", "q"]),
        stop=st.sampled_from([[], ["</search>"]]),
        max_tokens=st.sampled_from([8, 9]),
        temperature=st.sampled_from([0.0, 0.7]),
        seed=st.integers(0, 6),
        top_p=st.sampled_from([None, 0.9]),
        key=st.sampled_from([None, ("q0", 0), ("q0", 1), ("q1", 0)]),
    ),
    max_size=24,
)


@settings(max_examples=300, deadline=None)
@given(requests_strategy)
def test_groups_cover_every_request_once_with_one_setting_and_consecutive_seeds(requests):
    groups = native_n_groups(requests)
    assert sorted(i for group in groups for i in group) == list(range(len(requests)))
    assert [min(group) for group in groups] == sorted(min(group) for group in groups)  # in first-request order
    for group in groups:
        first = requests[group[0]]
        assert all(settings_of(requests[i]) == settings_of(first) for i in group)
        # the group's n request is seeded by its first request; child j draws seed + j, which must be request j's
        assert [request_seed(requests[i]) for i in group] == [request_seed(first) + j for j in range(len(group))]
        if len(group) > 1:
            assert first.temperature > 0  # greedy requests are never grouped
    # as large as they can be (where no seed repeats within a setting): no group continues another
    sampled = [(settings_of(r), request_seed(r)) for r in requests if r.temperature > 0]
    firsts = {(settings_of(requests[g[0]]), request_seed(requests[g[0]])) for g in groups}
    for group in groups:
        last = requests[group[-1]]
        if last.temperature > 0 and all(sampled.count(pair) == 1 for pair in sampled if pair[0] == settings_of(last)):
            assert (settings_of(last), request_seed(last) + 1) not in firsts


def test_a_questions_samples_are_one_group_in_seed_order_and_other_questions_apart():
    # sample j of a run seeded 40 samples with seed 40 + j; one key per question and turn
    requests = [GenerationRequest("Q1", temperature=0.7, seed=40 + j, key=("q1", 0)) for j in (2, 0, 1)]
    requests += [GenerationRequest("Q2", temperature=0.7, seed=40 + j, key=("q2", 0)) for j in range(2)]
    requests.append(GenerationRequest("Q1", temperature=0.7, seed=40, key=("q1", 1)))  # another turn: another hash
    assert native_n_groups(requests) == [[1, 2, 0], [3, 4], [5]]
    assert native_n_groups(requests, grouping=False) == [[i] for i in range(6)]  # a backend's native_n=false


def test_seeds_that_are_not_consecutive_or_repeat_are_not_grouped():
    gap = [GenerationRequest("Q", temperature=1.0, seed=s, key=("q", 0)) for s in (1, 3)]
    assert native_n_groups(gap) == [[0], [1]]
    twice = [GenerationRequest("Q", temperature=1.0, seed=5, key=("q", 0)) for _ in range(2)]
    assert native_n_groups(twice) == [[0], [1]]  # the same seed twice: two requests, not n = 2 drawing two samples
    greedy = [GenerationRequest("Q", temperature=0.0, seed=s, key=("q", 0)) for s in (1, 2)]
    assert native_n_groups(greedy) == [[0], [1]]


def test_request_seeds_are_linear_in_the_runs_seed():
    for key in [("q1", 0), ("q7", 3), ("r0#2", -1)]:
        base = request_seed(GenerationRequest("p", seed=40, key=key))
        assert [request_seed(GenerationRequest("p", seed=40 + j, key=key)) for j in range(4)] == [(base + j) % 2**32 for j in range(4)]
    # still different across keys (trajectories, turns) and within 32 bits
    seeds = {request_seed(GenerationRequest("p", seed=2**40, key=(f"q{i}", t))) for i in range(50) for t in range(3)}
    assert len(seeds) == 150 and all(0 <= s < 2**32 for s in seeds)
