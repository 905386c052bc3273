"""Text typed into a running shell or REPL is input to that program: Codex starts `bash` (or `python3`, ...) with
`exec_command(cmd="bash", tty=true)`, which answers "Process running with session ID N", and types into it with
`write_stdin(session_id=N, chars="rm -rf x\\n")`. Those lines are examined as commands of the session's program:
`{ bash; } <<'EOF'` with the lines typed so far, which the analysis reads as a shell's (or an interpreter's)
standard input.

A tool counts as one that types into a session when its name says it writes to a process's input (`write_stdin`,
`send_keys`, `terminal_input`, ...) and its arguments carry a session id and the text. Text typed into a terminal
that holds line-editing keys (Ctrl-C, backspace, arrows, Tab completion) cannot be read as the lines the program
got: that fails closed, as does text typed into a session no command seen in the trajectory started.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._values import TYPED, TypedInput, UnknownInput

__all__ = ["Sessions", "session_id_in", "stdin_arguments"]

_NAME_RE = re.compile(r"stdin|send[_-]?keys|send[_-]?input[_-]?to|(?:terminal|session|process|pty|shell)[_-]?input|"
                      r"(?:write|type|send)[_-]?to[_-]?(?:session|process|terminal|pty|shell)", re.IGNORECASE)
_SESSION_KEYS = ("session_id", "sessionId", "session", "process_id", "processId", "pid", "shell_id", "shellId",
                 "terminal_id", "terminalId", "exec_id")
_TEXT_KEYS = ("chars", "input", "text", "data", "keys", "stdin", "content")
#: How a command tool's result names the session it left running (Codex: "Process running with session ID 65747").
_SESSION_RE = re.compile(r"\bsession[ _-]?id\b\W{0,4}([\w-]+)", re.IGNORECASE)
#: A terminal's line-editing keys: the program does not get these characters as text.
_EDITING_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_LIMIT = 64 * 1024  # characters of one session's input examined together


def stdin_arguments(tool: str, arguments: Mapping[str, Any]) -> tuple[str, str] | None:
    """(session id, text) when the call types text into a running session, else None."""
    if not _NAME_RE.search(tool):
        return None
    session = next((arguments[k] for k in _SESSION_KEYS if k in arguments), None)
    text = next((arguments[k] for k in _TEXT_KEYS if isinstance(arguments.get(k), str)), None)
    if session is None or isinstance(session, (dict, list)):
        return None
    return str(session), text if text is not None else ""


def session_id_in(result: str) -> str | None:
    """The session a command tool's result says it left running, or None."""
    match = _SESSION_RE.search(result[:2000])
    return match.group(1) if match else None


#: Programs that take what is typed into them as data, not as commands (beside shells and interpreters reading
#: their program from standard input, whose input is examined as code).
_DATA_READERS = frozenset({"cat", "tee", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "grep", "egrep", "fgrep",
                           "base64", "xxd", "od", "md5sum", "sha1sum", "sha256sum", "sha512sum", "jq", "yq", "read",
                           "true", "sleep", "column", "nl", "fold", "fmt", "paste", "rev", "dd"})


def _reader(command: str) -> str | None:
    """Why what is typed into a session running `command` cannot be examined, or None: it goes to a shell or an
    interpreter reading its program (examined as code) or to programs that take it as data."""
    from ._analysis import analyse

    analysis = analyse(command)
    if analysis.error is not None:
        return f"its command could not be parsed ({analysis.error})"
    leaves = [inv for inv in analysis.invs if inv.leaf and not inv.guessed]
    if any(inv.stdin_shell for inv in analysis.invs):
        return None
    others = [inv.display for inv in leaves if inv.program not in _DATA_READERS and inv.program not in ("cd", "export")]
    if others:
        return f"`{others[0][:60]}` may run what it reads (a remote or another shell, an editor, a console)"
    return None


@dataclass
class _Session:
    command: str  # what started it (with its folder), as shell text
    tty: bool
    typed: str = ""  # everything typed so far
    examined: int = 0  # how much of `typed` was handed to the history already
    why: str | None = None  # why its input cannot be examined (see `_reader`)


def _delimiter(text: str) -> str:
    n = 0
    while f"TRIALRUN_TYPED_{n}" in text:
        n += 1
    return f"TRIALRUN_TYPED_{n}"


def _fed(command: str, text: str) -> str:
    delimiter = _delimiter(text)
    body = text if text.endswith("\n") else text + "\n"
    return f"{{ {command}\n}} <<'{delimiter}'\n{body}{delimiter}"


class Sessions:
    """The sessions a trajectory started, and what was typed into each (in call order)."""

    def __init__(self) -> None:
        self.sessions: dict[str, _Session] = {}

    def started(self, command: Any, arguments: Mapping[str, Any], result: str | None) -> None:
        """A command tool's call whose result says it left a session running."""
        if result is None or not isinstance(command, str):
            return
        session = session_id_in(result)
        if session is not None:
            self.sessions[session] = _Session(command, bool(arguments.get("tty")), why=_reader(command))

    def typed(self, session_id: str, text: str, result: str | None, last: bool) -> tuple[str, str] | None:
        """What typing `text` into a session runs: (the command to examine, the command whose writes later calls
        see), or None when nothing ran (empty input, a session the tool said it did not know). `last`: no more
        input comes to this session in the trajectory (what is left without a newline is examined too)."""
        if result is not None and re.match(r"\s*\w+ failed: Unknown process id", result):
            return None  # the tool typed nothing anywhere
        session = self.sessions.get(session_id)
        if session is None:
            if not text:
                return None
            why = (f"text typed into session {session_id}, which no command seen in the trajectory started, so what "
                   "program read it is not known")
            return UnknownInput(why), ""
        if not text:
            return None  # a poll: nothing typed
        if session.why is not None:
            return UnknownInput(f"text typed into session {session_id} (`{session.command[:60]}`), where {session.why}, "
                                "so what it ran cannot be told"), ""
        if session.tty and _EDITING_RE.search(text.replace("\r", "")):
            why = (f"text typed into the terminal of session {session_id} (`{session.command[:60]}`) holds "
                   "line-editing keys (control characters), so the lines the program got cannot be told")
            return UnknownInput(why), ""
        session.typed += text.replace("\r\n", "\n").replace("\r", "\n") if session.tty else text
        whole = session.typed if last else session.typed[:session.typed.rfind("\n") + 1]
        if not whole[session.examined:]:
            return None
        if not last:
            from ._patterns import cannot_read

            if cannot_read(whole) is not None and len(whole) <= _LIMIT:
                return None  # a construct not closed yet (`if ...; then` typed alone): examined once it is
        new = whole[session.examined:]
        session.examined = len(whole)
        examined = whole if len(whole) <= _LIMIT else new
        shown = f"{TYPED}{session_id}, `{' '.join(session.command.split())[:60]}`"
        return TypedInput(_fed(session.command, examined), shown), TypedInput(_fed(session.command, new), shown)
