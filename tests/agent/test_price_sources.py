"""Prices come from a maintained map when one is installed (genai-prices, or litellm's JSON, never importing
litellm), with the built-in table as the fallback; explicit prices win; an unknown model stays unknown; the source
that priced a run is in config_snapshot.prices."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

import pytest

import trialrun as tr
from trialrun.agent._price_sources import LitellmPrices, resolve_source
from trialrun.agent.pricing import _DEFAULTS
from trialrun.trajectory import Usage

LONG = Usage(input_tokens=300_000, output_tokens=1_000_000)  # past Anthropic's 200k long-context threshold


#: genai-prices needs Python 3.11: the test extra leaves it out on 3.10 (CI runs these on 3.11 and newer)
NEEDS_GENAI = pytest.mark.skipif(sys.version_info < (3, 11), reason="genai-prices requires Python 3.11")


@NEEDS_GENAI
def test_genai_prices_prices_what_the_builtin_table_cannot() -> None:
    table = tr.PriceTable(_DEFAULTS, source="genai-prices")
    builtin = tr.PriceTable(_DEFAULTS)
    assert table.describe() == {"source": "genai-prices", "version": metadata.version("genai-prices"), "fallback": "builtin"}
    # Sonnet 4.5 above 200k input tokens bills $6 / $22.50 per million (Anthropic's long-context rate); the
    # built-in table knows only the standard $3 / $15
    assert builtin.cost("claude-sonnet-4-5", LONG) == pytest.approx(0.3 * 3 + 15)
    assert table.cost("claude-sonnet-4-5", LONG) == pytest.approx(0.3 * 6 + 22.5)
    # a short request agrees with the built-in table, cache reads included (input counts them, as in Usage)
    short = Usage(input_tokens=100_000, output_tokens=10_000, cached_input_tokens=40_000)
    assert table.cost("gpt-4.1-mini-2025-04-14", short) == pytest.approx(builtin.cost("gpt-4.1-mini", short))


@NEEDS_GENAI
def test_an_unknown_model_stays_unknown_with_every_source() -> None:
    for source in ("genai-prices", "builtin", "auto"):
        table = tr.PriceTable(_DEFAULTS, source=source)
        assert table.cost("acme-unreleased-9", Usage(10, 10)) is None
        assert "acme-unreleased-9" not in table


@NEEDS_GENAI
def test_explicit_prices_win_over_the_maintained_source() -> None:
    table = tr.PriceTable(_DEFAULTS, source="genai-prices")
    table.set("gpt-4.1", input=1.0, output=1.0)
    assert table.cost("gpt-4.1", Usage(1_000_000, 1_000_000)) == pytest.approx(2.0)
    assert table.describe()["explicit"] == ["gpt-4.1"]


def test_auto_falls_back_to_the_builtin_table_when_no_maintained_map_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "genai_prices", None)  # how Python marks a package as not importable
    monkeypatch.setitem(sys.modules, "litellm", None)
    table = tr.PriceTable(_DEFAULTS, source="auto")
    assert table.source is None
    assert table.describe() == {"source": "builtin", "requested": "auto"}
    assert table.cost("claude-sonnet-4-5", LONG) == pytest.approx(0.3 * 3 + 15)
    with pytest.raises(ValueError, match=r"genai-prices is not installed \(pip install genai-prices\)"):
        resolve_source("genai-prices")


def _litellm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An installed-looking litellm whose import fails: reading its price JSON must not import it."""
    package = tmp_path / "site" / "litellm"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise RuntimeError('litellm was imported')\n")
    (package / "model_prices_and_context_window_backup.json").write_text(json.dumps({
        "sample_spec": {"input_cost_per_token": 0, "output_cost_per_token": 0},
        "gpt-4.1": {"input_cost_per_token": 2e-06, "output_cost_per_token": 8e-06, "cache_read_input_token_cost": 5e-07,
                    "litellm_provider": "openai", "mode": "chat"},
        "claude-sonnet-4-5": {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05,
                              "input_cost_per_token_above_200k_tokens": 6e-06,
                              "output_cost_per_token_above_200k_tokens": 2.25e-05, "mode": "chat"},
    }))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "litellm", raising=False)
    return package


