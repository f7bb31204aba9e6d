"""Issue #17 reproductions: shapes outside the rules' own test list, every field that reaches
disk, and the classes documented as kept clean."""
from __future__ import annotations

import base64
import json
import random

import pytest

from lib import redact
from tests.redact import public_corpus, real_text


def _stored(**kw) -> str:
    return public_corpus.stored(kw)


# -- recall on the public corpus (gitleaks-derived, committed) -------------------------------

def test_public_corpus_recall_per_placement():
    rows = public_corpus.committed()
    rng = random.Random(17)
    caught = {p: [0, 0] for p in public_corpus.PLACEMENTS}
    for smp in rows:
        for where, kw in public_corpus.placements(smp["text"], rng):
            ok = not public_corpus.leaked(_stored(**kw), where, smp["secret"])
            caught[where][0] += 1
            caught[where][1] += ok
    # measured 2026-12-01 (bench/redact_corpus.py), all gitleaks families: 0.99 in seven
    # placements, 0.988 in file paths (first round of issue #17: 0.71-0.85; before it:
    # 0.24-0.57). The floor catches a regression (docs/security.md, measured recall).
    for where, (n, c) in caught.items():
        assert c / n >= 0.985, (where, c, n)


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
    # legacy Sourcegraph tokens are any 40 hex digits: caught only under a name that says so
    ("sourcegraph: c6aB8b6DA5a8421F47FD9520f01Cbaf572AFF3d7", "c6aB8b6DA5a8421F47FD9520f01Cbaf572AFF3d7"),
    ('{"sourcegraph_token": "13ac08b61c07affde0aaefadfe070eed66c4cdc5"}', "13ac08b61c07affde0aaefadfe070eed66c4cdc5"),
    ("export SRC_ACCESS_TOKEN=f40dcaaecd0dfc88e4f9d16a5dfddd328a84d7bc", "f40dcaaecd0dfc88e4f9d16a5dfddd328a84d7bc"),
    # NuGet.config values holding quotes and backslashes (gitleaks nuget-config-password)
    ('<add key="Password" value="*i  dX \\>w@j6`0kV"  \t />', "*i  dX \\>w@j6`0kV"),
    ('<add key="ClearTextPassword"\tvalue="bHG]|}0"\\[vjy"\t/>', 'bHG]|}0"\\[vjy'),
    # curl key headers (gitleaks curl-auth-header)
    ('curl\t-H\t\t "X-Key:\t   E=E3.xp@SVH_x"', "E=E3.xp@SVH_x"),
    ("curl -s https://api.example.com -H 'X-Api-Key: 8fJ2kq9LmZ' -d @body.json", "8fJ2kq9LmZ"),
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


# -- second round: gitleaks shapes by rule design, lookalike evasions ------------------------

@pytest.mark.parametrize("text,secret", [
    ("administrator_login_password_prod_eu_west = 'Xk8!q2mP'", "Xk8!q2mP"),  # window after the whole word
    ('"mattermost_token", "dtkuc7au7zdo2a9f9tznf4ssk5"', "dtkuc7au7zdo2a9f9tznf4ssk5"),  # comma beside quotes
    ("kraken_key==x7r6wx04k553acti3zr0awlxw", "x7r6wx04k553acti3zr0awlxw"),  # "==" glued: operator + "="
    ('sentry_token || "811c82d30f7655f70496906f490c026b"', "811c82d30f7655f70496906f490c026b"),
    ('<add key="ClearTextPassword" value="m-$Whm.3^Yt" />', "m-$Whm.3^Yt"),
    ("heroku_api_key: d88ec803-d1e1-4dfe-a7b8-7b90192cf4be/README.md", "d88ec803-d1e1-4dfe-a7b8-7b90192cf4be"),
    ("curl --user 'deploy:Hx9!pw2z' -X POST", "Hx9!pw2z"),
    ('{"command": "curl\\t-u\\t\\"ci:T0k3n-9xQ\\" example.org"}', "T0k3n-9xQ"),
    ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ndata:\n  pw: cGFzc3dvcmQxMjM=\n", "cGFzc3dvcmQxMjM="),
    ("token=971475230448723|ghg8jql41eolulehjc5scx5wf95e76yt", "ghg8jql41eolulehjc5scx5wf95e76yt"),
    ("SG." + "v2psk=wxwfkwmwvtw3ehhh0=i=p5vh.9_-_no=s5u9r5wp.n1za-lhxtm8bgolp.85", "wxwfkwmwvtw3ehhh0"),
    ("uo46qtzaghevd7.atlasv1.9arfp8_u21an=lpfguc-a0klk_ps8j_1m0hulyp68_b=jcjc0dgl0kr3keeg_", "9arfp8_u21an"),
    ("oc login --token=sha256~C2bAJCdjCXVF92zHzrBMbhQcONTxgDkY8vvZ_izwTUu", "C2bAJCdjCXVF92zHzrBMbhQcONTxgDkY8vvZ_izwTUu"),
    ("HF_TOKEN is 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", "zxbytftwgjfjeuntzuejusektacufkgfrb"),
    ("grafana: glc_/xhP2Aw1dpmxfCLJD+8blU2MyaZu53DVcpN", "xhP2Aw1dpmxfCLJD"),
    ("curl -H 'Authorization: hNflqwlCFf' https://api", "hNflqwlCFf"),
])
def test_gitleaks_shapes_by_rule_design(text, secret):
    for tool in (False, True):
        assert secret not in redact.scrub(text, tool)[0], (text, tool)


