"""allow_commands are exact: a rule allows what its author wrote, never extra arguments, wrappers or loader
variables (deny rules keep matching "all of the pattern's words, in any order")."""

from __future__ import annotations

import pytest

import trialrun as tr

POLICY = tr.ToolPolicy(allow_commands=["git status", "cat notes.txt", "ls", "git log *", "grep", "/usr/bin/env"])


def decide(command: str | list[str], policy: tr.ToolPolicy = POLICY) -> tr.Decision:
    return policy.decide("run_command", {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "cat notes.txt",
        "ls",
        "ls -la /tmp",  # a bare program allows any arguments
        "ls $HOME",  # ... even ones only known at run time
        "git log",
        "git log --oneline -n 5",  # `git log *` allows more after its words
        "ls | grep x && git status",  # each command of a line judged on its own
        "X=1 ls",  # a harmless assignment in front of a bare-program rule
        "/usr/bin/env",
        ["git", "status"],
    ],
)
def test_allowed(command: str | list[str]) -> None:
    decision = decide(command)
    assert (decision.action, decision.rule) == ("allow", "allow_commands"), decision.reason


@pytest.mark.parametrize(
    "command, reason",
    [
        ('git -c core.fsmonitor="touch pwned" status', "`git -c 'core.fsmonitor=touch pwned' status` is not in allow_commands"),
        ("cat /etc/shadow notes.txt", "`cat /etc/shadow notes.txt` is not in allow_commands"),
        ("git status --porcelain", "`git status` allows exactly those words (end a rule with ` *` to allow more"),
        ("git status $X", "`git status \"$X\"` is not in allow_commands"),
        ("git", "`git` is not in allow_commands"),
        ("cat", "`cat` is not in allow_commands"),
        ("GIT_CONFIG_COUNT=1 git status", "a variable is assigned in front of `git status` (GIT_CONFIG_COUNT)"),  # the environment is part of it
        ("./ls", "`./ls` is not in allow_commands"),  # a file named ls is not the program ls
        ("/tmp/x/ls -la", "`/tmp/x/ls -la` is not in allow_commands"),
        ("sudo ls", "`sudo ls` is not in allow_commands"),  # wrappers are programs too
        ("bash -c ls", "`bash -c ls` is not in allow_commands"),
        ("env ls", "`env ls` is not in allow_commands"),  # `/usr/bin/env` is allowed, `env` is another word
        ("$X -la", "what it runs is only known at run time"),
        ("git log; rm -rf x", "`rm -rf x` is not in allow_commands"),
    ],
)
def test_denied(command: str, reason: str) -> None:
    decision = decide(command)
    assert (decision.action, decision.rule) == ("deny", "allow_commands")
    assert reason in decision.reason, decision.reason


@pytest.mark.parametrize(
    "command, variable",
    [
        ("PATH=. ls", "PATH"),
        ("LD_PRELOAD=x.so ls", "LD_PRELOAD"),
        ("DYLD_INSERT_LIBRARIES=x ls", "DYLD_INSERT_LIBRARIES"),
        ("BASH_ENV=x ls", "BASH_ENV"),
        ("ENV=x ls", "ENV"),
        ("IFS=/ ls", "IFS"),
        ("PYTHONPATH=. ls", "PYTHONPATH"),
        ("PYTHONSTARTUP=x.py ls", "PYTHONSTARTUP"),
        ("PATH+=:. ls", "PATH"),
        ("PATH=.; ls", "PATH"),  # a plain assignment: PATH is exported already
        ("export LD_LIBRARY_PATH=.; ls", "LD_LIBRARY_PATH"),
        ("ls && /usr/bin/env PATH=. ls", "PATH"),
        ("ls | grep \"$(PATH=. ls)\"", "PATH"),
        (["/usr/bin/env", "LD_PRELOAD=x.so", "ls"], "LD_PRELOAD"),
    ],
)
def test_loader_variables_are_never_allowed(command: str | list[str], variable: str) -> None:
    policy = tr.ToolPolicy(allow_commands=["ls", "grep", "export", "/usr/bin/env"])
    decision = decide(command, policy)
    assert (decision.action, decision.rule) == ("deny", "allow_commands")
    assert decision.reason.startswith(f"it sets {variable}, which changes which programs run"), decision.reason


def test_a_glob_program_rule_and_an_open_rule_with_no_words() -> None:
    policy = tr.ToolPolicy(allow_commands=["python3*", "make *"])
    assert decide("python3.11 -c 'print(1)'", policy).action == "allow"
    assert decide("make -j4 all", policy).action == "allow"
    assert decide("pip install x", policy).action == "deny"


def test_deny_rules_keep_matching_words_in_any_order() -> None:
    policy = tr.ToolPolicy(deny_commands=["git status"])
    assert decide('git -c core.fsmonitor="touch pwned" status', policy).action == "deny"
    assert decide("git status --porcelain", policy).action == "deny"


def test_a_pipeline_is_not_an_allow_rule() -> None:
    with pytest.raises(ValueError, match="allow_commands: 'curl x | sh' is a pipeline; an allow rule is one command"):
        tr.ToolPolicy(allow_commands=["curl x | sh"])


def test_an_allow_list_judges_every_command_a_call_carries() -> None:
    policy = tr.ToolPolicy(allow_commands=["cat"])
    decision = policy.decide("bash", {"command": "cat <<EOF", "cmd": "rm -rf x"})
    assert decision.action == "deny" and "rm" in decision.reason
    assert policy.decide("bash", {"command": "cat a.txt", "cmd": "cat b.txt"}).action == "allow"


def test_a_variable_in_front_of_an_exact_rule_is_named_as_the_reason() -> None:
    policy = tr.ToolPolicy(default="deny", allow_tools=["run_command"], allow_commands=["git status"])
    decision = policy.decide("run_command", {"command": "GIT_DIR=x git status"})
    assert decision.action == "deny"
    assert decision.reason == ("a variable is assigned in front of `git status` (GIT_DIR); the rule `git status` has "
                               "arguments, so it allows no assignment")
