"""-v/--verbose and --debug: what was configured, and each model request's path and status, through logging, to
stderr; never a secret (an API key in the environment or a URL's password)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result


def test_verbose_logs_the_configuration(project: Path, cli: Callable[..., Result]) -> None:
    result = cli("-v", "run", "read-file")
    assert result.exit_code == 0, result.output
    assert f"INFO trialrun.cli: config file: {project / 'trialrun.toml'}" in result.stderr
    assert "INFO trialrun.cli: model transport: scripted:model_v1.yaml (scripted); api: openai-chat" in result.stderr
    assert "DEBUG" not in result.stderr


def test_debug_logs_each_model_request_and_no_secret(project: Path, cli: Callable[..., Result],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-0123456789")
    result = cli("--debug", "run", "read-file")
    assert result.exit_code == 0, result.output
    requests = [line for line in result.stderr.splitlines() if line.startswith("DEBUG trialrun.models:")]
    assert requests and all(line.endswith("POST /v1/chat/completions -> 200") for line in requests)
    assert len(requests) == 2  # read-file: a tool call, then the reply
    assert "sk-test-secret" not in result.output + result.stderr and "Bearer" not in result.stderr
    assert logging.getLogger("trialrun").level == logging.NOTSET  # restored after the command
    assert logging.getLogger("trialrun").handlers == []


def test_a_urls_password_is_not_logged(project: Path, cli: Callable[..., Result]) -> None:
    result = cli("-v", "run", "read-file", "--model", "openai-compatible:http://me:hunter2@127.0.0.1:9/v1#m")
    assert "hunter2" not in result.stderr
    assert "model transport: openai-compatible:http://***@127.0.0.1:9/v1#m (openai-compatible)" in result.stderr
