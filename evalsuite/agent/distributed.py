"""`evalsuite run --ray ADDRESS`: one run's examples spread over Ray actors, each holding one backend replica.

The driver (the process running `evalsuite run`) reads the tasks, hands out batches and alone writes the run
directory. Each actor loads the model once (with `num_gpus` GPUs of its own; vLLM's tensor parallelism runs inside
the actor) and plays its batches with the same `RolloutEngine` a single-process run uses, on the run's schedule (on
the asynchronous one, a batch's trajectories advance each on its own), so greedy predictions are the same example
for example. Retrieval is one shared service: a URL goes to every actor as it is; an index
directory (or `adqa`) is loaded once by the driver and served over HTTP by the `evalsuite serve-retriever`
application on the driver's node; `replay` stays the recording's own passages inside each actor.

Finished batches stream back and are appended to predictions.jsonl as they arrive, so a killed driver loses only
the batches in flight and `--resume` redoes nothing finished. A dead actor's batches go back to the queue and run
on the others; when no actor is left, the run stops as a run whose retriever went away does (finished work kept,
`--resume` continues). A completed run's predictions are rewritten in example order, as a single-process run
writes them, so `merge`, `score` and every other reader see the same file.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import socket
import sys
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from evalsuite.agent.engine import RetrievalUnavailable, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.agent.runner import (
    Example,
    ProgressHook,
    RunResult,
    RunSpec,
    build_manifest,
    in_example_order,
    keep_in_example_order,
    load_examples,
    load_retriever_spec,
    open_run,
    resolve_schedule,
    retriever_info,
    to_record,
    with_local_model,
)
from evalsuite.errors import EvalsuiteError, first_line, require
from evalsuite.models.registry import load_backend
from evalsuite.runs import ExampleRecord

# Batches queued per actor: one running and one waiting, so an actor never idles while the driver answers it.
BATCHES_PER_ACTOR = 2
# `--ray local` starts Ray on this machine; `auto` joins the cluster this machine belongs to (`ray start`).
ADDRESS_HELP = (
    "pass --ray HEAD_IP:PORT (the port of `ray start --head`), --ray "
    "auto (the cluster this machine joined) or --ray local"
)


@dataclass(frozen=True)
class RayOptions:
    """Where the run goes and what each actor reserves."""

    address: str = "local"
    actors: int | None = None  # None: as many as the cluster's CPUs (or GPUs, for GPU actors) hold
    num_cpus: float = 1.0
    num_gpus: float = 0.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        for option, value, least in (
            ("--ray-actors", self.actors, 1),
            ("--ray-cpus-per-actor", self.num_cpus, 0),
            ("--ray-gpus-per-actor", self.num_gpus, 0),
        ):
            if value is not None and value < least:
                raise EvalsuiteError(
                    f"{option} {value:g} is out of range", hint=f"give {option} a value of at least {least}"
                )


@dataclass
class BatchOutcome:
    """What an actor sends back for one batch."""

    records: list[ExampleRecord]
    stopped: str | None = None  # the retriever stayed unreachable: the run stops, finished work kept
    error: tuple[str, str | None] | None = None  # (message, hint) of a user error the run cannot go on from


class EvaluationWorker:
    """The body of one Ray actor: a backend replica, its retriever client and the rollout engine."""

    def __init__(self, spec: RunSpec, retriever: str | None):
        self.load_error: str | None = None
        try:
            self.method = get_method(spec.method)
            self.backend = load_backend(spec.backend, spec.model, **spec.backend_options)
            self.style = self.method.resolve_style(spec.prompt_style, self.backend.has_chat_template())
            self.retriever_spec = retriever
            self.retriever = load_retriever_spec(retriever, self.backend)
            self.engine = RolloutEngine(self.backend, self.method, self.retriever, spec.rollout, self.style)
            self.schedule = spec.schedule or resolve_schedule(spec, self.backend)  # execute_on_ray resolved it already
        except Exception as exc:  # noqa: BLE001 - reported by describe(): the driver says it in one line instead of Ray's traceback
            self.load_error = exc.message if isinstance(exc, EvalsuiteError) else f"{type(exc).__name__}: {exc}"

    def describe(self) -> dict[str, Any]:
        """The backend's manifest fields (or why it did not load), and where this actor runs."""
        import ray

        where = {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()}
        if self.load_error is not None:
            return {"error": self.load_error, **where}
        return {
            "backend": self.backend.info(),
            "style": self.style,
            "retriever": retriever_info(self.retriever, self.retriever_spec),
            **where,
        }

    def run(self, batch: list[Example]) -> BatchOutcome:
        items = [(example.row.id, example.row.question) for example in batch]
        try:
            if self.schedule == "async":
                rollouts = asyncio.run(self.engine.run_async(items, max_in_flight=len(items)))
            else:
                rollouts = self.engine.run(items)
        except RetrievalUnavailable as exc:
            return BatchOutcome([], stopped=exc.message)
        except EvalsuiteError as exc:
            return BatchOutcome([], error=(exc.message, exc.hint))
        return BatchOutcome([to_record(example, rollout, self.method) for example, rollout in zip(batch, rollouts)])


