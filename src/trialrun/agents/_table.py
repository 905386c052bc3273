"""docs/coding-agents.md's tables of ready-made agents, written from their contracts (so the docs cannot say another
thing than the code reads): `python -m trialrun.agents._table` prints them; tests/agents/test_readme_agents.py
checks that the page holds exactly these between its `<!-- agents-table -->` and `<!-- agents-forms -->` markers."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._contract import AgentContract, FileTool, ShellTool

__all__ = ["agents_table", "forms_table", "TABLES"]

#: How the workspace model follows each write/edit semantics, in words.
_SEMANTICS = {
    "whole-file": "the whole file",
    "claude": "exact match, unique or `replace_all`",
    "opencode": "exact match, else its looser matchers (then: unknown)",
    "pi": "every edit against the original text",
    "codex-patch": "a Codex patch",
    "kimi": "each edit's first match, in order (all with `replace_all`)",
    "generic": "an exact unique match, else unknown",
}


def _code(text: str) -> str:
    """`text` as a code span in a table cell (doubled backticks around one that holds a backtick)."""
    text = text.replace("|", "\\|")
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _shell(tool: ShellTool) -> str:
    fixed = "".join(f", {name}={value!r}" for name, value in tool.fixed.items())
    parts = [_code(f"{tool.name}({tool.argument}{', ' + ', '.join(tool.required) if tool.required else ''}{fixed})")]
    if tool.background:
        parts.append(f"`{tool.background}` runs it in the background")
    if tool.sessions:
        s = tool.sessions
        parts.append(f"`{s.tool}({s.session}, {s.chars})` types into the session `{s.tty}: true` left running")
    if tool.patches:
        parts.append("`apply_patch <<'EOF'` as the whole command: a Codex patch, applied by the agent itself")
    if tool.read_first:
        parts.append("it stops an in-place edit (`sed -i`) of a file not read first")
    if tool.stops_on:
        parts.append(f"it ends its run, silently, on a command with {', '.join(f'`{w}`' for w in tool.stops_on)}")
    return "; ".join(parts)


def _file(tool: FileTool) -> str:
    if tool.kind == "read":
        return _code(f"{tool.name}({tool.path})")
    values = tool.content if tool.kind == "write" else f"{tool.old}, {tool.new}"
    shape = f"{tool.path}, {tool.edits}=[{{{values}}}]" if tool.edits else f"{tool.path}, {values}"
    first = " (read first)" if tool.read_first and tool.kind == "edit" else ""
    corrects = f"; reported done where that refuses: {tool.corrects}" if tool.corrects else ""
    return f"{_code(f'{tool.name}({shape})')}: {_SEMANTICS[tool.semantics]}{first}{corrects}"


def _permissions(c: AgentContract) -> str:
    p = c.permissions
    if p is None:
        return "none: it runs what the model asks (contain it with the sandbox)"
    mode = p.mode_is.removeprefix("permission_mode").strip(" ,").removeprefix("must be").removeprefix("is ").strip()
    text = f"`permission_mode`{f' ({mode})' if mode else ''}: {', '.join(f'`{m}`' for m in p.modes)}"
    text += f", default `{p.default_mode}`" if p.default_mode else ""
    text += f"; `allow`/`deny`: {p.rules}" if p.rules else "; no `allow`/`deny` rules"
    return text + (f"; {p.note}" if p.note else "")


def agents_table(contracts: Mapping[str, AgentContract]) -> str:
    """Per agent: its package and the version tested, its wire APIs, the shell and file tools (with their
    semantics) the workspace model follows, its sub-agents, the sandboxes it is tested in, its permissions."""
    rows = ["| `agent =` | package (version tested) | wire API (`api` =) | shell tool | file tools (what the workspace "
            "model follows) | sub-agents | sandbox tested | its own permissions (`[agent_options]`) |",
            "|---|---|---|---|---|---|---|---|"]
    for c in contracts.values():
        apis = ", ".join(f"{api} (default)" if i == 0 and len(c.apis) > 1 else api for i, api in enumerate(c.apis))
        files = "; ".join(_file(tool) for tool in c.files) or "none of its own"
        sub = "none"
        if c.subagents is not None:
            s = c.subagents
            sub = _code(f"{s.tool}({s.prompt}, ...)") + (f" in namespace `{s.namespace}`" if s.namespace else "")
        rows.append(f'| `"{c.name}"` | `{c.pin.package}` ({c.pin.version}, {c.pin.registry}) | {apis} | '
                    f"{'; '.join(_shell(t) for t in c.shell)} | {files} | {sub} | {', '.join(c.sandboxes_tested)} | "
                    f"{_permissions(c)} |")
    return "\n".join(rows)


def forms_table(contracts: Mapping[str, AgentContract]) -> str:
    """Per agent: what a refusal of its own is (its forms, with examples seen and the recordings), and how a failed
    tool result is told (its error flag, or its own result forms)."""
    rows = ["| agent | a refusal is (recordings) | its error flag | side requests |", "|---|---|---|---|"]
    for c in contracts.values():
        r = c.refusals
        if r is None:
            refusal = "never (no permission system)"
        else:
            examples = "; ".join(_code(text) for text in r.examples)
            flag = ", flagged as an error" if r.needs_error_flag else ""
            refusal = (f"in {r.where}{flag}: the WHOLE text is one of its {len(r.forms)} forms, e.g. {examples} "
                       f"({r.recordings})")
        side = "none" if c.side_requests is None else f"{c.side_requests.what}: stopped by {c.side_requests.stopped_by}"
        rows.append(f"| {c.name} | {refusal} | {c.errors.how} | {side} |")
    return "\n".join(rows)


#: docs/coding-agents.md's generated tables, by marker.
TABLES = {"agents-table": agents_table, "agents-forms": forms_table}


def render(contracts: Mapping[str, AgentContract], names: Iterable[str] = TABLES) -> str:
    return "\n\n".join(TABLES[name](contracts) for name in names)


if __name__ == "__main__":
    from . import CONTRACTS

    print(render(CONTRACTS))
