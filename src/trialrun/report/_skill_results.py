"""Result files in the eval skill's own format, read as RunReports, so `report` and `compare` take them.

The skill writes `{"run_id", "timestamp", "config_snapshot", "tests": [{"id", "passed", "tools_used", "turns",
"score", "sub_scores"}]}` and no `schema_version`: a team moving from the skill compares its last skill run with its
first trialrun run. Each test becomes a case of one trial (the skill runs each test once) with no trial details.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .results import CaseResult, RunReport

__all__ = ["is_skill_result", "from_skill_result"]

_RUN_ID = re.compile(r"(\d{8})_(\d{6})")


def is_skill_result(data: dict[str, Any]) -> bool:
    """A JSON object in the skill's format: a `tests` list, a `run_id` or `timestamp`, and no `schema_version`."""
    return "schema_version" not in data and isinstance(data.get("tests"), list) and ("run_id" in data or "timestamp" in data)


def _started(data: dict[str, Any]) -> datetime | None:
    stamp = data.get("timestamp")
    if isinstance(stamp, str):
        try:
            moment = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            moment = None
        if moment is not None:
            return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
    match = _RUN_ID.search(str(data.get("run_id", "")))
    if match:
        try:  # eval_20260732_140000 has the shape of a date and is none (before: a traceback, the file unnamed)
            return datetime.strptime("".join(match.groups()), "%Y%m%d%H%M%S").replace(tzinfo=timezone.utc)
        except ValueError:
            return None
    return None


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _case(entry: Any, number: int, problem: Any) -> CaseResult:
    if not isinstance(entry, dict) or not isinstance(entry.get("id"), str) or not entry["id"]:
        raise problem(f"tests.{number}: a test needs an 'id' (text)")
    where = f"test {entry['id']!r} (tests.{number})"
    passed = entry.get("passed")
    if passed is not None and not isinstance(passed, bool):
        raise problem(f"{where}: passed must be true or false, got {passed!r}")
    score = entry.get("score")
    if score is not None and not _number(score):
        raise problem(f"{where}: score must be a number, got {score!r}")
    subs = entry.get("sub_scores")
    if subs is not None and (not isinstance(subs, dict) or not all(_number(v) for v in subs.values())):
        raise problem(f"{where}: sub_scores must map names to numbers, got {subs!r}")
    tools = entry.get("tools_used", [])
    if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
        raise problem(f"{where}: tools_used must be a list of tool names, got {tools!r}")
    turns = entry.get("turns")
    if turns is not None and not _number(turns):
        raise problem(f"{where}: turns must be a number, got {turns!r}")
    rate = None if passed is None else float(passed)
    return CaseResult(
        name=entry["id"], title=entry.get("name") if isinstance(entry.get("name"), str) else None,
        passed=passed, pass_at_1=rate, pass_pow_k=rate, score=None if score is None else float(score),
        sub_scores={str(k): float(v) for k, v in subs.items()} if subs else None, tools_used=list(tools),
        turns=None if turns is None else float(turns), metadata={"source": "eval skill result file"},
    )


def from_skill_result(data: dict[str, Any], path: Path, problem: Any) -> RunReport:
    """A RunReport from a skill-format result file; `problem(message)` makes the error that names the file."""
    started = _started(data)
    if started is None:
        raise problem("an eval skill result file needs a timestamp (ISO 8601) or a run_id such as eval_20260731_140000")
    snapshot = data.get("config_snapshot", {})
    if not isinstance(snapshot, dict):
        raise problem(f"config_snapshot must be an object, got {type(snapshot).__name__}")
    cases = [_case(entry, number, problem) for number, entry in enumerate(data["tests"])]
    run_id = data.get("run_id")
    return RunReport.build(cases, trial_count=1, started_at=started, duration_s=0.0,
                           run_id=str(run_id) if run_id is not None else path.stem, config_snapshot=snapshot)
