"""The one YAML reader of trialrun: safe tags only, and aliases that cannot multiply a file into gigabytes.

A YAML alias (`*name`) repeats what its anchor (`&name`) holds, so ten lines of nested aliases spell out a billion
values ("billion laughs"). The parser shares one copy, but everything after it (validation, JSON encoding, a
cassette body sent as bytes) walks the expanded value and hangs or runs out of memory. So the whole document's
expanded size is measured on the composed node graph, before anything is built from it, and a document whose
aliases add more than `ALIAS_BUDGET` (values and characters of text) to what the file spells out is refused, as is
one whose aliases refer to themselves (no JSON value can hold that).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

from .files import TOO_DEEP, gc_paused

__all__ = ["YamlError", "load_yaml", "ALIAS_BUDGET"]

#: How much aliases may add to a document, counted as values plus characters of text: room for any reused block
#: a person writes, far below what hangs a run.
ALIAS_BUDGET = 1_000_000



@functools.cache
def _loader() -> type:
    """libyaml's safe loader when built (else PyYAML's): imported on the first YAML read, since a suite, script and
    config in JSON and TOML need none (importing PyYAML is 10-40 ms of a run)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class YamlError(ValueError):
    """YAML that cannot be read: the problem, and where it is (1-based line and column) when known. Callers put
    the file's name in front: `f"{path}{exc.where}: ..."`."""

    def __init__(self, problem: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line
        self.column = column

    @property
    def where(self) -> str:
        """`:line:column` when known, else nothing."""
        return f":{self.line}:{self.column}" if self.line is not None and self.column is not None else ""


def load_yaml(text: str, *, with_node: bool = False, language: str = "YAML") -> Any:
    """Parse one YAML document with the safe constructor (plain data only); None for an empty one.

    With `with_node`, return `(data, node)`: the composed node keeps each value's line (node.start_mark), which
    suites use to name the line of each test. YamlError for invalid YAML ("not valid <language>: ..."), a
    document nested too deeply, and aliases beyond the budget.
    """
    import yaml

    loader = _loader()(text)
    with gc_paused():
        try:
            node = loader.get_single_node()
            if node is not None and "&" in text and "*" in text:  # no anchor and alias, nothing to expand
                _check_aliases(node, len(text))
            data = None if node is None else loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            problem = exc.problem or exc.context or str(exc)
            if "maximum nesting depth" in problem:  # libyaml's own limit (1,000 levels)
                raise YamlError(TOO_DEEP) from None
            raise YamlError(f"not valid {language}: {problem}", *((mark.line + 1, mark.column + 1) if mark else ())) from None
        except yaml.YAMLError as exc:
            raise YamlError(f"not valid {language}: {exc}") from None
        except RecursionError:
            raise YamlError(TOO_DEEP) from None
        finally:
            loader.dispose()
    return (data, node) if with_node else data


def _check_aliases(root: yaml.Node, written: int) -> None:
    """YamlError when the document, with every alias expanded, exceeds what is written by more than the budget,
    or when an alias refers to a value that contains it. Linear in the number of distinct nodes (iterative: a
    document nested thousands deep is no problem here)."""
    import yaml  # (imported by load_yaml already)

    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        if key in open_:
            raise YamlError("an alias refers to a value that contains it (a value cannot hold itself)",
                            node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.ScalarNode):
            sizes[key] = 1 + len(node.value)
            continue
        open_.add(key)
        stack.append((node, True))
        for child in _children(node):
            child_key = id(child)
            if child_key in open_:
                raise YamlError("an alias refers to a value that contains it (a value cannot hold itself)",
                                child.start_mark.line + 1, child.start_mark.column + 1)
            if child_key not in sizes:
                stack.append((child, False))
    expanded = sizes[id(root)]
    if expanded > written + ALIAS_BUDGET:
        raise YamlError(f"aliases (*name) expand this document to {expanded:,} values and characters, more than "
                        f"{ALIAS_BUDGET:,} beyond the {written:,} written; refused (an alias bomb?). "
                        "Write repeated parts out, or repeat them less")


def _children(node: yaml.Node) -> list[yaml.Node]:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
