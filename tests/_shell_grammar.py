"""Hypothesis strategies for shell command lines, shared by the shell analyser's property tests
(tests/test_shell_properties.py) and its differential oracle against bash (tests/test_shell_oracle.py).

Every command drawn here is safe to run for real: its programs come from `PROGRAMS` (each a fake the oracle puts
first on PATH, which logs its argv and does nothing else) or are shell builtins and the few real wrappers the oracle
links in (`env`, `timeout`, `nice`, `nohup`, `xargs`, `sh`, `bash`); no word is an absolute path, a `..`, a `~`, a
variable that could hold one (`$HOME`, `$PATH`) or an option that makes a wrapper search other folders (`env -i`,
`command -p`); redirections write to plain names inside the scratch folder. The oracle also runs them inside
bubblewrap with the root read-only and no network, so a mistake here cannot reach anything.

How many examples each test draws: `examples(n)` is n in CI (and in a plain `pytest` run); `TRIALRUN_FUZZ=full`
multiplies every budget (see docs/development.md).
"""

from __future__ import annotations

import os
import random
import shlex
from collections.abc import Callable
from typing import TypeVar

from hypothesis import HealthCheck, settings, strategies as st

T = TypeVar("T")

#: `TRIALRUN_FUZZ=full` (or a number: the multiplier) runs every property and oracle test with many more examples,
#: on new random seeds; by default each draws a small, fixed (derandomized) set, a few seconds a test.
_FUZZ = os.environ.get("TRIALRUN_FUZZ", "")
SCALE = 100 if _FUZZ == "full" else int(_FUZZ) if _FUZZ.isdigit() else 1


