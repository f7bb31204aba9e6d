"""Issue #17 reproductions: shapes outside the rules' own test list, every field that reaches
disk, and the classes documented as kept clean."""
from __future__ import annotations

import base64
import json
import random

import pytest

from lib import redact
from lib.envelope import Builder
from tests.redact import public_corpus, real_text


def _stored(**kw) -> str:
    b = Builder(fleet_id="f", agent_id="a", runtime="claude_code", session_id="s")
    env = b.make(kw.pop("event_type"), **kw)
    return json.dumps([env, b.quarantine], ensure_ascii=False)


# -- recall on the public corpus (gitleaks-derived, committed) -------------------------------

def test_public_corpus_recall_per_placement_tuned_and_held_out():
    rows = public_corpus.committed()
    rng = random.Random(17)
    caught = {p: [0, 0] for p in public_corpus.PLACEMENTS}
    held = [0, 0]
    for smp in rows:
        for where, kw in public_corpus.placements(smp["text"], rng):
            ok = not public_corpus.leaked(_stored(**kw), where, smp["secret"])
            row = held if smp["held_out"] else caught[where]
            row[0] += 1
            row[1] += ok
    # measured 2026-12-01 (bench/redact_corpus.py), tuned families: 0.90-0.96 per placement
    # (before issue #17: 0.22-0.57); held-out families: 0.47 overall (before: 0.47). The
    # floors below catch a regression; the target (0.99) is not met yet (docs/security.md).
    for where, (n, c) in caught.items():
        assert c / n >= 0.88, (where, c, n)
    assert held[1] / held[0] >= 0.42, held


# -- shapes the issue lists ------------------------------------------------------------------

ENV_NAMES = ["API_KEY", "AUTH_TOKEN", "ACCESS_TOKEN", "SECRET", "TOKEN", "JWT_SECRET", "VAULT_TOKEN", "HF_TOKEN",
             "GH_TOKEN", "DB_PASSWORD", "STRIPE_SECRET", "CLIENT_SECRET"]


@pytest.mark.parametrize("name", ENV_NAMES)
@pytest.mark.parametrize("value", ["x7Kq2mPz9", "a1b2c3d4e5f6", "Zq8_vR-3tY.w0"])
def test_env_and_printenv_lines_with_short_values(name, value):
    for text, tool in ((f"{name}={value}", False), (f"HOME=/root\n{name}={value}\nPATH=/usr/bin", True),
                       (json.dumps({"stdout": f"HOME=/root\n{name}={value}\n"}), True), (f"export {name}='{value}'", False)):
        assert value not in redact.scrub(text, tool)[0], text


