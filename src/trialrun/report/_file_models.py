"""The lines of the files a results folder holds besides the result files, as typed models: a run's journal
(`results_<stamp>.jsonl`, docs/journal.md) and its exchanges sidecar (`results_<stamp>.exchanges.ndjson`).

These are file schemas, apart from the runtime objects built from them (`RunReport`, `LiveRun`, the trial page's
exchanges), as `suite.SuiteTest` is apart from `Case`: what a line must hold is said once, here, and a line that
holds something else (a field of the wrong type, a hand-edited or hostile file) becomes a note that names the file,
the line and the field (`note`: "results_X.jsonl line 1: cases must be a list"), never an exception deep inside a
reader. A result file's schema is `results.RunReport` itself (`store.load_report` names its problems).

Types are strict (JSON's own: `"3"` is not a number, `1` is not true); fields a later version adds are ignored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    field_validator,
)

__all__ = ["iso_time", "JournalCase", "JournalStart", "JournalTrial", "JournalEnd", "TrialOutcome", "SidecarStart",
           "SidecarTrial", "SidecarExchange", "problem", "validated"]

#: A JSON number (an integer or not; never a boolean or text).
Number = Annotated[float, Strict()]
_Model = TypeVar("_Model", bound=BaseModel)


class _Line(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


# -- the journal ----------------------------------------------------------------------------------------------
class JournalCase(_Line):
    """One selected case of the journal's start line (`journal.case_plan`)."""

    name: StrictStr
    title: StrictStr | None = None
    description: StrictStr | None = None
    tags: list[StrictStr] = Field(default_factory=list)
    mode: Literal["deterministic", "live_canary"] = "deterministic"
    trials: StrictInt = Field(default=1, ge=1)
    metadata: dict[StrictStr, Any] = Field(default_factory=dict)
    skip_reason: StrictStr | None = None


class JournalStart(_Line):
    """The journal's first line: the run and every case it selected."""

    event: Literal["start"]
    journal_version: StrictInt
    schema_version: StrictStr = "1.0"
    run_id: StrictStr | None = None
    started_at: datetime
    pid: StrictInt | None = None
    host: StrictStr | None = None
    trial_count: StrictInt = Field(default=1, ge=1)
    cases: list[JournalCase] = Field(default_factory=list)
    config_snapshot: dict[StrictStr, Any] = Field(default_factory=dict)

    @field_validator("started_at", mode="before")
    @classmethod
    def _iso_time(cls, value: Any) -> datetime:
        if not isinstance(value, str):
            raise ValueError("must be a time as ISO 8601 text")
        try:
            return iso_time(value)
        except ValueError:
            raise ValueError(f"must be a time as ISO 8601 text (got {value[:40]!r})") from None


class TrialOutcome(_Line):
    """What a live view needs of a journalled trial's result (the whole `TrialResult` is validated only when the
    journal is read as a run)."""

    trial: StrictInt = Field(default=1, ge=1)
    passed: StrictBool


class JournalTrial(_Line):
    """A finished trial's line."""

    event: Literal["trial"]
    case: StrictStr
    elapsed_s: Number = Field(default=0.0, ge=0)
    result: TrialOutcome


class JournalEnd(_Line):
    """The last line of a run that ended by itself or was stopped by a signal it handled."""

    event: Literal["end"]
    status: Literal["completed", "interrupted"] = "interrupted"


# -- the exchanges sidecar ------------------------------------------------------------------------------------
class SidecarStart(_Line):
    """The sidecar's first line."""

    event: Literal["start"]
    exchanges_version: StrictInt
    run_id: StrictStr | None = None
    max_trial_bytes: StrictInt | None = None
    kept: StrictBool = True
    why: StrictStr | None = None


class SidecarTrial(_Line):
    """A trial's line; its exchanges are validated one by one (`SidecarExchange`), so one that is wrong is a note
    and the others are still shown."""

    event: Literal["trial"]
    case: StrictStr
    trial: StrictInt
    exchanges: list[Any]


class _Part(_Line):
    headers: dict[StrictStr, StrictStr] = Field(default_factory=dict)
    body: Any = None
    stream: StrictStr | None = None
    body_text: StrictStr | None = None
    body_base64: StrictStr | None = None

    @field_validator("body")
    @classmethod
    def _json_body(cls, value: Any) -> Any:
        if value is not None and not isinstance(value, (dict, list)):
            raise ValueError("must be a JSON object or array (other bodies are body_text or body_base64)")
        return value


class SidecarRequest(_Part):
    method: StrictStr
    url: StrictStr


class SidecarResponse(_Part):
    status: StrictInt


class SidecarExchange(_Line):
    """One exchange in the cassette layout (`_cassette_io.exchange_to_dict`), numbered as `Turn.exchange` refers."""

    n: StrictInt
    request: SidecarRequest
    response: SidecarResponse
    cut: dict[StrictStr, StrictStr] = Field(default_factory=dict)


# -- notes ----------------------------------------------------------------------------------------------------
_MESSAGES = {
    "list_type": "must be a list", "dict_type": "must be a mapping (a JSON object)",
    "model_type": "must be a mapping (a JSON object)", "model_attributes_type": "must be a mapping (a JSON object)",
    "string_type": "must be text", "int_type": "must be a whole number", "int_from_float": "must be a whole number",
    "float_type": "must be a number", "bool_type": "must be true or false", "missing": "is missing",
    "datetime_type": "must be a time as ISO 8601 text",
}


def problem(exc: ValidationError, *, prefix: str = "") -> str:
    """The first problem of a validation as a note's text: "cases must be a list", "cases.0.trials must be at
    least 1" (`prefix`: where the validated value sits, e.g. "result"); "(and N more)" when there are more."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    where = ".".join(str(part) for part in (prefix, *first["loc"]) if part != "")
    kind = first["type"]
    if kind in _MESSAGES:
        text = _MESSAGES[kind]
    elif kind == "literal_error":
        text = "must be " + str(first.get("ctx", {}).get("expected", "one of the documented values"))
    elif kind in ("greater_than_equal", "greater_than"):
        bound = first.get("ctx", {}).get("ge", first.get("ctx", {}).get("gt"))
        text = f"must be {'at least' if kind == 'greater_than_equal' else 'more than'} {bound}"
    else:
        text = str(first["msg"]).removeprefix("Value error, ")
        text = text[:1].lower() + text[1:]
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where or 'the line'} {text}{more}"


def validated(model: type[_Model], data: Any, *, prefix: str = "") -> _Model | str:
    """`data` as `model`, or the note's text saying what is wrong with it (`problem`)."""
    if not isinstance(data, dict):
        return f"{prefix or 'the line'} must be a mapping (a JSON object)"
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        return problem(exc, prefix=prefix)


def iso_time(text: str) -> datetime:
    """An ISO 8601 time as trialrun writes it (`...Z`); Python 3.10's `fromisoformat` does not read the `Z`."""
    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith("Z") else text)
