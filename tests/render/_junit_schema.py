"""A strict JUnit XML checker (stdlib only, no network) encoding the schema CI tools validate against.

The rules are those of Jenkins xunit-plugin's junit-10.xsd, the schema pytest targets with junit_family=xunit2:
which elements exist, where each may appear (and in which order where the schema says `sequence`), which attributes
each takes and which are required. Three places are stricter than that xsd's `xs:string` types, following the Ant
JUnit schema (JUnit.xsd) and what viewers actually parse:

- `time` is SUREFIRE_TIME everywhere (digits with optional thousands commas, at most three decimals), testcases too;
- `tests`, `failures`, `errors`, `skipped` are non-negative integers, and they must match the children
  (a testsuite's `tests` is its number of testcases, `failures` the testcases with a `<failure>`, ...);
- `timestamp` is ISO 8601 without a zone designator (`2025-01-02T03:04:05`), `hostname` and names are non-empty;
- a testcase carries at most one outcome element (`skipped`, `error` or `failure`), so the counts are unambiguous.

`problems(text)` lists every violation (an empty list means valid); `assert_valid(text)` fails a test with all of
them.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from datetime import datetime

#: junit-10.xsd's SUREFIRE_TIME, verbatim: `(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?` (anchored, as xsd
#: patterns are). Its nested stars backtrack exponentially on long near-misses, so the checker uses LINEAR_TIME,
#: which accepts the same strings (tests/render/test_junit.py proves it exhaustively on short strings).
SUREFIRE_TIME = re.compile(r"(([0-9]{0,3},)*[0-9]{3}|[0-9]{0,3})*(\.[0-9]{0,3})?")
LINEAR_TIME = re.compile(r"(?:[0-9,]*,[0-9]{3})?[0-9]*(?:\.[0-9]{0,3})?")
_COUNT = re.compile(r"[0-9]+")
_TIMESTAMP = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}")
_XML_DECLARATION = re.compile(r"<\?xml\s+version\s*=\s*([\"'])(?P<version>[^\"']*)\1(?:\s+encoding\s*=\s*([\"'])(?P<encoding>[^\"']*)\3)?")

OUTCOMES = ("skipped", "error", "failure")


@dataclass(frozen=True)
class Rule:
    """What the schema says about one element."""

    required: frozenset[str] = frozenset()
    optional: frozenset[str] = frozenset()
    #: children allowed in any order and number (xs:choice maxOccurs=unbounded)
    choice: frozenset[str] = frozenset()
    #: children in this order, each at most once (xs:sequence of minOccurs=0 elements); None: not a sequence
    sequence: tuple[str, ...] | None = None
    #: children repeated in a sequence of one element (xs:sequence of one element maxOccurs=unbounded)
    repeated: str | None = None
    text: bool = False
    value_types: dict[str, str] = field(default_factory=dict)

    @property
    def attributes(self) -> frozenset[str]:
        return self.required | self.optional


def _rule(required: str = "", optional: str = "", **kwargs: object) -> Rule:
    return Rule(frozenset(required.split()), frozenset(optional.split()), **kwargs)  # type: ignore[arg-type]


_RESULT = _rule(optional="type message", text=True)
_RERUN = _rule(required="type", optional="message", sequence=("stackTrace", "system-out", "system-err"), text=True)
_COUNTS = {"tests": "count", "failures": "count", "errors": "count", "skipped": "count"}

RULES: dict[str, Rule] = {
    "testsuites": _rule(optional="name time tests failures errors", repeated="testsuite",
                        value_types={"time": "time", **_COUNTS}),
    "testsuite": _rule(
        required="name tests failures errors",
        optional="group time skipped timestamp hostname id package file log url",
        choice=frozenset({"testsuite", "properties", "testcase", "system-out", "system-err"}),
        value_types={"time": "time", "timestamp": "timestamp", "hostname": "nonempty", "name": "nonempty", **_COUNTS},
    ),
    "properties": _rule(repeated="property"),
    "property": _rule(required="name value"),
    "testcase": _rule(
        required="name", optional="time classname group",
        choice=frozenset({"skipped", "error", "failure", "rerunFailure", "rerunError", "flakyFailure", "flakyError",
                          "system-out", "system-err"}),
        value_types={"time": "time", "name": "nonempty"},
    ),
    "failure": _RESULT,
    "error": _RESULT,
    "skipped": _RESULT,
    "rerunFailure": _RERUN,
    "rerunError": _RERUN,
    "flakyFailure": _RERUN,
    "flakyError": _RERUN,
    "stackTrace": _rule(text=True),
    "system-out": _rule(text=True),
    "system-err": _rule(text=True),
}

#: Elements the schema declares globally (any of them may be a document's root); stackTrace is local to rerunType.
ROOTS = frozenset(RULES) - {"stackTrace"}


def _value_problem(kind: str, value: str) -> str | None:
    if kind == "time" and not LINEAR_TIME.fullmatch(value):
        return f"is not a SUREFIRE_TIME decimal (digits, at most 3 decimals): {value!r}"
    if kind == "count" and not _COUNT.fullmatch(value):
        return f"is not a non-negative integer: {value!r}"
    if kind == "timestamp":
        if not _TIMESTAMP.fullmatch(value):
            return f"is not ISO 8601 without a time zone (YYYY-MM-DDTHH:MM:SS): {value!r}"
        try:
            datetime.strptime(value, "%Y-%m-%dT%H:%M:%S")
        except ValueError:
            return f"is not a real date and time: {value!r}"
    if kind == "nonempty" and not value.strip():
        return "is empty"
    return None


def _check_children(path: str, element: ET.Element, rule: Rule, out: list[str]) -> None:
    tags = [child.tag for child in element]
    allowed = _allowed(rule)
    for index, tag in enumerate(tags):
        if tag not in allowed:
            where = f"{path}/{tag}[{index + 1}]"
            out.append(f"{where}: element <{tag}> is not allowed in <{element.tag}>"
                       f" (allowed: {', '.join(sorted(allowed)) or 'none'})")
    if rule.sequence is not None:
        positions = [rule.sequence.index(tag) for tag in tags if tag in rule.sequence]
        if positions != sorted(positions) or len(set(positions)) != len(positions):
            out.append(f"{path}: children of <{element.tag}> must be {', '.join(rule.sequence)} in that order,"
                       f" each at most once; found {', '.join(tags)}")
    if not rule.text:
        stray = [(element.text or "")] + [(child.tail or "") for child in element]
        if any(piece.strip() for piece in stray):
            out.append(f"{path}: <{element.tag}> may not contain text")


def _check_element(path: str, element: ET.Element, out: list[str]) -> None:
    rule = RULES.get(element.tag)
    if rule is None:
        out.append(f"{path}: unknown element <{element.tag}>")
        return
    for name in sorted(rule.required - set(element.attrib)):
        out.append(f"{path}: <{element.tag}> lacks required attribute {name!r}")
    for name in sorted(set(element.attrib) - rule.attributes):
        out.append(f"{path}: <{element.tag}> has attribute {name!r}, which the schema does not allow")
    for name, kind in rule.value_types.items():
        if name in element.attrib and (problem := _value_problem(kind, element.attrib[name])):
            out.append(f"{path}: <{element.tag}> attribute {name!r} {problem}")
    _check_children(path, element, rule, out)
    seen: dict[str, int] = {}
    for child in element:
        seen[child.tag] = seen.get(child.tag, 0) + 1
        if child.tag in RULES and child.tag in _allowed(rule):
            _check_element(f"{path}/{child.tag}[{seen[child.tag]}]", child, out)
    if element.tag == "testcase":
        outcomes = [child.tag for child in element if child.tag in OUTCOMES]
        if len(outcomes) > 1:
            out.append(f"{path}: a testcase has at most one outcome element; found {', '.join(outcomes)}")
    if element.tag == "testsuite":
        _check_suite_counts(path, element, out)
    if element.tag == "testsuites":
        _check_root_counts(path, element, out)


def _allowed(rule: Rule) -> frozenset[str]:
    if rule.repeated is not None:
        return frozenset({rule.repeated})
    return frozenset(rule.sequence) if rule.sequence is not None else rule.choice


def _int(element: ET.Element, name: str) -> int | None:
    value = element.get(name)
    return int(value) if value is not None and _COUNT.fullmatch(value) else None


def _check_suite_counts(path: str, suite: ET.Element, out: list[str]) -> None:
    cases = list(suite.iter("testcase"))
    actual = {
        "tests": len(cases),
        "failures": sum(1 for case in cases if case.find("failure") is not None),
        "errors": sum(1 for case in cases if case.find("error") is not None),
        "skipped": sum(1 for case in cases if case.find("skipped") is not None),
    }
    for name, count in actual.items():
        stated = _int(suite, name)
        if stated is not None and stated != count:
            out.append(f"{path}: <testsuite> says {name}={stated} but holds {count}")


def _check_root_counts(path: str, root: ET.Element, out: list[str]) -> None:
    for name in ("tests", "failures", "errors"):
        stated = _int(root, name)
        if stated is None:
            continue
        total = sum(_int(suite, name) or 0 for suite in root.findall("testsuite"))
        if stated != total:
            out.append(f"{path}: <testsuites> says {name}={stated} but its testsuites add up to {total}")


def problems(text: str | bytes) -> list[str]:
    """Every way `text` breaks the schema; empty when it is a valid JUnit XML document."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    found: list[str] = []
    head = data[:200].decode("utf-8", errors="replace")
    if head.startswith("<?xml"):
        declaration = _XML_DECLARATION.match(head)
        if declaration is None:
            found.append("the XML declaration cannot be read")
        else:
            if declaration.group("version") != "1.0":
                found.append(f"XML version must be 1.0, not {declaration.group('version')!r}")
            encoding = declaration.group("encoding")
            if encoding is not None and encoding.lower() not in ("utf-8", "utf8"):
                found.append(f"encoding must be UTF-8, not {encoding!r}")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as exc:
        return [*found, f"not well-formed XML 1.0: {exc}"]
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag.startswith("{"):
            found.append(f"namespaced element {element.tag}: JUnit XML has no namespace")
            return found
    if root.tag not in ROOTS:
        found.append(f"root element <{root.tag}> is not a JUnit element")
        return found
    _check_element(f"/{root.tag}", root, found)
    return found


def assert_valid(text: str | bytes) -> None:
    """Fail with every violation listed."""
    found = problems(text)
    assert not found, "invalid JUnit XML:\n  " + "\n  ".join(found)