def execute_on_ray(
    spec: RunSpec,
    options: RayOptions,
    on_start: Callable[[int, int], None] | None = None,
    on_batch: ProgressHook | None = None,
) -> RunResult:
    """Run the evaluation described by `spec` on a Ray cluster; the run directory is the one `execute` writes."""
    ray = require("ray", "ray", "evaluation on a Ray cluster (--ray)")
    examples, fields = load_examples(spec)
    # resolved here, before Ray starts or any actor loads a model: a schedule the backend cannot run is one line
    schedule = resolve_schedule(spec)
    spec = replace(spec, schedule=schedule)
    spec = with_local_model(spec)  # built once here, not by every actor
    method = get_method(spec.method)
    connect(ray, options)
    try:
        with shared_retriever(spec.retriever, spec.rollout.topk, retrieval_host(ray)) as (actor_retriever, served_info):
            batches_wanted = max(1, math.ceil(len(examples) / spec.batch_size))
            actors, descriptions = start_actors(ray, spec, actor_retriever, options, batches_wanted)
            first = descriptions[0]
            style = first["style"]
            info = served_info if served_info is not None else first["retriever"]
            manifest = build_manifest(
                spec, first["backend"], style, method.template_hash(style), info, fields, schedule
            )
            directory, done, todo, paper = open_run(spec, manifest, examples, on_start)
            batches = [todo[start : start + spec.batch_size] for start in range(0, len(todo), spec.batch_size)]
            with directory.writer() as writer:

                def keep(records: list[ExampleRecord]) -> None:
                    writer.extend(records)
                    if on_batch:
                        on_batch(records)

                new, stopped = dispatch(ray, actors, batches, keep)
    finally:
        ray.shutdown()
    records = in_example_order(done + new, examples)
    if stopped is None:
        keep_in_example_order(directory, done + new, records)
    metrics = directory.finish(manifest, records, complete=stopped is None)
    return RunResult(directory=directory, records=records, metrics=metrics, stopped=stopped, paper=paper)


def connect(ray: Any, options: RayOptions) -> None:
    """Join the cluster at `options.address`, or say in one line that nothing answers there."""
    address = options.address
    if address not in ("local", "auto"):
        # ray.init retries an address that does not answer for minutes; a plain TCP connect says so in seconds
        host, _, port = address.removeprefix("ray://").rpartition(":")
        if not host or not port.isdigit():
            raise EvalsuiteError(f"--ray {address!r} is not a Ray address", hint=ADDRESS_HELP)
        try:
            socket.create_connection((host.strip("[]"), int(port)), timeout=options.connect_timeout_s).close()
        except OSError as exc:
            raise EvalsuiteError(
                f"no Ray cluster answers at {address} ({exc.strerror or exc})",
                hint=f"start its head with `ray start --head --port={port}` or check the address; {ADDRESS_HELP}",
            ) from None
    try:
        ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False)
    except ConnectionError as exc:
        raise EvalsuiteError(f"could not join the Ray cluster at {address}: {exc}", hint=ADDRESS_HELP) from None


def retrieval_host(ray: Any) -> str:
    """Where the driver's retrieval server listens: loopback when every node is this machine, else this node's IP."""
    here = ray.util.get_node_ip_address()
    nodes = [node["NodeManagerAddress"] for node in ray.nodes() if node.get("Alive")]
    return "127.0.0.1" if all(node == here for node in nodes) else here


@contextmanager
def shared_retriever(spec: str | None, topk: int, host: str) -> Iterator[tuple[str | None, dict[str, Any] | None]]:
    """(the retriever spec each actor loads, the manifest's retriever fields, or None where the actors report them).

    An index directory is loaded here once and served over HTTP for the whole run; its manifest fields are those of
    the index itself, exactly as a single-process run over the same directory records them."""
    if spec is None or spec == "replay":
        yield spec, None
        return
    retriever = load_retriever_spec(spec, None)
    info = retriever_info(retriever, spec)
    from evalsuite.retrieval.index import is_url

    if is_url(str(spec)):
        yield spec, info
        return
    from evalsuite.retrieval.server import ServerThread, create_app

    with ServerThread(create_app(retriever, default_topk=topk), host=host) as server:
        yield server.url, info


