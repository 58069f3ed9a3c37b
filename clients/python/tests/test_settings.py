"""Settings: an argument, else the environment, else tyctl's config."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from trainyard import _settings


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tyctl config path of the test's own, and no TYCTL_ variables."""
    for k in list(os.environ):
        if k.startswith("TYCTL_"):
            monkeypatch.delenv(k)
    path = tmp_path / "config.yaml"
    monkeypatch.setenv("TYCTL_CONFIG", str(path))
    return path


def test_argument_env_config_default(config: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config.write_text("server: cfg:1\ntenant: from-config\ninsecure: true\nlogin: {idToken: stored-token}\n")
    s = _settings.resolve(None, None, None, None, None)
    assert (s.server, s.tenant, s.token, s.insecure) == ("cfg:1", "from-config", "stored-token", True)
    for k, v in {"TYCTL_SERVER": "env:2", "TYCTL_TOKEN": "Bearer env-token", "TYCTL_INSECURE": "false"}.items():
        monkeypatch.setenv(k, v)
    s = _settings.resolve(None, None, None, None, None)
    assert (s.server, s.tenant, s.token, s.insecure) == ("env:2", "from-config", "env-token", False)
    s = _settings.resolve("arg:3", "arg-token", "arg-tenant", True, None)
    assert (s.server, s.tenant, s.token, s.insecure) == ("arg:3", "arg-tenant", "arg-token", True)


def test_no_config(config: Path) -> None:
    s = _settings.resolve(None, None, None, None, None)
    assert (s.server, s.token) == (_settings.DEFAULT_SERVER, None)
