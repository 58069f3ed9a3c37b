"""Where the client connects and who it is: the same settings as tyctl.

An argument given to :class:`trainyard.Client` wins; then the environment
(``TYCTL_SERVER``, ``TYCTL_TENANT``, ``TYCTL_TOKEN``, ``TYCTL_TOKEN_FILE``,
``TYCTL_CA_FILE``, ``TYCTL_INSECURE``); then tyctl's config file
(``$TYCTL_CONFIG``, else ``tyctl/config.yaml`` in the user's config
directory), which holds the token ``tyctl login`` stored. An expired stored
token is refreshed with its refresh token, as tyctl does, and written back
so that both keep working.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Optional, cast

DEFAULT_SERVER = "localhost:9090"
# A token this close to its expiry is refreshed before use, as tyctl does.
EXPIRY_SKEW_SECONDS = 30


@dataclass
class Settings:
    server: str
    tenant: Optional[str]
    token: Optional[str]
    insecure: bool
    ca_file: Optional[str]


def config_path() -> Path:
    """tyctl's config file: $TYCTL_CONFIG, else tyctl/config.yaml in the user's config directory (Go's os.UserConfigDir)."""
    if os.environ.get("TYCTL_CONFIG"):
        return Path(os.environ["TYCTL_CONFIG"])
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif os.name == "nt":
        base = Path(os.environ.get("APPDATA", Path.home()))
    else:
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "tyctl" / "config.yaml"


def _read_config(path: Path) -> Dict[str, Any]:
    try:
        text = path.read_text()
    except FileNotFoundError:
        return {}
    try:
        import yaml  # tyctl writes YAML; PyYAML reads it
    except ImportError:  # pragma: no cover - PyYAML is a dependency
        return cast(Dict[str, Any], json.loads(text))
    return cast(Dict[str, Any], yaml.safe_load(text) or {})


def resolve(target: Optional[str], token: Optional[str], tenant: Optional[str],
            insecure: Optional[bool], ca_file: Optional[str]) -> Settings:
    """Applies argument > environment > tyctl's config file > default."""
    env = os.environ
    path = config_path()
    cfg = _read_config(path)
    server = target or env.get("TYCTL_SERVER") or cfg.get("server") or DEFAULT_SERVER
    tenant = tenant or env.get("TYCTL_TENANT") or cfg.get("tenant")
    ca_file = ca_file or env.get("TYCTL_CA_FILE") or cfg.get("caFile")
    if insecure is None:
        if env.get("TYCTL_INSECURE"):
            insecure = env["TYCTL_INSECURE"].strip().lower() in ("1", "true", "yes")
        else:
            insecure = bool(cfg.get("insecure", False))
    if token is None:
        if env.get("TYCTL_TOKEN"):
            token = env["TYCTL_TOKEN"]
        elif env.get("TYCTL_TOKEN_FILE"):
            token = Path(env["TYCTL_TOKEN_FILE"]).read_text()
        elif cfg.get("login"):
            token = _stored_token(path, cfg)
    if token is not None:
        token = token.strip()
        if token.lower().startswith("bearer "):
            token = token[7:].strip()
    return Settings(server=server, tenant=tenant, token=token or None, insecure=insecure, ca_file=ca_file)


def _stored_token(path: Path, cfg: Dict[str, Any]) -> Optional[str]:
    """The token tyctl login stored, refreshed first when it is about to expire."""
    login = cfg["login"]
    expiry = _parse_time(login.get("expiry"))
    if expiry is None or expiry - EXPIRY_SKEW_SECONDS > time.time() or not login.get("refreshToken"):
        return cast(Optional[str], login.get("idToken"))
    fresh = _refresh(login)
    login.update(fresh)
    _write_config(path, cfg)
    return cast(Optional[str], login.get("idToken"))


def _parse_time(s: Any) -> Optional[float]:
    if not s:
        return None
    if isinstance(s, datetime):
        return s.timestamp()
    return datetime.fromisoformat(str(s).replace("Z", "+00:00")).timestamp()


def _refresh(login: Dict[str, Any]) -> Dict[str, Any]:
    """Exchanges the refresh token at the issuer's token endpoint (OIDC discovery)."""
    issuer = login["issuer"].rstrip("/")
    with urllib.request.urlopen(issuer + "/.well-known/openid-configuration", timeout=10) as r:
        token_endpoint = json.load(r)["token_endpoint"]
    form = {"grant_type": "refresh_token", "refresh_token": login["refreshToken"], "client_id": login.get("clientId", "")}
    req = urllib.request.Request(token_endpoint, data=urllib.parse.urlencode(form).encode(),
                                 headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            tok = json.load(r)
    except urllib.error.HTTPError as e:
        # Never the response body: it may echo the refresh token.
        raise RuntimeError(f"refreshing the stored token failed ({e.code}); run tyctl login again") from None
    if not tok.get("id_token"):
        raise RuntimeError("the issuer returned no id_token on refresh; run tyctl login again")
    out = {"idToken": tok["id_token"]}
    if tok.get("refresh_token"):
        out["refreshToken"] = tok["refresh_token"]
    exp = _jwt_expiry(tok["id_token"])
    if exp is not None:
        out["expiry"] = datetime.fromtimestamp(exp, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return out


def _jwt_expiry(token: str) -> Optional[int]:
    """The exp claim of a JWT, read without verifying it: only to know when
    to refresh. The server verifies every token it is sent."""
    try:
        payload = token.split(".")[1]
        payload += "=" * (-len(payload) % 4)
        return int(json.loads(base64.urlsafe_b64decode(payload))["exp"])
    except (IndexError, ValueError, KeyError, TypeError):
        return None


def _write_config(path: Path, cfg: Dict[str, Any]) -> None:
    """Writes the config back atomically, readable only by its owner (it holds tokens)."""
    import yaml

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-")
    try:
        os.chmod(tmp, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(cfg, f, default_flow_style=False)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