def start_actors(
    ray: Any, spec: RunSpec, retriever: str | None, options: RayOptions, batches: int
) -> tuple[list[Any], list[dict[str, Any]]]:
    """One actor per backend replica (as many as `options` asks, the cluster holds and the batches need), each with
    its model loaded; an actor that could not load it stops the run before anything is written."""
    count = min(actor_count(ray.cluster_resources(), options), batches)
    worker = ray.remote(EvaluationWorker).options(num_cpus=options.num_cpus, num_gpus=options.num_gpus, max_restarts=0)
    actors = [worker.remote(spec, retriever) for _ in range(count)]
    alive, descriptions = [], []
    for actor, described in zip(actors, _gather(ray, [actor.describe.remote() for actor in actors])):
        if isinstance(described, Exception):
            continue  # died while loading (its node went away): the others carry the run
        if "error" in described:
            for other in actors:
                ray.kill(other)
            raise EvalsuiteError(
                f"a Ray actor could not load the model: {described['error']}",
                hint=(
                    "check --model, --backend and --backend-option: the "
                    "model must be readable on every node of the cluster"
                ),
            )
        alive.append(actor)
        descriptions.append(described)
    if not alive:
        raise EvalsuiteError(
            "every Ray actor died while loading the model", hint="check the cluster's nodes (`ray status`) and rerun"
        )
    return alive, descriptions


def actor_count(resources: dict[str, float], options: RayOptions) -> int:
    """How many actors to start: `options.actors`, which the cluster must hold, or as many as it holds."""
    cpus, gpus = resources.get("CPU", 0.0), resources.get("GPU", 0.0)
    room = [math.floor(cpus / options.num_cpus + 1e-9)] if options.num_cpus > 0 else []
    room += [math.floor(gpus / options.num_gpus + 1e-9)] if options.num_gpus > 0 else []
    holds = min(room) if room else options.actors or 1
    wanted = options.actors or holds
    if wanted > holds or holds == 0:
        raise EvalsuiteError(
            f"the Ray cluster has {cpus:g} CPUs and {gpus:g} GPUs: no room for {wanted or 1} actor(s) of "
            f"{options.num_cpus:g} CPUs and {options.num_gpus:g} GPUs each",
            hint="add nodes, or lower --ray-actors, --ray-cpus-per-actor or --ray-gpus-per-actor",
        )
    return wanted


def dispatch(
    ray: Any, actors: list[Any], batches: list[list[Example]], keep: Callable[[list[ExampleRecord]], None]
) -> tuple[list[ExampleRecord], str | None]:
    """Play every batch on the actors, `keep`ing each finished batch as it arrives; a dead actor's batches are
    queued again for the others. Returns the new records and why the run stopped early (None: it completed)."""
    queue = deque(batches)
    running: dict[Any, tuple[int, list[Example]]] = {}  # task reference -> (actor index, batch)
    alive = set(range(len(actors)))
    load = dict.fromkeys(alive, 0)

    def feed() -> None:
        for index in sorted(alive, key=lambda i: load[i]):
            while queue and load[index] < BATCHES_PER_ACTOR:
                batch = queue.popleft()
                running[actors[index].run.remote(batch)] = (index, batch)
                load[index] += 1

    new: list[ExampleRecord] = []
    feed()
    while running:
        (ref,), _ = ray.wait(list(running), num_returns=1)
        index, batch = running.pop(ref)
        load[index] -= 1
        try:
            outcome = ray.get(ref)
        except ray.exceptions.RayActorError as exc:
            queue.appendleft(batch)
            if index in alive:
                alive.discard(index)
                print(
                    f"warning: Ray actor {index} died ({_first_line(exc)}); its batches go to the {len(alive)} others",
                    file=sys.stderr,
                    flush=True,
                )
            if not alive:
                return new, f"every Ray actor died (the last: {_first_line(exc)})"
            feed()
            continue
        if outcome.error is not None:
            raise EvalsuiteError(*outcome.error)
        if outcome.stopped is not None:
            return new, outcome.stopped
        keep(outcome.records)
        new.extend(outcome.records)
        feed()
    return new, None


def _gather(ray: Any, refs: list[Any]) -> list[Any]:
    """Each reference's value, or the RayActorError its actor died with."""
    out: list[Any] = []
    for ref in refs:
        try:
            out.append(ray.get(ref))
        except ray.exceptions.RayActorError as exc:
            out.append(exc)
    return out


def _first_line(exc: BaseException) -> str:
    return first_line(exc)[:200]
