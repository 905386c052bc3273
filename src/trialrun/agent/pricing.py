"""Model prices (USD per million tokens) and what a run cost.

The built-in table covers current OpenAI and Anthropic models (and Gemini). Prices change, so a maintained price
map is used first when installed (`prices_source`: "auto" picks genai-prices, then litellm's JSON; see
_price_sources), with the built-in table as the fallback for models it does not know. Explicit prices win over
both: `trialrun.prices.set(...)`, `trialrun.prices.load(path)` (TOML, JSON or YAML), or the `TRIALRUN_PRICES`
environment variable naming such a file.
"""

from __future__ import annotations

import functools
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._util.files import read_text
from ..trajectory import Trajectory, Usage
from ._price_sources import _DATE_SUFFIX, PriceSource, resolve_source

__all__ = ["Price", "PriceTable", "prices", "cost_of_trajectory"]


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens. `cached_input` applies to input tokens read from a prompt cache, `cache_write_input`
    to input tokens written to one (Anthropic: 1.25x input for the 5-minute cache); None means the input rate."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write_input: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = min(usage.cached_input_tokens, usage.input_tokens)
        written = min(usage.cache_write_input_tokens, usage.input_tokens - cached)
        cached_rate = self.input if self.cached_input is None else self.cached_input
        write_rate = self.input if self.cache_write_input is None else self.cache_write_input
        plain = usage.input_tokens - cached - written
        return (plain * self.input + cached * cached_rate + written * write_rate + usage.output_tokens * self.output) / 1e6


# As published by the providers (standard tier, short context). Input tokens count cached ones too; see Usage.
_DEFAULTS: dict[str, Price] = {
    # OpenAI
    "gpt-5": Price(1.25, 10.00, 0.125),
    "gpt-5-mini": Price(0.25, 2.00, 0.025),
    "gpt-5-nano": Price(0.05, 0.40, 0.005),
    "gpt-4.1": Price(2.00, 8.00, 0.50),
    "gpt-4.1-mini": Price(0.40, 1.60, 0.10),
    "gpt-4.1-nano": Price(0.10, 0.40, 0.025),
    "gpt-4o": Price(2.50, 10.00, 1.25),
    "gpt-4o-mini": Price(0.15, 0.60, 0.075),
    "o3": Price(2.00, 8.00, 0.50),
    "o3-mini": Price(1.10, 4.40, 0.55),
    "o4-mini": Price(1.10, 4.40, 0.275),
    # Anthropic (cached_input = cache reads at 0.1x input; cache writes, 5-minute cache, at 1.25x input)
    "claude-opus-4-5": Price(5.00, 25.00, 0.50, 6.25),
    "claude-opus-4-1": Price(15.00, 75.00, 1.50, 18.75),
    "claude-opus-4": Price(15.00, 75.00, 1.50, 18.75),
    "claude-sonnet-4-5": Price(3.00, 15.00, 0.30, 3.75),
    "claude-sonnet-4": Price(3.00, 15.00, 0.30, 3.75),
    "claude-haiku-4-5": Price(1.00, 5.00, 0.10, 1.25),
    "claude-3-7-sonnet": Price(3.00, 15.00, 0.30, 3.75),
    "claude-3-5-sonnet": Price(3.00, 15.00, 0.30, 3.75),
    "claude-3-5-haiku": Price(0.80, 4.00, 0.08, 1.00),
    "claude-3-haiku": Price(0.25, 1.25, 0.03, 0.30),
    # Google
    "gemini-2.5-pro": Price(1.25, 10.00, 0.31),
    "gemini-2.5-flash": Price(0.30, 2.50, 0.075),
    "gemini-2.5-flash-lite": Price(0.10, 0.40, 0.025),
    "gemini-2.0-flash": Price(0.10, 0.40, 0.025),
}



@functools.lru_cache(maxsize=1024)
def _normalise(model: str) -> str:
    """The name a price is listed under. Cached: every priced response asks, and there are few model names."""
    name = model.strip().lower()
    name = name.split("/")[-1]  # "openai/gpt-4.1", "models/gemini-2.5-pro"
    return _DATE_SUFFIX.sub("", name)


