"""`evalsuite run --ray ADDRESS` (`runner.execute(spec, ray=RayOptions(...))`): one run's trajectories spread over
Ray actors, each holding one backend replica. This module supplies only the actors (`RayWorkers`): the examples,
each question's samples and their seeds, the manifest, `--resume` and the run directory are `runner.execute`'s, the
same code a single-process run goes through.

The driver (the process running `evalsuite run`) reads the tasks, hands out batches and alone writes the run
directory. Each actor loads the model once (with `num_gpus` GPUs of its own; vLLM's tensor parallelism runs inside
the actor) and plays its batches (a question's samples together, each with its own seed) with the same
`runner.roll_out` a single-process run uses, on the run's schedule, so the records are the same trajectory for
trajectory. Retrieval is one shared service: a URL goes to every actor as it is; an index
directory (or `adqa`) is loaded once by the driver and served over HTTP by the `evalsuite serve-retriever`
application on the driver's node; `replay` stays the recording's own passages inside each actor.

Finished batches stream back and are appended to predictions.jsonl as they arrive, so a killed driver loses only
the batches in flight and `--resume` redoes nothing finished. A dead actor's batches go back to the queue and run
on the others; when no actor is left, the run stops as a run whose retriever went away does (finished work kept,
`--resume` continues). A completed run's predictions are rewritten in example order, as a single-process run
writes them, so `merge`, `score` and every other reader see the same file.
"""

from __future__ import annotations

import logging
import math
import os
import socket
import sys
from collections import deque
from collections.abc import Callable, Iterator
import contextlib
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from evalsuite.agent.engine import RetrievalUnavailable, RolloutEngine
from evalsuite.agent.method import get_method
from evalsuite.agent.runner import (
    RunSpec,
    Trajectory,
    load_retriever_spec,
    question_batches,
    resolve_schedule,
    retriever_info,
    roll_out,
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

    def check_installed(self) -> Any:
        """The `ray` module, or the one-line error naming the extra that installs it."""
        return require("ray", "ray", "evaluation on a Ray cluster (--ray)")

    def workers(
        self, spec: RunSpec, schedule: str, trajectories: int, stage: Callable[[str], None]
    ) -> contextlib.AbstractContextManager[RayWorkers]:
        """`runner.execute`'s workers on this cluster (`runner.RayLauncher`)."""
        return ray_workers(spec, schedule, self, trajectories, stage)


@dataclass
class BatchOutcome:
    """What an actor sends back for one batch."""

    records: list[ExampleRecord]
    stopped: str | None = None  # the retriever stayed unreachable: the run stops, finished work kept
    error: tuple[str, str | None] | None = None  # (message, hint) of a user error the run cannot go on from


class EvaluationWorker:
    """The body of one Ray actor: a backend replica, its retriever client and the rollout engine, on the run's
    schedule (`schedule`, resolved by the driver; None: this backend's own choice)."""

    def __init__(self, spec: RunSpec, retriever: str | None, schedule: str | None = None):
        self.load_error: str | None = None
        # the settings as this actor's evalsuite reads them (the driver checks they are its own: `start_actors`)
        self.settings = spec.config.model_dump(mode="json")
        try:
            self.method = get_method(spec.method)
            self.backend = load_backend(spec.backend, spec.model, **spec.backend_options)
            self.style = self.method.resolve_style(spec.config.prompt_style, self.backend.has_chat_template())
            self.retriever_spec = retriever
            self.retriever = load_retriever_spec(retriever, self.backend)
            self.engine = RolloutEngine(self.backend, self.method, self.retriever, spec.config.rollout(), self.style)
            self.schedule = schedule or resolve_schedule(spec, self.backend)
        except Exception as exc:  # noqa: BLE001 - reported by describe(): the driver says it in one line instead of Ray's traceback
            self.load_error = exc.message if isinstance(exc, EvalsuiteError) else f"{type(exc).__name__}: {exc}"

    def describe(self) -> dict[str, Any]:
        """The backend's manifest fields (or why it did not load), and where this actor runs."""
        import ray

        where = {"pid": os.getpid(), "node": ray.get_runtime_context().get_node_id()}
        if self.load_error is not None:
            return {"error": self.load_error, **where}
        return {
            "settings": self.settings,
            "backend": self.backend.info(),
            "style": self.style,
            "retriever": retriever_info(self.retriever, self.retriever_spec),
            **where,
        }

    def run(self, batch: list[Trajectory]) -> BatchOutcome:
        """A batch of trajectories (each with its sample index and seed), rolled out as a single-process run's."""
        records: list[ExampleRecord] = []
        try:
            roll_out(self.engine, self.method, batch, self.schedule, len(batch), records.extend)
        except RetrievalUnavailable as exc:
            return BatchOutcome(records, stopped=exc.message)
        except EvalsuiteError as exc:
            return BatchOutcome([], error=(exc.message, exc.hint))
        return BatchOutcome(records)


@dataclass
class RayWorkers:
    """`runner.execute`'s workers on Ray: the actors, and the manifest fields the first of them reported."""

    ray: Any
    actors: list[Any]
    batch_size: int
    backend_info: dict[str, Any]
    style: str
    retriever_info: dict[str, Any]

    def roll_out(self, todo: list[Trajectory], keep: Callable[[list[ExampleRecord]], None]) -> str | None:
        # the batches a sync run makes: a question's samples stay together, so each goes to one actor in one call
        return dispatch(self.ray, self.actors, question_batches(todo, self.batch_size), keep)


@contextmanager
def ray_workers(
    spec: RunSpec, schedule: str, options: RayOptions, trajectories: int, stage: Callable[[str], None]
) -> Iterator[RayWorkers]:
    """Join the cluster, serve the retriever, start the actors (each loading the model); Ray is shut down after."""
    ray = options.check_installed()
    stage("starting Ray's actors and their models")
    connect(ray, options)
    try:
        with shared_retriever(spec.retriever, spec.config.topk, retrieval_host(ray)) as (actor_retriever, served_info):
            batches_wanted = max(1, math.ceil(trajectories / spec.config.batch_size))
            actors, descriptions = start_actors(ray, spec, actor_retriever, schedule, options, batches_wanted)
            first = descriptions[0]
            info = served_info if served_info is not None else first["retriever"]
            yield RayWorkers(ray, actors, spec.config.batch_size, first["backend"], first["style"], info)
    finally:
        ray.shutdown()


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
    ray: Any, spec: RunSpec, retriever: str | None, schedule: str, options: RayOptions, batches: int
) -> tuple[list[Any], list[dict[str, Any]]]:
    """One actor per backend replica (as many as `options` asks, the cluster holds and the batches need), each with
    its model loaded; an actor that could not load it stops the run before anything is written."""
    count = min(actor_count(ray.cluster_resources(), options), batches)
    worker = ray.remote(EvaluationWorker).options(num_cpus=options.num_cpus, num_gpus=options.num_gpus, max_restarts=0)
    actors = [worker.remote(spec, retriever, schedule) for _ in range(count)]
    alive, descriptions = [], []
    for actor, described in zip(actors, _gather(ray, [actor.describe.remote() for actor in actors])):
        if isinstance(described, Exception):
            continue  # died while loading (its node went away): the others carry the run
        refused = actor_refusal(described, spec.config.model_dump(mode="json"))
        if refused is not None:
            for other in actors:
                ray.kill(other)
            raise refused
        alive.append(actor)
        descriptions.append(described)
    if not alive:
        raise EvalsuiteError(
            "every Ray actor died while loading the model", hint="check the cluster's nodes (`ray status`) and rerun"
        )
    return alive, descriptions


