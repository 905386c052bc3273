"""Where code handed to an interpreter is in its command line: `python -c CODE`, `perl -e CODE -e MORE`,
`node -e`, `php -r`, `awk 'PROGRAM'`, `sed -e SCRIPT`, a script file or standard input. Each reader returns the
actions of a wrapper's handler (see `_wrappers`) for the code it finds."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._actions import Action, ReadsCode, RunCode, RunScript
from ._options import getopt, option_table

_Reader = Callable[[Sequence[str], str], list[Action]]

# Script paths that are the program's own standard input (`curl x | bash /dev/stdin`).
STDIN_PATHS = frozenset({"-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"})


def interpreter_handler(lang: str) -> Callable[[Sequence[str]], list[Action]]:
    """The handler of an interpreter of `lang`: where the code it runs is in its arguments."""
    def handle(words: Sequence[str]) -> list[Action]:
        return _INTERPRETERS[lang](words, lang)

    return handle


def _python_args(words: Sequence[str], lang: str) -> list[Action]:
    i, n = 0, len(words)
    while i < n:
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-":
            break
        for k, c in enumerate(w[1:], 1):
            if c == "c":
                if w[k + 1:]:
                    return [RunCode(lang, i, w[k + 1:])]
                return [RunCode(lang, i + 1, words[i + 1])] if i + 1 < n else []
            if c == "m":
                return []  # a module: code installed on the machine, not given here
            if c in "WXQ":
                i += 0 if w[k + 1:] else 1
                break
        i += 1
    return _script_or_stdin(words, i, lang)


def _script_or_stdin(words: Sequence[str], i: int, lang: str) -> list[Action]:
    if i >= len(words) or words[i] in STDIN_PATHS:
        return [ReadsCode(lang)]
    return [RunScript(i, lang)]


def _cluster_args(code_letters: str, valued: str, digits: str) -> _Reader:
    """Interpreters with perl-like options: `-e CODE` (several), letters taking the rest of the word (`-MFoo`,
    `-rlib`) or the next word, and letters taking only digits (`-l`, `-0`)."""

    def parse(words: Sequence[str], lang: str) -> list[Action]:
        i, n = 0, len(words)
        codes: list[tuple[int, str]] = []
        while i < n:
            w = words[i]
            if w == "--":
                i += 1
                break
            if not w.startswith("-") or w == "-" or w.startswith("--"):
                if w.startswith("--") and w != "--":
                    i += 1
                    continue
                break
            k = 1
            while k < len(w):
                c = w[k]
                if c in code_letters:
                    if w[k + 1:]:
                        codes.append((i, w[k + 1:]))
                    elif i + 1 < n:
                        i += 1
                        codes.append((i, words[i]))
                    break
                if c in valued:
                    if not w[k + 1:] and c in "IrCE":
                        i += 1  # the value is the next word
                    break
                k += 1
                if c in digits:
                    while k < len(w) and w[k] in "0123456789":
                        k += 1
            i += 1
        if codes:
            return [RunCode(lang, codes[0][0] if len(codes) == 1 else -1, "\n".join(text for _, text in codes))]
        return _script_or_stdin(words, i, lang)

    return parse


def _node_args(words: Sequence[str], lang: str) -> list[Action]:
    i, n = 0, len(words)
    if words and words[0] in ("eval",):  # `deno eval CODE`, `bun eval CODE`
        return [RunCode(lang, 1, words[1])] if n > 1 else []
    if words and words[0] in ("run", "x", "exec"):
        i = 1
    while i < n:
        w = words[i]
        if w in ("-e", "--eval", "-p", "--print", "-pe", "-ep"):
            return [RunCode(lang, i + 1, words[i + 1])] if i + 1 < n else []
        if w.startswith(("--eval=", "--print=")):
            return [RunCode(lang, i, w.split("=", 1)[1])]
        if w in ("-r", "--require", "--import", "--loader", "--experimental-loader", "-C", "--conditions"):
            i += 2
            continue
        if w == "--" or not w.startswith("-") or w == "-":
            break
        i += 1
    if i < n and words[i] == "--":
        i += 1
    return _script_or_stdin(words, i, lang)


def _php_args(words: Sequence[str], lang: str) -> list[Action]:
    parsed_to, seen = getopt(words, 0, option_table(values="rfBREFdcSt"))
    codes = [code for k in "rBRE" if (code := seen.get(k))]
    if codes:
        return [RunCode(lang, -1, "\n".join(codes))]
    script = seen.get("f")
    if script:
        return [RunScript(script, lang)]
    if "a" in seen or "S" in seen or "l" in seen:
        return []
    return _script_or_stdin(words, parsed_to, lang)


def _awk_args(words: Sequence[str], lang: str) -> list[Action]:
    opts = option_table(values="fvFeEil", longs={"file": "f", "assign": "v", "field-separator": "F", "source": "e",
                                          "exec": "E", "include": "i", "load": "l"})
    i, n = 0, len(words)
    codes: list[str] = []
    files: list[int] = []
    while i < n:
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-":
            break
        key = w[1:2] if not w.startswith("--") else opts.canonical_long(w[2:].split("=", 1)[0])
        value_attached = w[2:] if not w.startswith("--") else (w.split("=", 1)[1] if "=" in w else "")
        if key in ("f", "e", "E", "--file", "--source", "--exec") or key in opts.values:
            if value_attached:
                value, index = value_attached, i
            else:
                value, index = (words[i + 1] if i + 1 < n else ""), i + 1
                i += 1
            if key in ("f", "E"):
                files.append(index)
            elif key == "e":
                codes.append(value)
        i += 1
    return _program(words, i, lang, files, codes, -1)  # (awk's code is taken for several words)


def _program(
    words: Sequence[str], i: int, lang: str, files: list[int], codes: list[str], code_index: int
) -> list[Action]:
    """awk's and sed's program: the script files given (`-f FILE`, at words[k]), else the code given in options
    (`-e CODE`, at words[code_index]; -1: several words), else the first operand, words[i]."""
    if files:
        return [RunScript(k, lang) for k in files if k < len(words)]  # (a `-f` with no file runs nothing)
    if codes:
        return [RunCode(lang, code_index, "\n".join(codes))]
    return [RunCode(lang, i, words[i])] if i < len(words) else []


def _sed_args(words: Sequence[str], lang: str) -> list[Action]:
    if "--sandbox" in words:
        return []  # GNU sed refuses `e`, `r` and `w` in sandbox mode
    i, n = 0, len(words)
    codes: list[tuple[int, str]] = []
    files: list[int] = []
    while i < n:
        w = words[i]
        if w == "--":
            i += 1
            break
        if not w.startswith("-") or w == "-":
            break
        if w.startswith("--expression="):
            codes.append((i, w.split("=", 1)[1]))
        elif w == "--expression" or (w.startswith("-") and not w.startswith("--") and w.rstrip("nErsuz")[-1:] == "e"):
            if i + 1 < n:
                codes.append((i + 1, words[i + 1]))
            i += 1
        elif w.startswith("--file="):
            files.append(i)
        elif w == "--file" or (not w.startswith("--") and w.endswith("f") and "i" not in w):
            files.append(i + 1)
            i += 1
        elif w.startswith("-e") and len(w) > 2:
            codes.append((i, w[2:]))
        elif w in ("-l", "--line-length"):
            i += 1
        i += 1
    index = codes[0][0] if len(codes) == 1 else -1
    return _program(words, i, lang, files, [text for _, text in codes], index)


_INTERPRETERS: dict[str, _Reader] = {
    "python": _python_args,
    "perl": _cluster_args("eE", "IMmFxidDCV", "l0"),
    "ruby": _cluster_args("e", "rICEFxWK", "0"),
    "node": _node_args,
    "php": _php_args,
    "awk": _awk_args,
    "sed": _sed_args,
}