class PriceTable:
    """Prices by model name. A dated, `-latest` or provider-prefixed name finds its entry ("gpt-4.1-mini-2025-04-14"
    is "gpt-4.1-mini"); any other variant must be listed itself, because variants are priced differently
    ("gpt-4o-audio-preview" is not "gpt-4o") and a guessed price is worse than an unknown one."""

    def __init__(self, entries: dict[str, Price] | None = None, *, source: str = "builtin") -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, Price] = dict(entries or {})  # the fallback (the built-in table)
        self._overrides: dict[str, Price] = {}  # set() and load(): explicit prices win over any source
        self._cache: dict[str, Price | None] = {}
        self._source_choice = source
        self._source: PriceSource | None | bool = False  # False: not resolved yet (resolving may import a package)

    def use(self, source: str) -> None:
        """Price with `source`: "builtin", "genai-prices", "litellm" or "auto" (the first maintained one installed,
        else builtin). A ValueError when the named source is not installed."""
        resolved = resolve_source(source)
        with self._lock:
            self._source_choice, self._source = source, resolved

    @property
    def source(self) -> PriceSource | None:
        """The maintained source in use (None: the built-in table alone)."""
        if self._source is False:
            self.use(self._source_choice)
        return None if isinstance(self._source, bool) else self._source

    def describe(self) -> dict[str, Any]:
        """Which source prices runs, for config_snapshot: its name and version, the fallback, explicit prices."""
        source = self.source
        described: dict[str, Any] = (
            {"source": source.name, "version": source.version, "fallback": "builtin"} if source is not None
            else {"source": "builtin"}
        )
        if self._source_choice != described["source"]:
            described["requested"] = self._source_choice
        if self._overrides:
            described["explicit"] = sorted(self._overrides)
        return described

    def set(
        self, model: str, *, input: float, output: float, cached_input: float | None = None,
        cache_write_input: float | None = None,
    ) -> None:
        """Add or override a model's price (USD per million tokens)."""
        for name, value in (
            ("input", input), ("output", output), ("cached_input", cached_input), ("cache_write_input", cache_write_input),
        ):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise ValueError(f"price {name} for {model!r} must be a non-negative number, got {value!r}")
        with self._lock:
            self._overrides[_normalise(model)] = Price(
                float(input), float(output), None if cached_input is None else float(cached_input),
                None if cache_write_input is None else float(cache_write_input),
            )
            self._cache.clear()

    def load(self, path: str | os.PathLike[str]) -> None:
        """Load prices from a file: {model: {input, output, cached_input, cache_write_input}} in TOML, JSON or YAML.

        In TOML a `[prices]` table is accepted too (so trialrun.toml can carry them).
        """
        path = Path(path)
        text = read_text(path, "price file", ValueError)
        try:
            if path.suffix == ".toml":
                from .._util.toml_read import loads as toml_loads

                data: Any = toml_loads(text)
                data = data.get("prices", data)
            elif path.suffix == ".json":
                data = json.loads(text)
            else:
                from .._util.yaml_read import load_yaml

                data = load_yaml(text)
        except Exception as exc:  # noqa: BLE001 - any parser's error becomes one clear message
            raise ValueError(f"{path}: not a valid price file: {exc}") from None
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of model name to prices")
        for model, entry in data.items():
            if not isinstance(entry, dict) or not {"input", "output"} <= set(entry):
                raise ValueError(f"{path}: model {model!r}: expected {{input = ..., output = ...}} in USD per million tokens")
            unknown = set(entry) - {"input", "output", "cached_input", "cache_write_input"}
            if unknown:
                raise ValueError(f"{path}: model {model!r}: unknown field(s) {', '.join(sorted(unknown))}")
            try:
                self.set(
                    str(model), input=entry["input"], output=entry["output"], cached_input=entry.get("cached_input"),
                    cache_write_input=entry.get("cache_write_input"),
                )
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None

    def get(self, model: str | None) -> Price | None:
        """The model's explicit or built-in price, or None (a maintained source prices usage, see `cost`)."""
        if not model:
            return None
        try:
            return self._cache[model]
        except KeyError:
            pass
        name = _normalise(model)
        with self._lock:
            price = self._overrides.get(name) or self._entries.get(name)
            self._cache[model] = price
        return price

    def cost(self, model: str | None, usage: Usage | None) -> float | None:
        """USD for one response: an explicit price, else the maintained source's, else the built-in table's;
        None when the usage is unknown or no one prices the model."""
        if not model or usage is None:
            return None
        name = _normalise(model)
        explicit = self._overrides.get(name)
        if explicit is not None:
            return explicit.cost(usage)
        source = self.source
        if source is not None:
            cost = source.cost(model, usage)
            if cost is not None:
                return cost
        price = self._entries.get(name)
        return None if price is None else price.cost(usage)

    def __contains__(self, model: str) -> bool:
        """Whether any source prices the model (probed with a small usage)."""
        return self.cost(model, Usage(1000, 1000)) is not None


prices = PriceTable(_DEFAULTS, source="auto")
if os.environ.get("TRIALRUN_PRICES"):
    prices.load(os.environ["TRIALRUN_PRICES"])


def cost_of_trajectory(trajectory: Trajectory, table: PriceTable | None = None, model: str | None = None) -> float | None:
    """Sum of the turns' costs. None when any turn's usage or model price is unknown: a partial sum would
    understate the spend and pass a ceiling it should fail."""
    table = table or prices
    total = 0.0
    priced = False
    for turn in trajectory.all_turns:  # side requests and sub-agents were paid for too
        cost = table.cost(turn.model or model, turn.usage)  # unknown usage: unknown cost, like an unknown price
        if cost is None:
            return None
        total += cost
        priced = True
    return total if priced else None
