"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

# httpx imports httpcore lazily: imported here, before any in-process pytester run, so that the run's restore of
# sys.modules never drops it (a later request then raised a raw httpcore.ConnectError that no `except httpx.HTTPError`
# caught: seen in the viewer's tests after the pytest plugin's).
import httpcore  # noqa: F401
import pytest

PROVIDER_TRAFFIC = Path(__file__).resolve().parent / "fixtures" / "provider-traffic"


def _import_all_of_trialrun() -> None:
    """trialrun imports its modules lazily; import them all now, so that pytester's in-process runs (which drop
    modules first imported during a run) never leave two copies of a class behind."""
    import importlib
    import pkgutil

    import trialrun

    for info in pkgutil.walk_packages(trialrun.__path__, "trialrun."):
        if not info.name.endswith("__main__"):
            importlib.import_module(info.name)


_import_all_of_trialrun()


@pytest.fixture
def provider_traffic() -> Path:
    """Folder of real recorded provider traffic (VCR-style YAML cassettes), one sub-folder per wire format."""
    return PROVIDER_TRAFFIC


@pytest.fixture(autouse=True, scope="session")
def _no_network() -> object:
    """The whole test suite runs offline: any connection to a non-loopback host fails loudly."""
    from trialrun.models import guard

    guard.install()
    guard.block_globally(True)
    yield
    guard.block_globally(False)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """With `--dist loadfile` (pyproject's addopts), the Ray tests' files are one unit of work: tests/_scheduling.py."""
    if config.getvalue("dist") != "loadfile":
        return None
    import _scheduling

    return _scheduling.scheduler_class()(config, log)


def pytest_report_header(config: pytest.Config) -> str:
    import _agent_scope

    word, why = _agent_scope.scope()
    if word == "full":
        return f"real-agent batteries: full ({why})"
    return (f"real-agent batteries: gate ({why}): one verdict-truth scenario per preset, the per-agent batteries on "
            f"{', '.join(sorted(_agent_scope.GATE_AGENTS))}; TRIALRUN_BATTERY=full runs every agent")


def _narrowed_out(item: pytest.Item, tests: Path) -> bool:
    """Whether a gate run leaves this test out: a per-agent battery's test of an agent outside GATE_AGENTS."""
    import _agent_scope

    try:
        relative = "tests/" + item.path.relative_to(tests).as_posix()
    except ValueError:
        return False
    if f"{relative}::{getattr(item, 'originalname', item.name)}" in _agent_scope.SLOW_AGENT_TESTS:
        return True
    param = _agent_scope.NARROWED.get(relative)
    callspec = getattr(item, "callspec", None)
    return param is not None and callspec is not None and callspec.params.get(param) not in _agent_scope.GATE_AGENTS


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Every test that drives a real CLI coding agent (it takes `agent_path`) is marked `real_agent` (the agents are
    node programs and Python venvs of their own: `.ci/run` runs them on its first interpreter only); every test of
    a file in tests/_by_version.py is marked `by_version` (what `.ci/run` runs on 3.10 and the newest CPython too).
    In the gate scope (tests/_agent_scope.py) the per-agent batteries drive only the quick agents; the others are
    deselected (named in the header), never skipped."""
    import _agent_scope
    from _by_version import by_version_files

    files = by_version_files()
    tests = Path(__file__).resolve().parent
    narrowed = [item for item in items if _narrowed_out(item, tests)] if _agent_scope.is_gate() else []
    if narrowed:
        config.hook.pytest_deselected(items=narrowed)
        items[:] = [item for item in items if item not in narrowed]
    for item in items:
        if "agent_path" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.real_agent)
        try:
            relative = item.path.relative_to(tests).as_posix()
        except ValueError:  # a test outside this folder (pytester's own)
            continue
        if relative in files:
            item.add_marker(pytest.mark.by_version)