@pytest.mark.parametrize("text,secret", [
    ("p\u0430ssword = Sup3rS3cret!", "Sup3rS3cret!"),                  # Cyrillic a
    ("\u0410PI_K\u0415Y=a8f3k2j4h5g6d7s8a9", "a8f3k2j4h5g6d7s8a9"),      # Cyrillic A and E
    ("\u03c4oken: Zq8vR3tYw0pL2mN5", "Zq8vR3tYw0pL2mN5"),               # Greek tau
    ("\uff50\uff41\uff53\uff53\uff57\uff4f\uff52\uff44=Sup3rS3cret!", "Sup3rS3cret!"),  # fullwidth
    ("pass\u200bword: Sup3rS3cret!", "Sup3rS3cret!"),                  # zero-width space
    ("se\u00adcret_key = 'Xk8q2mPz9w'", "Xk8q2mPz9w"),                 # soft hyphen
    ("Authorizati\u043en: Bearer abcDEF123456ghiJKL", "abcDEF123456ghiJKL"),
])
def test_lookalike_keywords_are_folded_before_matching(text, secret):
    for tool in (False, True):
        out, oc = redact.scrub(text, tool)
        assert secret not in out and oc.status == "quarantined" and "confusable_text" in oc.rules, (text, out)
    # the fold itself: NFKC and confusables.txt lookalikes give the ASCII keyword back
    assert redact.fold_confusables(text).isascii()


@pytest.mark.parametrize("text", [
    "Привет, мир: это обычный текст про пароли, токены и ключи доступа.",
    "Η κρυπτογράφηση: ο κωδικός πρόσβασης δεν αποθηκεύεται ποτέ.",
    "   346\u2192      assert tool_use_line.thread_key == \"toolu_123\"",
    "ｆｕｌｌｗｉｄｔｈ ｔｅｘｔ ｗｉｔｈｏｕｔ ａ ｓｅｃｒｅｔ",
    "Ünïcödé ïdéntïfïèrs: café_menu = 'crème brûlée'",
])
def test_non_latin_text_without_a_secret_stays_clean(text):
    for tool in (False, True):
        assert redact.scrub(text, tool) == (text, redact.CLEAN)


# -- session 3: keyword-anchored shapes the corpus missed ------------------------------------

@pytest.mark.parametrize("text", [
    "commit 13ac08b61c07af1de0a4ef2dfe070eed66c4cdc5 (HEAD -> main)",  # a bare SHA is not a token
    "src/sourcegraph/README.md",
    'curl -H "X-Api-Key: $API_KEY" https://api.example.com',
    'curl -H "Accept: application/json" -H "Token: <your-token>" https://x',
    '<add key="Password" value="$(NuGetPassword)" />',
])
def test_keyword_anchored_shapes_leave_references_clean(text):
    assert redact.scrub(text, True)[1].status == "clean", text


@pytest.mark.parametrize("text", ["-ghp_R8x2mQ7vL4nT9kW1pZ6cY3bH5sJ0dF8gA2eU",
                                  "/x/-ghp_R8x2mQ7vL4nT9kW1pZ6cY3bH5sJ0dF8gA2eU/y",
                                  " -ghp_R8x2mQ7vL4nT9kW1pZ6cY3bH5sJ0dF8gA2eU",
                                  "_ghp_R8x2mQ7vL4nT9kW1pZ6cY3bH5sJ0dF8gA2eU",
                                  "/home/u/.claude/projects/-AKIAQWERTYUIOPASDFGH-x/s.jsonl"])
@pytest.mark.parametrize("tool", [False, True])
def test_a_marker_right_after_a_leading_separator_is_found(text, tool):
    """The red team's R1 (issue #17 "a marker preceded by - or _"): a token run
    that starts with the separator (a cwd slug, a path segment) hid the marker from every field
    scrubbed without the entropy rule (``repo``, ``cwd``, the ``.done`` marker's path)."""
    out, oc = redact.scrub(text, tool)
    assert oc.status == "quarantined" and "R8x2mQ7vL4nT9kW1" not in out and "QWERTYUIOP" not in out, (out, oc)
