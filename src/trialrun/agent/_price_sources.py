"""Maintained price maps (genai-prices, litellm's JSON) as sources for `PriceTable`, used when installed.

Prices change faster than trialrun releases; a maintained map knows this month's models. Neither package is a
dependency: genai-prices is imported only when chosen, and litellm is never imported (its price JSON is read from
the installed package's folder). A model a source does not know stays unknown to it: no nearest-name guess.
"""

from __future__ import annotations

import importlib.util
import json
import re
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from ..trajectory import Usage

#: A dated or `-latest` model name's suffix: `gpt-4o-2024-08-06` is priced as `gpt-4o`.
_DATE_SUFFIX = re.compile(r"(-\d{4}-\d{2}-\d{2}|-\d{8}|-latest)$")

__all__ = ["PriceSource", "PRICE_SOURCES", "MAINTAINED", "resolve_source", "installed"]

#: the values of `prices_source` in trialrun.toml
PRICE_SOURCES = ("auto", "builtin", "genai-prices", "litellm")
#: the maintained sources, in the order "auto" tries them
MAINTAINED = ("genai-prices", "litellm")
_LITELLM_FILES = ("model_prices_and_context_window_backup.json", "model_prices_and_context_window.json")


class PriceSource(Protocol):
    """Prices one response; None when the source does not know the model (or cannot price this usage exactly)."""

    name: str
    version: str

    def cost(self, model: str, usage: Usage) -> float | None: ...


class GenaiPrices:
    """The genai-prices package (pydantic's maintained price data, bundled in the wheel; never auto-updated here).

    Pricing a response through `calc_price` costs about 70 µs (more than the rest of a scripted model call), and a
    name the data does not know costs as much each time. So, per price data snapshot (genai-prices' `UpdatePrices`
    may swap it mid-run; the caches follow it): the names it does not know, and the cost of each (model, usage)
    for models whose price does not depend on the time of the request. A model with time-dependent prices
    (conditional prices: start dates, off-peak hours) is priced afresh on every call, so no cached figure is ever
    wrong; tiered prices depend on the usage, which is part of the key.
    """

    name = "genai-prices"

    def __init__(self) -> None:
        import genai_prices  # noqa: F401 - fail here, when chosen, not mid-run

        self.version = metadata.version("genai-prices")
        self._snapshot: object = None  # the price data the two caches below were filled from
        self._unknown: set[str] = set()
        self._costs: dict[tuple[str, int, int, int, int], float] = {}

    def cost(self, model: str, usage: Usage) -> float | None:
        import genai_prices

        snapshot = _genai_snapshot(genai_prices)
        if snapshot is not self._snapshot:  # new price data (or none to key on): forget what the old data said
            self._snapshot, self._unknown, self._costs = snapshot, set(), {}
        if model in self._unknown:
            return None
        cache_read = min(usage.cached_input_tokens, usage.input_tokens)
        key = (model, usage.input_tokens, usage.output_tokens, cache_read, usage.cache_write_input_tokens)
        known = self._costs.get(key)
        if known is not None:
            return known
        counts = genai_prices.Usage(
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=cache_read, cache_write_tokens=usage.cache_write_input_tokens,
        )
        try:
            calculation = genai_prices.calc_price(counts, model)
        except LookupError:
            if snapshot is not None:
                self._unknown.add(model)
            return None
        cost = float(calculation.total_price)
        if snapshot is not None and _fixed_price(genai_prices, calculation):
            if len(self._costs) >= _MAX_COSTS:
                self._costs = {}
            self._costs[key] = cost
        return cost


#: (model, usage) costs kept per snapshot; past this the cache starts again (a long live run has few repeats)
_MAX_COSTS = 4096


def _genai_snapshot(genai_prices: Any) -> object:
    """The price data genai-prices prices with now (None when this version does not say: then nothing is cached)."""
    snapshots = getattr(genai_prices, "data_snapshot", None)
    get = getattr(snapshots, "get_snapshot", None)
    return get() if callable(get) else None


def _fixed_price(genai_prices: Any, calculation: Any) -> bool:
    """Whether the model's price is one fixed price list (no conditional prices that depend on the request's time)."""
    model_price = getattr(getattr(genai_prices, "types", None), "ModelPrice", None)
    return model_price is not None and isinstance(getattr(calculation.model, "prices", None), model_price)


class LitellmPrices:
    """litellm's model_prices_and_context_window JSON (USD per token), read from the installed package's folder."""

    name = "litellm"

    def __init__(self, path: Path) -> None:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of model name to prices")
        self.path = path
        self.version = _version("litellm")
        self._entries: dict[str, dict[str, Any]] = {
            str(key).lower(): value for key, value in data.items()
            if isinstance(value, dict) and key != "sample_spec" and _rate(value, "input_cost_per_token") is not None
            and _rate(value, "output_cost_per_token") is not None
        }

    def _entry(self, model: str) -> dict[str, Any] | None:

        name = model.strip().lower()
        candidates = [name, _DATE_SUFFIX.sub("", name)]
        if "/" in name:  # "openai/gpt-4.1": litellm lists the bare name for the first-party provider
            bare = name.split("/")[-1]
            candidates += [bare, _DATE_SUFFIX.sub("", bare)]
        return next((self._entries[c] for c in candidates if c in self._entries), None)

    def cost(self, model: str, usage: Usage) -> float | None:
        entry = self._entry(model)
        if entry is None:
            return None
        if any("_above_" in key for key in entry):  # long-context tiers: the standard rate would understate
            limits = [int(m.group(1)) * 1000 for key in entry if (m := re.search(r"_above_(\d+)k_tokens", key))]
            if not limits or usage.input_tokens > min(limits):
                return None
        input_rate = _rate(entry, "input_cost_per_token") or 0.0
        output_rate = _rate(entry, "output_cost_per_token") or 0.0
        read_rate = _rate(entry, "cache_read_input_token_cost")
        write_rate = _rate(entry, "cache_creation_input_token_cost")
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_input_tokens, usage.input_tokens - cached)
        plain = usage.input_tokens - cached - written
        return (plain * input_rate + cached * (input_rate if read_rate is None else read_rate)
                + written * (input_rate if write_rate is None else write_rate) + usage.output_tokens * output_rate)


def _rate(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else None


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def _litellm_json() -> Path | None:
    """litellm's price file, found without importing litellm (its import is slow and has side effects)."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        for name in _LITELLM_FILES:
            if (Path(folder) / name).is_file():
                return Path(folder) / name
    return None


def installed(name: str) -> bool:
    """Whether a maintained source can be used here."""
    if name == "genai-prices":
        return importlib.util.find_spec("genai_prices") is not None
    if name == "litellm":
        return _litellm_json() is not None
    raise ValueError(f"unknown price source {name!r}; one of {', '.join(MAINTAINED)}")


def resolve_source(name: str) -> PriceSource | None:
    """The source `prices_source = name` means: None for "builtin", the first installed maintained one for "auto"
    (None when there is none), else that source, or a ValueError saying how to install it."""
    if name not in PRICE_SOURCES:
        raise ValueError(f"prices_source must be one of {', '.join(PRICE_SOURCES)} (got {name!r})")
    if name == "builtin":
        return None
    for candidate in MAINTAINED if name == "auto" else (name,):
        if not installed(candidate):
            continue
        if candidate == "genai-prices":
            return GenaiPrices()
        path = _litellm_json()
        assert path is not None
        return LitellmPrices(path)
    if name == "auto":
        return None
    raise ValueError(f"prices_source = {name!r}, but {name} is not installed (pip install {name})")
