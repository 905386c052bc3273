"""A real local Ray cluster for these tests: started once (two worker CPUs, no dashboard, no usage stats, bound to
127.0.0.1) by `ray.init` in this process, which is faster here than a separate `ray start --head` (about 14 s
either way on the CI box; `ray start` needs `ray stop` as well) and stops only what it started, at the end."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

# Ray takes the address of the machine's network interface as its node address, and its processes then talk to each
# other (and listen) there. The tests keep every connection on loopback: with this (read when ray is imported),
# Ray's node address is 127.0.0.1.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
# gRPC's fork handlers (on by default in grpcio) try to quiesce its threads around every fork(); when another thread is
# inside gRPC at that moment they give up ("Other threads are currently calling into gRPC, skipping fork() handlers")
# and the child can abort (SIGABRT) before it execs. On the loaded 2-core CI box that killed the Ray Client proxy's
# per-client server at birth, and the client then waited out the proxy's channel timeout (CI run of stop 29: a driver
# timed out at 180 s). This process and every process it starts (the proxy among them) only ever fork to exec, which
# is the case gRPC documents the switch for.
os.environ["GRPC_ENABLE_FORK_SUPPORT"] = "0"

import ray  # noqa: E402  # in the test extra: these tests run in CI, never skip


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[str]:
    """The cluster's address (for a second driver in a subprocess). One for this folder: under xdist its files are
    one unit of work on one worker (tests/_scheduling.py), and the cluster stops when the folder is done."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             logging_level="warning", log_to_driver=False)
    try:
        yield ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()


def sidecar_trials(path: Path) -> dict[tuple[str, int], list[dict[str, Any]]]:
    """A run's exchanges sidecar as {(case, trial): its exchanges}: every line whole, each trial once, so two runs'
    sidecars compare whatever order their trials finished in."""
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[0]["event"] == "start" and lines[0]["kept"] is True, lines[0]
    trials = {(line["case"], line["trial"]): line["exchanges"] for line in lines[1:]}
    assert len(trials) == len(lines) - 1 and all(line["event"] == "trial" for line in lines[1:])
    return trials


@pytest.fixture
def read_sidecar() -> Callable[[Path], dict[tuple[str, int], list[dict[str, Any]]]]:
    return sidecar_trials