def examples(n: int) -> settings:
    """A test's settings: `n` examples in CI (derandomized: the same ones every run), `n * SCALE` on request."""
    return settings(
        max_examples=n * SCALE, deadline=None, derandomize=SCALE == 1, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


#: The fake programs (each logs its argv; the oracle's PATH has nothing else), with options they take. Option words
#: are whole words; a value an option takes follows it as its own word in `VALUED`.
PROGRAMS: dict[str, tuple[str, ...]] = {
    "rm": ("-r", "-f", "-rf", "-fr", "-R", "-v", "-d", "--recursive", "--force", "--verbose"),
    "rmdir": ("-p", "-v", "--parents"),
    "shred": ("-u", "-z", "-f", "--remove"),
    "unlink": (),
    "chmod": ("-R", "-v", "--recursive"),
    "curl": ("-s", "-L", "-f", "-sSL", "--silent", "--location"),
    "ls": ("-l", "-a", "-la", "-R"),
    "cat": ("-n", "-A"),
    "touch": ("-c", "-a"),
    "mkdir": ("-p", "-v"),
    "cp": ("-r", "-f", "-a"),
    "mv": ("-f", "-n"),
    "git": ("--no-pager",),
}
#: Plain file names (relative, no `..`): the operands.
NAMES = ("a", "b", "build", "x.txt", "dir x", "-", "out", "c.sh")
#: Programs that run the command given in their arguments, as `PREFIXES` spell them (each real or faked safely).
PREFIXES = ("env", "command", "nice", "nohup", "timeout 9", "env A=1", "sudo", "sudo -u nobody", "builtin command")


def plain(word: str) -> str:
    return shlex.quote(word)


# Generation is plain Python driven by a seed that hypothesis draws (`seeded`): drawing each choice through
# hypothesis made a command line cost a few hundred milliseconds; a seed keeps a test within seconds, and a failure
# still names its seed and its command line.


def seeded(make: Callable[[random.Random], T]) -> st.SearchStrategy[T]:
    """What `make` builds from a random generator seeded by hypothesis."""
    return st.integers(0, 2**32 - 1).map(lambda seed: make(random.Random(seed)))


def spell(rnd: random.Random, word: str) -> str:
    """`word` in one of the spellings bash reads as that same word: quoted, escaped, partly quoted, `$'...'`."""
    how = rnd.choice(("plain", "single", "double", "split", "escape", "ansi", "hex", "empty"))
    if how == "plain" or not word:
        return plain(word)
    if how == "single":
        return "'" + word.replace("'", "'\\''") + "'"
    if how == "double":
        return '"' + "".join("\\" + c if c in '"$`\\' else c for c in word) + '"'
    if how == "split":
        k = rnd.randint(0, len(word))
        return spell_plain(word[:k]) + "'" + word[k:].replace("'", "'\\''") + "'"
    if how == "escape":
        return "".join("\\" + c if c.isalnum() or c in " -.'\"" else c for c in word)
    if how == "ansi":
        return "$'" + word.replace("\\", "\\\\").replace("'", "\\'") + "'"
    if how == "hex":
        return "$'" + "".join(f"\\x{ord(c):02x}" for c in word) + "'"
    return "''" + plain(word) + '""'


def spell_plain(text: str) -> str:
    """`text` escaped char by char, so that it is one piece of a word whatever it holds."""
    return "".join(c if c.isalnum() or c in "-._" else "\\" + c for c in text)


def argv(rnd: random.Random) -> list[str]:
    """A command's words: a fake program, some of its options, some names."""
    program = rnd.choice(sorted(PROGRAMS))
    options = rnd.sample(PROGRAMS[program], rnd.randint(0, min(3, len(PROGRAMS[program]))))
    if program == "git":
        sub = rnd.choice(("status", "clean -f -d", "push --force", "reset --hard"))
        return [program, *options, *sub.split()]
    names = NAMES[:-1] if program == "cat" else NAMES
    return [program, *options, *(rnd.choice(names) for _ in range(rnd.randint(0, 2)))]


def disguise(rnd: random.Random, words: list[str]) -> str:
    """`words` as a command line bash runs as that same argv: each word spelled its own way, then wrapped (a prefix
    program, `sh -c`, `eval`, a pipe into a shell, a here-document, a group, a function, a variable holding the
    code ...), up to three times. A prefix program only ever wraps a simple command (else `sh -c` comes between),
    and each here-document has a delimiter of its own."""
    text = " ".join(spell(rnd, w) for w in words)
    simple = True
    for level in range(rnd.randint(0, 3)):
        text, simple = _wrap(rnd, rnd.choice(_WRAPPERS), text, simple, f"EOF{level}")
    return text


def argvs() -> st.SearchStrategy[list[str]]:
    return seeded(argv)


def disguised_pairs() -> st.SearchStrategy[tuple[list[str], str]]:
    """(an argv, a disguise of it)."""
    def make(rnd: random.Random) -> tuple[list[str], str]:
        words = argv(rnd)
        return words, disguise(rnd, words)

    return seeded(make)


_WRAPPERS = ("prefix", "sh-c", "bash-c", "eval", "pipe", "herestring", "heredoc", "subshell", "group", "function",
             "and", "or", "if", "substitution", "xargs", "variable", "background")


def _wrap(rnd: random.Random, how: str, text: str, simple: bool, delimiter: str) -> tuple[str, bool]:
    """`text` wrapped `how`, and whether the result is a simple command. Compound forms put their closing word on a
    line of its own, so that a here-document inside ends where it should."""
    quoted = shlex.quote(text)
    # `sh` is dash on Debian, where `$'...'` is no quoting, `<<<` no redirection and `builtin` no builtin: code with it goes to bash (the analyser reads code given
    # to any shell as bash's, which sees more than dash runs: see docs/matcher.md)
    sh = "bash" if "$'" in text or "<<<" in text or "builtin " in text else "sh"
    if how == "prefix":  # (a prefix program runs programs, not builtins: `nohup eval ...` runs nothing)
        prefix = rnd.choice(PREFIXES)
        direct = simple and (prefix.endswith("command") or not text.startswith(("eval ", "command ", "builtin ")))
        return f"{prefix} {text if direct else sh + ' -c ' + quoted}", True
    if how in ("sh-c", "bash-c"):
        return f"{sh if how == 'sh-c' else 'bash'} -c {quoted}", True
    if how == "eval":
        return f"eval {quoted}", True
    if how == "pipe":
        # (printf, not echo: dash's echo reads backslash escapes, so `echo '\\c...' | sh` differs between shells)
        return f"printf '%s\\n' {quoted} | {rnd.choice((sh, 'bash', sh + ' -s'))}", False
    if how == "herestring":
        return f"bash <<< {quoted}", True
    if how == "heredoc":
        return f"{sh} <<'{delimiter}'\n{text}\n{delimiter}", True
    if how == "xargs":
        return f"printf '' | xargs {sh} -c {quoted}", False
    if how == "variable":
        return f"c={quoted}; eval \"$c\"", False
    inner = f"\n{text}\n"
    return {
        "subshell": f"({inner})",
        "group": f"{{{inner}}}",
        "function": f"f() {{{inner}}}; f",
        "and": f"true && {{{inner}}}",
        "or": f"false || {{{inner}}}",
        "if": f"if true; then{inner}fi",
        "substitution": f': "$({inner})"',
        "background": f"{{{inner}}} & wait",
    }[how], False


# -- grammar-shaped command lines (for "never raises" and the oracle) ----------------------------------------------

_OPERATORS = (" ; ", " && ", " || ", " | ", "\n", " & ")


def simple_command(rnd: random.Random) -> str:
    words = [spell(rnd, w) for w in argv(rnd)]
    prefix = rnd.choice(("", "", "", "X=1 ", "opts=-rf ", "p=rm ", "x[ ]=1 "))
    redirect = rnd.choice(("", "", "", " > out", " 2>&1", " >> out", " < x.txt", " <<< 'rm -rf b'", " | >out"))
    return prefix + " ".join(words) + redirect


def command_line(rnd: random.Random, depth: int = 3) -> str:
    """A command line of `simple_command`s in the shell's constructs, nested up to `depth` levels."""
    if depth == 0 or rnd.random() < 0.3:
        return simple_command(rnd)
    t = command_line(rnd, depth - 1)
    form = rnd.randrange(17)
    if form == 0:
        return t + rnd.choice(_OPERATORS) + command_line(rnd, depth - 1)
    return (
        f"( {t} )", f"{{ {t}; }}", f"if true; then {t}; fi", f"for v in a b; do {t}; done",
        f"while false; do {t}; done", f"case x in x) {t};; esac", f"f() {{ {t}; }}; f", f'echo "$({t})"',
        f"echo `{t}`" if "`" not in t else t, f"bash -c {shlex.quote(t)}", f"eval {shlex.quote(t)}",
        f"echo {shlex.quote(t)} | sh", f"sh <<'EOF{depth}'\n{t}\nEOF{depth}\n", f"cat <<EOF{depth} | sh\n{t}\nEOF{depth}\n",
        f"cmd={shlex.quote(t)}; eval \"$cmd\"", f"{rnd.choice(PREFIXES)} sh -c {shlex.quote(t)}",
    )[form - 1]


def command_lines() -> st.SearchStrategy[str]:
    return seeded(command_line)


#: Characters that make shell syntax, for text that is only shell-shaped (mostly not valid).
SHELLISH = " \t\n;&|()<>'\"\\$`{}[]#*?!=~-_/.,:%0123456789abcdefrmsx"
#: Ways to break a valid line: each leaves something unclosed or out of place.
BREAKERS = ("'", '"', "$(", "`", "(", ")", "{", "}", "|", "&&", ";;", "<<", "${", "$((", "if", "then", "fi", "do",
            "done", "esac", "\\", ";", "&", "x[")


def broken_line(rnd: random.Random) -> str:
    """A command line with a breaker put somewhere in it: valid or not, for parse agreement with bash."""
    text = command_line(rnd)
    at = rnd.randint(0, len(text))
    return text[:at] + rnd.choice(BREAKERS) + text[at:]


def broken_lines() -> st.SearchStrategy[str]:
    return seeded(broken_line)
