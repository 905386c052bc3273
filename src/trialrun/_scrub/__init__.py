"""The one scrubber: credentials taken out of everything trialrun writes or prints.

Every writer calls it at the point where its artefact is serialised: cassettes (`scrub_exchange`, as each exchange
is recorded), result files, the journal, HTML, JUnit and Markdown (`scrub_text` of the finished text), and the text
the renderers show (`render.text.printable`, before anything is cut or wrapped). What is replaced by `REDACTED`:

- key shapes: OpenAI `sk-`/`sk-proj-`, Anthropic `sk-ant-`, Google `AIza`, GitHub `ghp_`/`gho_`/`ghu_`/`ghs_`/
  `ghr_`/`github_pat_`, Slack `xox?-`, AWS access key ids (`AKIA`, `ASIA`, ...) and secret keys (after a
  `secret_access_key` name, or any 40-character key in text that also holds an access key id), JWTs, the token of
  a `Bearer` / `Authorization:` and the value of a `password=` / `client_secret:` / `api_key=` assignment, and
  private key blocks (`-----BEGIN ... PRIVATE KEY-----` to its END line);
- the run's own secrets: the VALUES of environment variables whose names look secret (`*_API_KEY`, `*_TOKEN`,
  `*_SECRET*`, `*PASSWORD*`, `*_KEY`, `*CREDENTIALS`, ...; 6 characters or more), wherever they appear, also as
  JSON, HTML or Python-repr escaped text;
- the credentials trialrun's model transports hold: every value registered with `add_secret` (process-wide), which
  a LiveModel's `api_key`, the credential headers of every request a model transport sees (`Authorization`,
  `x-api-key`, ...: `add_header_credentials`; a Basic credential also as `user:password` and its password), an
  Agent's `headers=` and a ProcessAgent's secret-named `env` (trialrun.toml's `[agent_options] env`) feed, also
  URL-encoded and (`user:password`) as Basic base64; plus `extra` values given to one call. A registered value
  shorter than `MIN_REGISTERED` characters is not scrubbed (it would redact ordinary words): `add_secret` warns
  once per source and says so.

Redactions never cut a JSON escape in two, so scrubbed JSON stays valid. A streamed body is scrubbed after its
stream is reassembled (a key split across SSE `data:` events is found in the joined deltas and removed from each
piece). It is cheap where there is nothing to do: the patterns are compiled once, the environment is re-read only
when it changed, and text without a candidate is returned as it is.

This package is a face over its parts: `registry` (what is secret: environment names, registered values, credential
headers), `learn` (registering values as a run meets them), `forms` (every way a value is written) and `shapes` (key
shapes), `replace` (finding and replacing in text, bytes and JSON) and `exchanges` (headers, URLs and bodies of HTTP
exchanges).

May import: `_util` and `wire` (for the framing of event streams); it sits below everything that writes.
"""

from __future__ import annotations

from .exchanges import RESPONSE_HEADERS_KEPT, credential_values, scrub_body, scrub_headers, scrub_url
from .learn import add_header_credentials, add_secret
from .registry import (
    MIN_REGISTERED,
    REDACTED,
    SENSITIVE_HEADERS,
    holds_any,
    is_secret_name,
    registered_secrets,
    secret_env_names,
    secrets_version,
    unwatch,
    variants_of,
    watch,
)
from .replace import scrub_bytes, scrub_json, scrub_text

__all__ = [
    "REDACTED",
    "scrub_text",
    "scrub_bytes",
    "scrub_json",
    "scrub_body",
    "scrub_headers",
    "scrub_url",
    "add_secret",
    "add_header_credentials",
    "registered_secrets",
    "MIN_REGISTERED",
    "secret_env_names",
    "is_secret_name",
    "RESPONSE_HEADERS_KEPT",
    "SENSITIVE_HEADERS",
    "credential_values",
    "secrets_version",
    "watch",
    "unwatch",
    "variants_of",
    "holds_any",
]