def actor_refusal(described: dict[str, Any], settings: dict[str, Any]) -> EvalsuiteError | None:
    """Why an actor cannot play the run: it could not load the model, or its evalsuite reads the run's settings
    otherwise than the driver's (a node with another version would drop or change one: every path honours every
    setting, or the run stops before anything is written). None: it can."""
    if "error" in described:
        return EvalsuiteError(
            f"a Ray actor could not load the model: {described['error']}",
            hint=(
                "check --model, --backend and --backend-option: the model must be readable on every node of the cluster"
            ),
        )
    theirs = described["settings"]
    unknown = object()  # a setting one side lacks differs even where the other's value is null
    differing = sorted(k for k in settings.keys() | theirs.keys() if settings.get(k, unknown) != theirs.get(k, unknown))
    if differing:
        return EvalsuiteError(
            f"a Ray actor reads the run's settings otherwise than this driver ({', '.join(differing)}): "
            "its node runs another evalsuite",
            hint="install the same evalsuite on every node of the cluster",
        )
    return None


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
    ray: Any, actors: list[Any], batches: list[list[Trajectory]], keep: Callable[[list[ExampleRecord]], None]
) -> str | None:
    """Play every batch on the actors, `keep`ing each finished batch as it arrives; a dead actor's batches are
    queued again for the others. Returns why the run stopped early (None: it completed)."""
    queue = deque(batches)
    running: dict[Any, tuple[int, list[Trajectory]]] = {}  # task reference -> (actor index, batch)
    alive = set(range(len(actors)))
    load = dict.fromkeys(alive, 0)

    def feed() -> None:
        for index in sorted(alive, key=lambda i: load[i]):
            while queue and load[index] < BATCHES_PER_ACTOR:
                batch = queue.popleft()
                running[actors[index].run.remote(batch)] = (index, batch)
                load[index] += 1

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
                return f"every Ray actor died (the last: {_first_line(exc)})"
            feed()
            continue
        if outcome.error is not None:
            raise EvalsuiteError(*outcome.error)
        keep(outcome.records)  # (a stopped batch's finished trajectories too)
        if outcome.stopped is not None:
            return outcome.stopped
        feed()
    return None


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
