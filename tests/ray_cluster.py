"""A real multi-node Ray cluster on this machine for tests: a head and worker nodes, each its own `ray start --block`
process (run by the interpreter running the tests) with its own ports, all under one short temporary directory (Unix
socket paths must stay under 107 bytes).

Stopping a node (or the cluster) ends its `ray start` process; Ray's reaper then ends that node's raylet and
workers. Nothing here runs `ray stop`, which would end every Ray process on the machine, other people's too.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# ports a node binds besides its worker processes' (a second node on one machine must not take the first's defaults)
NODE_PORT_OPTIONS = ("--node-manager-port", "--object-manager-port", "--metrics-export-port", "--dashboard-agent-listen-port",
                     "--dashboard-agent-grpc-port", "--runtime-env-agent-port")
WORKER_PORTS_PER_NODE = 12


def free_ports(count: int) -> list[int]:
    """`count` distinct ports the OS reports free on 127.0.0.1 (held open together so none repeats)."""
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass
class LocalRayCluster:
    """`ray start` processes on this machine: `address` is the head's; `workers` are the worker nodes' processes."""

    root: Path
    head: subprocess.Popen | None = None
    address: str = ""
    workers: list[subprocess.Popen] = field(default_factory=list)

    def _start(self, args: list[str], log: str, cpus: int) -> subprocess.Popen:
        ports = free_ports(len(NODE_PORT_OPTIONS) + WORKER_PORTS_PER_NODE)
        node_ports = [f"{option}={port}" for option, port in zip(NODE_PORT_OPTIONS, ports)]
        worker_ports = ",".join(str(port) for port in ports[len(NODE_PORT_OPTIONS):])
        # this interpreter's Ray, not the first `ray` on PATH: a node's workers run the Python that started it, and a
        # venv with --system-site-packages whose Ray came from the system has no `ray` script of its own (CI's vLLM
        # venv: the actors then ran the system Python, without vLLM)
        command = [sys.executable, "-m", "ray.scripts.scripts", "start", *args, "--node-ip-address=127.0.0.1", f"--num-cpus={cpus}", "--num-gpus=0",
                   "--disable-usage-stats", f"--worker-port-list={worker_ports}", *node_ports, "--block"]
        with (self.root / log).open("w") as handle:
            return subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)

    def start_head(self) -> None:
        (port,) = free_ports(1)
        self.head = self._start(["--head", f"--port={port}", f"--temp-dir={self.root}", "--include-dashboard=false"], "head.log", cpus=0)
        self.address = f"{_node_ip()}:{port}"
        self.wait_for_nodes(1)

    def add_worker(self, cpus: int = 1, attempts: int = 3) -> subprocess.Popen:
        """Start a worker node and wait until it has joined. Ray gives a node 30 s to register, which a loaded machine
        can miss: a node that gave up is started again."""
        wanted = self.alive_nodes() + 1
        for attempt in range(attempts):
            process = self._start([f"--address={self.address}"], f"worker{len(self.workers)}-{attempt}.log", cpus=cpus)
            while process.poll() is None and self.alive_nodes() < wanted:
                time.sleep(1)
            if process.poll() is None:
                self.workers.append(process)
                return process
        pytest.fail(f"a worker node did not start in {attempts} attempts; logs in {self.root}")

    def alive_nodes(self) -> int:
        """How many nodes the head counts alive (0 while it does not answer yet)."""
        import ray

        if self.head.poll() is not None:
            pytest.fail(f"the Ray head exited: {(self.root / 'head.log').read_text()[-1500:]}")
        host, _, port = self.address.rpartition(":")
        try:
            # ray.init waits minutes for a head that is not listening yet; a TCP connect does not
            socket.create_connection((host, int(port)), timeout=2).close()
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
            return sum(1 for node in ray.nodes() if node.get("Alive"))
        except (ConnectionError, OSError):
            return 0
        finally:
            ray.shutdown()

    def wait_for_nodes(self, count: int, timeout_s: float = 180) -> None:
        deadline = time.monotonic() + timeout_s
        while (alive := self.alive_nodes()) < count:
            if time.monotonic() > deadline:
                pytest.fail(f"the Ray cluster has {alive} of {count} nodes after {timeout_s:g} s; logs in {self.root}")
            time.sleep(1)

    def kill_worker(self, process: subprocess.Popen) -> None:
        """End a worker node at once: its `ray start` process group (raylet, workers, actors) gets SIGKILL."""
        _kill_group(process, signal.SIGKILL)
        self.workers.remove(process)

    def wait_for_killed_nodes(self, timeout_s: float = 180) -> None:
        """Wait until the head counts the killed nodes dead (a new node's arrival is only seen after that)."""
        deadline = time.monotonic() + timeout_s
        while self.alive_nodes() > 1 + len(self.workers):
            if time.monotonic() > deadline:
                pytest.fail(f"the head still counts a killed node alive after {timeout_s:g} s")
            time.sleep(1)

    def stop(self) -> None:
        # SIGKILL, not SIGTERM: a terminated node drains for 30 s first, which a test cluster need not wait for
        for process in [*self.workers, self.head]:
            if process is not None:
                _kill_group(process, signal.SIGKILL)
        shutil.rmtree(self.root, ignore_errors=True)


def _kill_group(process: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(process.pid, sig)  # start_new_session made the node's process group its own
    except ProcessLookupError:
        pass
    if sig == signal.SIGKILL:
        process.wait()


def _node_ip() -> str:
    """The address Ray gives this machine's nodes (it replaces 127.0.0.1 by the machine's own address)."""
    from ray._private.services import resolve_ip_for_localhost

    return resolve_ip_for_localhost("127.0.0.1")


def start_cluster(workers: int, cpus_per_worker: int = 1) -> LocalRayCluster:
    cluster = LocalRayCluster(Path(tempfile.mkdtemp(prefix="ray", dir="/tmp")))
    try:
        cluster.start_head()
        for _ in range(workers):
            cluster.add_worker(cpus_per_worker)
    except BaseException:
        cluster.stop()
        raise
    return cluster
