"""Secrets while a run is going (issue 22), through the real `trialrun run` in a process of its own:

- a test id holding the value of a `*_TOKEN` environment variable never reaches the terminal, the progress line
  included (a CI log's plain lines, and the rich bar on a terminal: a pseudo-terminal here);
- a credential the run learns only in a later trial (the agent reads it from a file, and the second trial's model
  transport first sees it in a request header) is never in the journal or the exchanges sidecar ON DISK once it is
  known: the files are read while that later trial is still running, and the journal is still the live run's
  (locked). What the run knows from the start (its environment) is scrubbed from the first line on.
"""

from __future__ import annotations

import base64
import html
import json
import os
import pty
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import quote, quote_plus

from trialrun.report.journal import is_live

ENV_TOKEN = "tok-env-5f4e3d2c1b0a"  # in the run's environment as ACME_DEPLOY_TOKEN: known from the start
LATE_TOKEN = "late-cred-9a8b7c6d5e4f3a2b"  # in a file: known only once the second trial's transport sees it

AGENT = textwrap.dedent('''
    """Sleeps past the progress line's delay; echoes a credential read from a file, which the second test's model
    transport then sees in a request header; and waits there while the test reads the run's files."""
    import os
    import time
    from pathlib import Path

    import httpx
    import trialrun as tr

    HERE = Path(__file__).parent


    def run(prompt, ctx):
        token = (HERE / "creds.txt").read_text().strip()
        model = ctx.scripted([tr.reply("all done")])
        client = httpx.Client(transport=model, base_url="https://api.openai.com/v1")
        if not ctx.case.name.startswith("second"):  # one turn, so that the turn budget is checked against it
            client.post("/chat/completions", json={"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]})
            time.sleep(1.3)
            return f"done; the token is {token}, the deploy token {os.environ['ACME_DEPLOY_TOKEN']}"
        client.post("/chat/completions", headers={"x-api-key": token},
                    json={"model": "gpt-4.1-mini", "messages": [{"role": "user", "content": prompt}]})
        (HERE / "registered").write_text("yes")
        deadline = time.time() + 60
        while not (HERE / "go").exists() and time.time() < deadline:
            time.sleep(0.05)
        return "the second is done"
''')


def _suite(*ids: str) -> list[dict[str, object]]:
    return [{"id": ident, "name": ident, "prompt": "Deploy it.", "expected_tools": [], "max_turns": 2,
             "success_criteria": "Says it is deployed"} for ident in ids]


def _project(root: Path, ids: tuple[str, ...]) -> Path:
    (root / "state" / "eval").mkdir(parents=True)
    (root / "state" / "eval" / "tests.json").write_text(json.dumps(_suite(*ids), indent=2))
    (root / "live_agent.py").write_text(AGENT)
    (root / "creds.txt").write_text(LATE_TOKEN + "\n")
    (root / "trialrun.toml").write_text('agent = "live_agent:run"\nmodel = "scripted:unused.yaml"\n')
    (root / "unused.yaml").write_text("".join(f"{json.dumps(i)}: [{{reply: unused}}]\n" for i in ids))
    return root


def _env(project: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GITHUB_STEP_SUMMARY"}
    env.update(COLUMNS="200", ACME_DEPLOY_TOKEN=ENV_TOKEN, **extra,
               PYTHONPATH=os.pathsep.join([str(project), env.get("PYTHONPATH", "")]))
    return env


def encodings(value: str) -> set[str]:
    """How a value may be written in an artefact: as is, JSON-escaped (once, twice), URL-encoded, HTML-escaped,
    base64 (alone)."""
    once = json.dumps(value)[1:-1]
    return {value, once, json.dumps(once)[1:-1], quote(value, safe=""), quote_plus(value), html.escape(value),
            base64.b64encode(value.encode()).decode().rstrip("=")}


def _leaks(text: str, *tokens: str) -> list[str]:
    return sorted({token for token in tokens for form in encodings(token) if form in text})


def test_a_token_in_a_test_id_never_reaches_the_progress_line(tmp_path: Path) -> None:
    ids = (f"deploy-{ENV_TOKEN}", f"again-{ENV_TOKEN} [/etc/hosts]")  # and rich markup: data, not a closing tag
    project = _project(tmp_path / "project", ids)
    # Not a terminal (a CI log): the plain progress lines.
    plain = subprocess.run([sys.executable, "-m", "trialrun", "run", "all", "-j", "1"], cwd=project,
                           env=_env(project), capture_output=True, text=True, timeout=120, check=False)
    output = plain.stdout + plain.stderr
    assert plain.returncode == 0, output
    assert "progress: 2/2 trials" in output and "REDACTED done" in output, output  # the line was printed, scrubbed
    assert _leaks(output, ENV_TOKEN) == [], output

    # A terminal: the rich bar shows the test that finished last.
    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "all", "-j", "1"], cwd=project,
                               env=_env(project, TERM="xterm-256color"), stdin=subprocess.DEVNULL,
                               stdout=terminal, stderr=terminal, close_fds=True)
    os.close(terminal)
    shown = b""
    deadline = time.time() + 120
    while time.time() < deadline:
        ready, _, _ = select.select([controller], [], [], 1)
        if ready:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the other side closed: the run ended
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(controller)
    assert process.wait(30) == 0, shown.decode(errors="replace")
    screen = shown.decode("utf-8", errors="replace")
    assert "running" in screen and "REDACTED" in screen, screen  # the bar was drawn; the ids in it scrubbed
    assert "REDACTED [/etc/hosts]" in screen and "Traceback" not in screen, screen
    assert _leaks(screen, ENV_TOKEN) == [], screen


def test_a_credential_learned_in_a_later_trial_is_never_on_disk_once_known(tmp_path: Path) -> None:
    project = _project(tmp_path / "project", ("first", "second"))
    process = subprocess.Popen([sys.executable, "-m", "trialrun", "run", "all", "-j", "1"], cwd=project,
                               env=_env(project), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 90
        while not (project / "registered").exists():
            assert process.poll() is None, process.communicate()
            assert time.time() < deadline, "the second trial never got there"
            time.sleep(0.05)
        folder = project / "state" / "eval"
        journal = next(folder.glob("results_*.jsonl"))
        sidecar = next(folder.glob("results_*.exchanges.ndjson"))
        while journal.read_text().count('"event":"trial"') < 1:  # the first trial's line (written as it finished)
            assert time.time() < deadline
            time.sleep(0.05)
        # The second trial is still running (it waits for `go`): the run's files as they are on disk now.
        assert process.poll() is None and is_live(journal), "the journal must still be the live run's (locked)"
        on_disk = {"journal": journal.read_text(), "sidecar": sidecar.read_text()}
        assert '"case":"first"' in on_disk["journal"] and "REDACTED" in on_disk["journal"]
        leaks = {name: found for name, text in on_disk.items() if (found := _leaks(text, LATE_TOKEN, ENV_TOKEN))}
        assert leaks == {}, leaks
    finally:
        (project / "go").write_text("go")
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 1, stdout + stderr
    texts = {p.name: p.read_text(errors="replace") for p in (project / "state" / "eval").iterdir() if p.is_file()}
    texts.update(stdout=stdout, stderr=stderr)
    latest = json.loads(texts["latest.json"])
    assert [case["name"] for case in latest["cases"]] == ["first", "second"]
    assert "REDACTED" in latest["cases"][0]["trials"][0]["output"]
    leaks = {name: found for name, text in texts.items() if (found := _leaks(text, LATE_TOKEN, ENV_TOKEN))}
    assert leaks == {}, leaks
