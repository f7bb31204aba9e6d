"""Path denylist and placement in lib/envelope.Builder (docs/design.md §5, §7; reference bugs 12.2
#6 and #8)."""
from __future__ import annotations

import json

import pytest

from lib import redact
from lib.envelope import Builder, dumps
from tests.redact import secrets_corpus

AWS_CREDS = ("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
             "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")


@pytest.mark.parametrize("path", [
    "~/.aws/credentials", "/home/u/.aws/config", "C:\\Users\\u\\.aws\\credentials", ".aws/credentials",
    "/home/u/.ssh/id_ed25519", "/home/u/.ssh/id_rsa.pub", "/root/.netrc", "/home/u/.npmrc", "/home/u/.pypirc",
    "/home/u/.docker/config.json", "/home/u/.kube/config", "/srv/app/secrets/db.yaml", "/etc/vault/token",
    "/repo/.env", "/repo/.env.local", "/repo/.env.production", "/repo/.env.example", "/repo/.envrc", ".env",
    "/home/u/.git-credentials", "/home/u/.config/gh/hosts.yml", "/home/u/.config/gcloud/application_default_credentials.json",
    "/home/u/.azure/accessTokens.json", "/home/u/.gnupg/private-keys-v1.d/x.key", "/infra/terraform.tfstate",
    "/infra/prod.tfstate.backup", "/certs/server.pem", "/certs/server.KEY", "/certs/client.p12", "/certs/a.pfx",
    "/app/keystore.jks", "/home/u/.pgpass", "/home/u/.my.cnf", "/home/u/.s3cfg", "/home/u/.vault-token",
    "/home/u/.cargo/credentials.toml", "/home/u/.password-store/x.gpg", "/etc/shadow", "/srv/.htpasswd",
    "/home/u/.hermes/.env",
])
def test_denied_paths(path):
    assert redact.denied_path([path]) == path.replace("\\", "/")


@pytest.mark.parametrize("path", [
    "/repo/src/environment.ts", "/repo/.envoy/config.yaml", "/repo/docs/keys.md", "/repo/src/keyboard.rs",
    "/home/u/.ssh/config", "/home/u/.ssh/known_hosts", "/repo/lib/redact.py", "/repo/README.md",
    "/repo/src/pem_parser.rs", "/repo/tests/test_env.py",
])
def test_allowed_paths(path):
    assert redact.denied_path([path]) is None


def test_denied_path_returns_first_hit_and_accepts_nothing():
    assert redact.denied_path(["/a.py", "/b/.env", "/c.pem"]) == "/b/.env"
    assert redact.denied_path(None) is None and redact.denied_path([]) is None


@pytest.mark.parametrize("cmd,hit", [
    ("cat ~/.aws/credentials", "~/.aws/credentials"),
    ("source .env && npm start", ".env"),
    ("docker run --env-file=.env.prod app", ".env.prod"),
    ("echo 'KEY=x' >> /repo/.env.local", "/repo/.env.local"),
    ("openssl rsa -in server.key -text", "server.key"),
    ("ls -la", None), ("git status", None), ("pytest tests/redact -q", None), ("cat README.md", None),
])
def test_denied_in_command(cmd, hit):
    assert redact.denied_in_command(cmd) == hit


def _builder():
    return Builder(fleet_id="f", agent_id="a", runtime="claude_code", session_id="s")


def test_write_to_aws_credentials_never_carries_the_secret_in_tool_input():
    """Reference bug 12.2 #8: the denylist was applied only to results, so a Write to
    ~/.aws/credentials leaked through tool.input while status said quarantined."""
    b = _builder()
    env = b.make("tool_call", message_id="toolu_1", tool={
        "name": "Write", "input": {"file_path": "/home/u/.aws/credentials", "content": AWS_CREDS},
        "result": {"type": "create", "filePath": "/home/u/.aws/credentials", "content": AWS_CREDS},
        "paths": ["/home/u/.aws/credentials"]})
    line = dumps(env)
    for needle in ("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI", "bPxRfiCYEXAMPLEKEY"):
        assert needle not in line
    assert env["tool"]["input"] == "[ctxlake: withheld, denied path /home/u/.aws/credentials]"
    assert env["tool"]["result"] == env["tool"]["input"]
    assert env["redaction"] == {"status": "quarantined", "rules_fired": ["denied_path"]}
    assert [q["field"] for q in b.quarantine] == ["tool.input", "tool.result"]


