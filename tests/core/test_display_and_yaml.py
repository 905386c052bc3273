"""The shared helpers behind hostile-input safety: `_display.clean/markup/listing` and `_yaml.load_yaml`'s budget."""

from __future__ import annotations

import pytest
from rich.console import Console
from rich.text import Text

from trialrun._util.display import clean, listing, markup, shorten
from trialrun._util.yaml_read import ALIAS_BUDGET, YamlError, load_yaml


def test_clean_escapes_controls_and_invisible_format_characters_and_keeps_real_text() -> None:
    assert clean("a\x1b]0;t\x07b\x9bc\u202ed\u200be\x7f") == "a\\x1b]0;t\\x07b\\x9bc\\u202ed\\u200be\\x7f"
    assert clean("line 1\nline 2\tx\r") == "line 1\nline 2\tx\\r"  # a carriage return can overwrite a line
    assert clean("line 1\nline 2\t", lines=False) == "line 1\\nline 2\\t"
    family = "\U0001f468\u200d\U0001f469\u200d\U0001f467"  # zero-width joiners hold emoji together
    assert clean(f"日本語 café {family} [x]") == f"日本語 café {family} [x]"
    assert clean("\U000e0041tag") == "\\U000e0041tag"  # invisible Unicode tag characters (prompt smuggling)


def test_markup_is_shown_literally_by_rich() -> None:
    console = Console(width=80, record=True, force_terminal=False)
    hostile = "read [/etc/hosts] [link=https://x]y[/link] \x1b[2J"
    console.print(f"[bold]{markup(hostile)}[/]")
    assert console.export_text() == "read [/etc/hosts] [link=https://x]y[/link] \\x1b[2J\n"
    assert Text(clean("[red]x[/]")).plain == "[red]x[/]"


def test_listing_and_shorten_bound_a_message() -> None:
    text = listing("3 problems:", ["a", "b", "c"], limit=2)
    assert text == "3 problems:\n  - a\n  - b\n  ... and 1 more (fix these first)"
    assert listing("2 problems:", ["a", "b"], limit=2) == "2 problems:\n  - a\n  - b"
    assert shorten("x" * 250, 200) == "x" * 200 + "... (50 more characters)"


def test_the_alias_budget_admits_reuse_and_refuses_what_exceeds_it() -> None:
    block = "x" * 1000
    fits = f"base: &b {block}\nuses: [{', '.join(['*b'] * (ALIAS_BUDGET // 1001 - 10))}]\n"
    assert len(load_yaml(fits)["uses"]) == ALIAS_BUDGET // 1001 - 10
    too_many = f"base: &b {block}\nuses: [{', '.join(['*b'] * (ALIAS_BUDGET // 1001 + 10))}]\n"
    with pytest.raises(YamlError, match="aliases \\(\\*name\\) expand this document to"):
        load_yaml(too_many)


def test_yaml_errors_say_where() -> None:
    with pytest.raises(YamlError) as caught:
        load_yaml("a: [1, 2\nb: 3\n")
    assert caught.value.where.startswith(":") and str(caught.value).startswith("not valid YAML")
    with pytest.raises(YamlError, match="nested too deeply"):
        load_yaml("[" * 5000 + "]" * 5000)
    assert load_yaml("") is None and load_yaml("# only a comment\n") is None
    assert load_yaml("!!binary aGk=") == b"hi"  # safe tags still work
    with pytest.raises(YamlError):
        load_yaml("!!python/object/apply:os.system ['echo hi']")  # unsafe ones do not