def test_litellm_json_is_read_without_importing_litellm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _litellm(tmp_path, monkeypatch)
    monkeypatch.setitem(sys.modules, "genai_prices", None)
    table = tr.PriceTable(_DEFAULTS, source="auto")  # genai-prices absent: auto takes litellm
    assert isinstance(table.source, LitellmPrices) and "litellm" not in sys.modules
    assert table.describe()["source"] == "litellm"
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=500_000)
    assert table.cost("openai/gpt-4.1-2025-04-14", usage) == pytest.approx(0.5 * 2 + 0.5 * 0.5 + 8)
    # a long-context request on a tiered model: litellm's standard rate would understate it; the built-in
    # table (the fallback) prices it instead of a guess from the tier names
    assert table.source.cost("claude-sonnet-4-5", LONG) is None
    assert table.source.cost("claude-sonnet-4-5", Usage(1000, 1000)) == pytest.approx(1000 * 3e-06 + 1000 * 1.5e-05)


def _acme_snapshot(prices: object) -> object:
    """genai-prices data with one provider and one model, `acme-9`, priced by `prices` (what UpdatePrices installs)."""
    from genai_prices import data_snapshot, types

    model = types.ModelInfo(id="acme-9", match=types.ClauseEquals("acme-9"), prices=prices)  # type: ignore[arg-type]
    provider = types.Provider(id="acme", name="Acme", api_pattern=r"https://acme\.test", models=[model],
                              model_match=types.ClauseStartsWith("acme"))
    return data_snapshot.DataSnapshot(providers=[provider], from_auto_update=True)


@NEEDS_GENAI
def test_genai_prices_follow_the_price_data_when_it_is_swapped_mid_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Costs (and "no price known") are cached per snapshot of genai-prices' data: a snapshot that UpdatePrices
    swaps in is obeyed at once, for a model priced before and for one that was unknown."""
    from decimal import Decimal

    from genai_prices import data_snapshot, types

    table = tr.PriceTable(_DEFAULTS, source="genai-prices")
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert table.cost("acme-9", usage) is None and table.cost("acme-9", usage) is None  # unknown, asked twice
    bundled = table.cost("gpt-4.1-mini", usage)
    assert bundled == pytest.approx(0.40 + 1.60) and table.cost("gpt-4.1-mini", usage) == bundled
    monkeypatch.setattr(data_snapshot, "_custom_snapshot", _acme_snapshot(types.ModelPrice(
        input_mtok=Decimal("1"), output_mtok=Decimal("2"))))
    assert table.cost("acme-9", usage) == pytest.approx(3.0)  # now known: the cached miss was forgotten
    assert table.cost("gpt-4.1-mini", usage) == pytest.approx(0.40 + 1.60)  # not in it: the built-in fallback
    monkeypatch.setattr(data_snapshot, "_custom_snapshot", _acme_snapshot(types.ModelPrice(
        input_mtok=Decimal("5"), output_mtok=Decimal("7"))))
    assert table.cost("acme-9", usage) == pytest.approx(12.0)  # a new price for the same usage: not the cached 3.0


@NEEDS_GENAI
def test_genai_prices_that_depend_on_the_time_of_the_request_are_priced_on_every_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Conditional prices (a start date, off-peak hours) change while a run goes on: never a cached figure."""
    from decimal import Decimal

    from genai_prices import data_snapshot, types

    class Alternating:  # a constraint that is active on every other request (off-peak, then peak, ...)
        calls = 0

        def active(self, request_timestamp: object) -> bool:
            Alternating.calls += 1
            return Alternating.calls % 2 == 1

    conditional = [
        types.ConditionalPrice(prices=types.ModelPrice(input_mtok=Decimal("1"), output_mtok=Decimal("1"))),
        types.ConditionalPrice(Alternating(), prices=types.ModelPrice(  # type: ignore[arg-type]
            input_mtok=Decimal("0.5"), output_mtok=Decimal("0.5"))),
    ]
    monkeypatch.setattr(data_snapshot, "_custom_snapshot", _acme_snapshot(conditional))
    table = tr.PriceTable(_DEFAULTS, source="genai-prices")
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert [table.cost("acme-9", usage) for _ in range(4)] == pytest.approx([1.0, 2.0, 1.0, 2.0])


@NEEDS_GENAI
def test_genai_prices_cached_costs_keep_tiers_apart() -> None:
    """A cached cost is per usage: a long-context request after a short one (and back) gets its own tier's price."""
    table = tr.PriceTable(_DEFAULTS, source="genai-prices")
    short = Usage(input_tokens=100_000, output_tokens=1_000_000)
    costs = [table.cost("claude-sonnet-4-5", usage) for usage in (short, LONG, short, LONG)]
    assert costs == pytest.approx([0.1 * 3 + 15, 0.3 * 6 + 22.5, 0.1 * 3 + 15, 0.3 * 6 + 22.5])
