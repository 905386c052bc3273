"""How a grader matches a tool call against what it expects: a name (or glob), arguments (values or predicates),
a reference trajectory's calls (one to one)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

from ..trajectory import ToolCall

#: The reference trajectory's modes (`trajectory_matches`), and how its arguments compare.
MODES = ("strict", "unordered", "subset", "superset")
ARG_MODES = ("exact", "ignore", "subset", "superset")

def value_matches(expected: Any, actual: Any) -> bool:
    if callable(expected) and not isinstance(expected, type):
        try:
            return bool(expected(actual))
        except Exception:  # noqa: BLE001 - a predicate that raises does not match
            return False
    return bool(expected == actual)


def args_match(expected: Mapping[str, Any] | None, actual: Mapping[str, Any], exact: bool) -> bool:
    if expected is None:
        return True
    if exact and set(expected) != set(actual):
        return False
    for key, value in expected.items():  # (a loop, not all() over a generator: this runs for every call graded)
        if key not in actual or not value_matches(value, actual[key]):
            return False
    return True


def name_matcher(pattern: str) -> Callable[[str], bool]:
    """`fnmatchcase(name, pattern)` as a function of the name; plain equality for a pattern without glob characters
    (which is what fnmatchcase does with one, without its regex)."""
    if any(ch in pattern for ch in "*?["):
        return lambda name: fnmatchcase(name, pattern)
    return lambda name: name == pattern if type(name) is str else fnmatchcase(name, pattern)


def as_ref(item: Any) -> tuple[str, Mapping[str, Any] | None]:
    if isinstance(item, str):
        return item, None
    if isinstance(item, ToolCall):
        return item.name, item.arguments
    if isinstance(item, Mapping):
        if not isinstance(item.get("name"), str):
            raise TypeError(f"a reference call given as a mapping needs a 'name' (the tool's), got {item!r}")
        return item["name"], item.get("arguments", item.get("args"))
    if isinstance(item, Sequence) and len(item) == 2 and isinstance(item[0], str):
        return item[0], item[1]
    raise TypeError(f"expected a tool name, (name, args), a ToolCall or {{'name', 'arguments'}}, got {item!r}")


def pair_ok(actual: ToolCall, ref: tuple[str, Mapping[str, Any] | None], args: str) -> bool:
    name, ref_args = ref
    if actual.name != name:
        return False
    if args == "ignore" or ref_args is None:
        return True
    if args == "exact":
        return dict(actual.arguments) == dict(ref_args)
    if args == "subset":  # the agent's arguments are a subset of the reference's
        return all(k in ref_args and value_matches(ref_args[k], v) for k, v in actual.arguments.items())
    return args_match(ref_args, actual.arguments, False)  # superset: the agent's include every reference argument


def max_matching(actual: list[ToolCall], refs: list[tuple[str, Mapping[str, Any] | None]], args: str) -> dict[int, int]:
    """A maximum one-to-one matching between actual calls and reference calls (augmenting paths): ref -> actual."""
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j, ref in enumerate(refs):
            if j in seen or not pair_ok(actual[i], ref, args):
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(actual)):
        augment(i, set())
    return owner