@pytest.mark.parametrize("text,secret", [
    ("Driver={ODBC Driver 18};Server=db;Uid=sa;PWD=S3cr3t!x;Encrypt=yes", "S3cr3t!x"),
    ("Server=tcp:db,1433;User ID=app;Password=Tr0ub4dor&3;", "Tr0ub4dor&3"),
    ("postgres://app:pa#ss9word@db:5432/app", "pa#ss9word"),
    ("redis://:*Xk82mQ9@cache:6379/0", "*Xk82mQ9"),
    ('{"stdout":"ok\\nPASSWORD=hunter2x\\nUSER=bob"}', "hunter2x"),
    ('heroku_api_key = "8cf1b045-1234-4abc-9def-0123456789ab"', "8cf1b045-1234-4abc-9def-0123456789ab"),
    ("DD_API_KEY=0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
    ('{"token": "dqow92celau05bt51ybf5zuycs"}', "dqow92celau05bt51ybf5zuycs"),
    ("SECRET_TOKEN=ab.cd~ef=gh12ij34kl", "ab.cd~ef=gh12ij34kl"),
])
def test_context_identified_values_in_prose_and_tool_output(text, secret):
    for tool in (False, True):
        assert secret not in redact.scrub(text, tool)[0], (text, tool)


MARKED = ["AKIAQWERTYUIOPASDFGH", "ghp_" + "aB3" * 12, "glpat-" + "xY9_" * 5, "sk-proj-" + "Qw8e" * 10]


@pytest.mark.parametrize("secret", MARKED)
@pytest.mark.parametrize("glue", ["key-", "prod_", "token_", "=", ":", "/", '"', "'", "%3D"])
def test_markers_wherever_they_sit_in_a_token(secret, glue):
    text = f"value {glue}{secret} end"
    for tool in (False, True):
        assert secret not in redact.scrub(text, tool)[0], text
    out, oc = redact.scrub_deep({"args": {"note": f"{glue}{secret}"}})
    assert secret not in json.dumps(out) and oc


def test_aws_key_id_with_characters_outside_base32_in_a_prompt():
    assert redact.scrub("my key is AKIA0189ABCDEFGH1890")[1].status == "quarantined"


# -- every field that reaches disk -----------------------------------------------------------

def test_paths_ids_and_names_get_the_same_rules_as_tool_text():
    tok = "Zx9Qw3Er7Ty1Ui5Op0AsDf2GhJk4LzXc"
    stored = _stored(event_type="tool_call", message_id=f"toolu_{tok}", turn_id=f"turn-{tok}",
                     tool={"name": f"mcp__x__{tok}", "input": {"file_path": f"/tmp/{tok}/a.txt"},
                           "paths": [f"/tmp/{tok}/a.txt", "/home/dev/app/pbkdf2.py"]})
    assert tok not in stored
    assert "/home/dev/app/pbkdf2.py" in stored


def test_the_done_marker_holds_no_secret(tmp_path, monkeypatch):
    import os
    import subprocess
    import sys

    from tests.conftest import ROOT

    home = str(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CTXLAKE_")}
    env.update(CTXLAKE_HOME=home, CTXLAKE_CONFIG=os.path.join(home, "none.toml"), CTXLAKE_FLEET_ID="f",
               CTXLAKE_AGENT_ID="a", CTXLAKE_HOOK_SYNC="1", PYTHONPATH=ROOT)
    tok = "ghp_" + "Qw8e" * 9
    for p in ({"hook_event_name": "SessionStart", "session_id": "s1", "source": "startup", "cwd": home},
              {"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "exit", "cwd": home,
               "transcript_path": f"/home/dev/.claude/projects/{tok}/s1.jsonl"}):
        subprocess.run([sys.executable, "-I", "-S", "hook.py", "claude_code"], cwd=ROOT, env=env,
                       input=json.dumps(p).encode(), check=True, capture_output=True)
    found = []
    for root, _, names in os.walk(home):
        for n in names:
            with open(os.path.join(root, n), "rb") as fh:
                data = fh.read()
            if n.endswith(".done"):
                found.append(data)
            assert tok.encode() not in data, n
    assert found, "no .done marker written"


# -- kept clean (documented) -----------------------------------------------------------------

def _unchanged(text):
    out, oc = redact.scrub(text, is_tool_output=True)
    return out == text


def test_every_ca_certificate_of_certifi_stays_byte_for_byte():
    pems = real_text.ca_certificates()
    assert len(pems) >= 100
    assert [p[:80] for p in pems if not _unchanged(p)] == []
    bundle = "".join(pems[:20])
    assert _unchanged(json.dumps({"stdout": bundle}))  # JSON-escaped, as a tool result stores it


def test_ssh_public_keys_stay():
    keys = real_text.ssh_public_keys(10)
    assert [k[:60] for k in keys if not _unchanged(k)] == []


def test_base64_images_wrapped_and_one_line_and_svg_stay():
    imgs = real_text.image_base64(30)
    assert imgs, "no installed image to test with"
    assert [label for label, t in imgs if not _unchanged(t)] == []
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><path d="M12 2L2 7l10 5 10-5-10-5z"/></svg>'
    for enc in (base64.encodebytes(svg * 6).decode(), base64.b64encode(svg * 6).decode(),
                base64.encodebytes(b'<?xml version="1.0"?>' + svg * 4).decode()):
        assert _unchanged(enc), enc[:40]


def test_base64_of_text_holding_a_secret_is_redacted():
    conf = b"# app\nregion=eu-west-1\nAPI_TOKEN=Xy12ab34Qz9\nretries=3\n" * 3
    for enc in (base64.encodebytes(conf).decode(), base64.b64encode(conf).decode()):
        assert not _unchanged(enc)


@pytest.mark.parametrize("path", [
    "/usr/lib/python3/site-packages/cryptography/hazmat/primitives/kdf/pbkdf2.py",
    "src/golang.org/x/sys/unix/zsysctl_openbsd_386.go", "botocore/data/connectscheduling/2026-07-16/paginators-1.json",
    "node_modules/@esbuild/linux-x64/bin/esbuild"])
def test_paths_stay(path):
    assert _unchanged(path) and _unchanged(f"Read {path}\n") and _unchanged(json.dumps({"file_path": path}))


def test_checksums_and_uuids_without_a_keyword_stay():
    lines = real_text.checksums_uuids_paths(300)
    assert [ln for ln in lines if not _unchanged(ln)] == []