def test_bash_reading_a_credential_file_withholds_both_sides():
    b = _builder()
    env = b.make("tool_call", tool={"name": "Bash", "input": {"command": "cat .env"},
                                    "result": "DB_PASSWORD=hunter2\nSTRIPE=sk_live_" + "a1B2" * 6})
    assert "hunter2" not in dumps(env) and "sk_live_" not in dumps(env)
    assert env["tool"]["result"].startswith("[ctxlake: withheld, denied path .env]")
    assert env["redaction"]["status"] == "quarantined"


def test_quarantine_records_carry_rules_field_hash_and_event_id_never_the_value():
    b = _builder()
    secrets = secrets_corpus.SECRETS[:10]
    prompt = "please use these: " + " ".join(secrets)
    env = b.make("prompt", content=prompt, role="user", event_id="01HZX3K9Q7V5W2N8M4R6T1Y0PB")
    assert env["redaction"]["status"] == "quarantined"
    (rec,) = b.quarantine
    assert set(rec) == {"fleet_id", "agent_id", "session_id", "event_id", "field", "rules_fired", "sha256", "recorded_at"}
    assert rec["event_id"] == "01HZX3K9Q7V5W2N8M4R6T1Y0PB" and rec["field"] == "content"
    assert rec["rules_fired"] and rec["sha256"].startswith("sha256:")
    blob = json.dumps(rec) + dumps(env)
    for s in secrets:
        assert s not in blob


def test_builder_scrubs_content_input_and_result_with_the_right_modes():
    b = _builder()
    tok = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    env = b.make("tool_call", content=f"prose {tok}", tool={
        "name": "Bash", "input": {"command": f"echo {tok}"}, "result": f"{tok}\npostgres://u:hunter22@h/x"})
    # issue #17: prose gets the entropy rule too (a key pasted in a prompt would become the
    # digest's summary line in every agent's briefing)
    assert env["content"] == "prose [ctxlake:redacted-secret]"
    assert tok not in env["tool"]["input"] and tok not in env["tool"]["result"]
    assert "hunter22" not in env["tool"]["result"]
    assert env["redaction"] == {"status": "redacted", "rules_fired": ["high_entropy_run", "uri_credentials"]}
    assert b.quarantine == []


@pytest.mark.parametrize("secret", secrets_corpus.SECRETS)
def test_every_corpus_secret_is_kept_out_of_the_envelope(secret):
    b = _builder()
    for kwargs in ({"content": secret, "role": "user"},
                   {"tool": {"name": "Bash", "input": {"command": f"echo '{secret}'"}, "result": secret}}):
        env = b.make("prompt" if "content" in kwargs else "tool_call", **kwargs)
        line = dumps(env)
        assert secret not in line
        assert json.dumps(secret)[1:-1] not in line  # nor in its JSON-escaped form


def test_context_cases_are_kept_out_of_the_envelope():
    b = _builder()
    for case in secrets_corpus.CONTEXT_CASES:
        if case.field == "tool":
            env = b.make("tool_call", tool={"name": "Read", "input": {"file_path": "/tmp/x"}, "result": case.text})
        else:
            env = b.make("prompt", content=case.text, role="user")
        assert case.secret not in dumps(env), case.text


def test_corpus_has_at_least_thirty_distinct_formats():
    assert len(secrets_corpus.SECRETS) >= 30
    assert len(set(secrets_corpus.SECRETS)) == len(secrets_corpus.SECRETS)
    prefixes = {s[:4] for s in secrets_corpus.SECRETS}
    assert len(prefixes) >= 30


def test_metadata_fields_and_paths_are_scrubbed_too():
    """Redaction covers every free-text field of the envelope, not only content and tool
    values: a git remote with a token, a path naming a token."""
    b = _builder()
    token = "ghs_" + "a1B2" * 9
    env = b.make("tool_call", repo=f"https://x-access-token:{token}@github.com/o/r.git", cwd="/srv/repo",
                 branch="main", tool={"name": "Read", "input": {"file_path": f"/tmp/{token}.txt"},
                                      "paths": [f"/tmp/{token}.txt", "/srv/repo/README.md"]})
    line = dumps(env)
    assert token not in line
    assert env["cwd"] == "/srv/repo" and env["branch"] == "main"
    assert env["tool"]["paths"][1] == "/srv/repo/README.md"
    assert {q["field"] for q in b.quarantine} >= {"repo", "tool.paths", "tool.input"}


def test_denied_path_placeholder_does_not_repeat_a_secret_in_the_path():
    token = "ghp_" + "a1B2" * 9
    env = _builder().make("tool_call", tool={"name": "Read", "input": {"file_path": f"/s/{token}.pem"},
                                             "result": "-----BEGIN", "paths": [f"/s/{token}.pem"]})
    assert token not in dumps(env)
