"""`prices_source` in trialrun.toml picks who prices a run, recorded in config_snapshot.prices (source and
version); a source that is not installed, or not one of the list, is named (exit 2)."""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path


def test_prices_source_in_trialrun_toml_is_recorded_and_a_missing_one_named(project: Path, cli) -> None:
    config = project / "trialrun.toml"
    original = config.read_text()
    assert cli("run", "read-file").exit_code in (0, 1)
    snapshot = json.loads((project / "state" / "eval" / "latest.json").read_text())["config_snapshot"]
    if sys.version_info >= (3, 11):  # genai-prices is in the test extra from 3.11 (it needs 3.11)
        assert snapshot["prices"] == {"source": "genai-prices", "version": metadata.version("genai-prices"),
                                      "fallback": "builtin", "requested": "auto"}  # the default: the first installed
    else:
        assert snapshot["prices"]["source"] == "builtin"  # no maintained map installed: the built-in table
    config.write_text('prices_source = "builtin"\n' + original)
    ran = cli("run", "read-file")
    assert ran.exit_code in (0, 1), ran.output
    snapshot = json.loads((project / "state" / "eval" / "latest.json").read_text())["config_snapshot"]
    assert snapshot["prices"] == {"source": "builtin"}
    config.write_text('prices_source = "litellm"\n' + original)  # not installed here
    result = cli("run", "read-file")
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert f"{config}: prices_source: prices_source = 'litellm', but litellm is not installed (pip install litellm)" in result.output
    config.write_text('prices_source = "cheapest"\n' + original)
    result = cli("run", "read-file")
    assert result.exit_code == 2 and "prices_source: must be one of" in result.output
