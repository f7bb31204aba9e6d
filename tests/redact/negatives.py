"""Hard negatives: text that looks secret-ish but is not, and must come out of ``scrub`` unchanged.

``MUST_STAY_CLEAN`` is docs/security.md, Redaction's tested false-positive list (plus docs/design.md §7's
"git SHAs, ULIDs, UUIDs, paths and ordinary prose"). :func:`hard_negatives` generates, with a
seeded RNG, the categories the redactor trades recall against: lock-file hashes, image payloads,
minified JS, ids, long paths, test names, placeholder assignments. Each item is scanned as tool
output (the strictest mode: the entropy rule applies).
"""
from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

MUST_STAY_CLEAN = [
    "commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed it",
    "Merge 3e1f2a7b4c5d6e7f8091a2b3c4d5e6f708192a3b into 0123456789abcdef0123456789abcdef01234567",
    "event 01HZX3K9Q7V5W2N8M4R6T1Y0PB spooled",
    "crates/ctxlake-core/src/redact/mod.rs:214: fn scrub_tool_output_keeps_git_shas()",
    "cargo test -p ctxlake-core redact::tests::prose_is_clean -- --nocapture",
    "order #100234567 shipped; invoice INV-2024-000123",
    "created_at_ms=1718203123456 updated 1718203999999",
    "call 415-555-0134 or (415) 555-0199",
    "zip 94107-1234",
    "900-45-6789 is not a valid SSN (area 9xx)",
    "DATABASE_URL=postgres://db.internal:5432/prod",
    "the API wants a Bearer token in the Authorization header",
    "let hf_size = 32;",
    "npm_config_prefix=/usr/local",
    "see MSG.txt and SG.md for details",
    "https://github.com/anthropics/claude-code/pull/1234#issuecomment-1987654321",
    "bump version 1.2.3 -> 1.2.4 (chore: release)",
    "uuid 123e4567-e89b-12d3-a456-426614174000 created",
    "The quick brown fox jumps over the lazy dog; ordinary prose stays as it is.",
    "GOOGLE_APPLICATION_CREDENTIALS=/etc/gcp/service-account.json",
    "export ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY",
    'os.environ["OPENAI_API_KEY"]',
    "password = os.environ.get('DB_PASSWORD')",
    "password: ${{ secrets.DB_PASSWORD }}",
    "PGPASSWORD=your_password_here psql -h localhost",
    "headers = {'Authorization': f'Bearer {token}'}",
    "Authorization: Bearer <your-token>",
    "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com/user",
    "aws sts get-caller-identity -> UserId AROAEXAMPLEID123456789:session",
    "task-runner disk-usage risk-assessment",
    "bypass=true compass: north",
    "git push -u origin main && docker run -u 1000:1000 img",
    "the sk- prefix marks OpenAI keys; ghp_ marks GitHub PATs; AKIA marks AWS key ids",
    "-----BEGIN CERTIFICATE-----",
    "PRIVATE KEY handling is described in docs/keys.md",
]


def _r(rng, alphabet, n):
    return "".join(rng.choice(alphabet) for _ in range(n))


def _ulid(rng) -> str:
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return rng.choice("01") + _r(rng, alphabet, 25)


_WORDS = ("user session token cache snapshot claim lease spool store fleet agent redact envelope "
          "handler request response config parser render briefing compact digest promote gate "
          "quarantine schema builder writer reader upload segment rotate watermark").split()


def hard_negatives(seed: int = 0, n: int = 40) -> dict[str, list[str]]:
    """Category → ``n`` generated negative texts (deterministic for ``seed``)."""
    rng = random.Random(f"negatives:{seed}")
    out: dict[str, list[str]] = {}

    def gen(name, fn):
        out[name] = [fn() for _ in range(n)]

    gen("git_sha", lambda: f"{_r(rng, '0123456789abcdef', 40)} {rng.choice(_WORDS)}: {rng.choice(_WORDS)}")
    gen("ulid", lambda: f"event_id={_ulid(rng)} session={_ulid(rng)}-{_ulid(rng)}")
    gen("uuid", lambda: f'{{"id": "{uuid.UUID(int=rng.getrandbits(128), version=4)}", '
                        f'"parent": "{uuid.UUID(int=rng.getrandbits(128), version=4)}"}}')
    gen("anthropic_ids", lambda: json.dumps({"type": "tool_result", "tool_use_id": "toolu_01" + _r(rng, string.ascii_letters + string.digits, 22),
                                             "message": "agent_msg_01" + _r(rng, string.ascii_letters + string.digits, 22),
                                             "path": f"/home/u/.claude/projects/-home-u-x/{uuid.UUID(int=rng.getrandbits(128))}/tool-results/toolu_01{_r(rng, string.ascii_letters + string.digits, 22)}.txt"}))

    def image():
        png = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + rng.randbytes(rng.choice([300, 3000]))
        return f'<img src="data:image/png;base64,{base64.b64encode(png).decode()}" alt="thumb"/>'
    gen("image_data_uri", image)
    gen("image_base64_raw", lambda: json.dumps({"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                                                "data": base64.b64encode(b"\xff\xd8\xff\xe0" + rng.randbytes(900)).decode()}}))

    def npm_lock():
        name = rng.choice(_WORDS) + "-" + rng.choice(_WORDS)
        return (f'"node_modules/{name}": {{"version": "1.{rng.randrange(30)}.{rng.randrange(9)}", '
                f'"resolved": "https://registry.npmjs.org/{name}/-/{name}-1.2.3.tgz", '
                f'"integrity": "sha512-{base64.b64encode(rng.randbytes(64)).decode()}"}}')
    gen("package_lock", npm_lock)
    gen("yarn_lock", lambda: f'  resolved "https://registry.yarnpkg.com/x/-/x-1.0.0.tgz#{_r(rng, "0123456789abcdef", 40)}"\n'
                             f'  integrity sha1-{base64.b64encode(rng.randbytes(20)).decode()}')
    gen("cargo_lock", lambda: f'[[package]]\nname = "{rng.choice(_WORDS)}"\nversion = "0.4.{rng.randrange(20)}"\n'
                              f'source = "registry+https://github.com/rust-lang/crates.io-index"\n'
                              f'checksum = "{hashlib.sha256(rng.randbytes(8)).hexdigest()}"')
    gen("poetry_lock", lambda: f'    {{file = "{rng.choice(_WORDS)}-2.31.0-py3-none-any.whl", hash = "sha256:{hashlib.sha256(rng.randbytes(8)).hexdigest()}"}},')
    gen("go_sum", lambda: f"github.com/{rng.choice(_WORDS)}/{rng.choice(_WORDS)} v1.{rng.randrange(20)}.0 "
                          f"h1:{base64.b64encode(rng.randbytes(32)).decode()}")
    gen("wheel_record", lambda: f"ctxlake/{rng.choice(_WORDS)}.py,sha256={base64.urlsafe_b64encode(rng.randbytes(32)).rstrip(b'=').decode()},{rng.randrange(99999)}")
    gen("sri_hash", lambda: f'<script src="https://cdn.example.com/lib.min.js" integrity="sha384-{base64.b64encode(rng.randbytes(48)).decode()}" crossorigin="anonymous"></script>')

    def minified():
        ids = [_r(rng, string.ascii_letters, rng.randrange(1, 3)) for _ in range(12)]
        return ("!function(e,t){\"object\"==typeof exports&&\"undefined\"!=typeof module?module.exports=t():"
                f"\"function\"==typeof define&&define.amd?define(t):(e=e||self).{ids[0]}=t()}}(this,function(){{"
                f"var {ids[1]}=\"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=\";"
                f"function {ids[2]}({ids[3]},{ids[4]}){{return {ids[3]}.charCodeAt({ids[4]})&255}}"
                f"var {ids[5]}=[{','.join(str(rng.randrange(1 << 16)) for _ in range(8))}];"
                f"return{{encode:function({ids[6]}){{for(var {ids[7]}=0;{ids[7]}<{ids[6]}.length;{ids[7]}++)}}}}}});"
                f"//# sourceMappingURL=lib.{_r(rng, '0123456789abcdef', 8)}.min.js.map")
    gen("minified_js", minified)
    gen("css_hash_classes", lambda: f'<div class="{" ".join("css-" + _r(rng, string.ascii_lowercase + string.digits, 6) for _ in range(5))} '
                                    f'tw-bg-blue-500 hover:tw-bg-blue-700">')

    def long_path():
        parts = [rng.choice(_WORDS) + rng.choice(["", "_" + rng.choice(_WORDS), "-" + rng.choice(_WORDS)]) for _ in range(rng.randrange(6, 12))]
        return "/home/dev/projects/" + "/".join(parts) + rng.choice([".py", ".rs", "", "/mod.rs"])
    gen("long_path", long_path)
    gen("node_modules_path", lambda: f"node_modules/.pnpm/{rng.choice(_WORDS)}-{rng.choice(_WORDS)}@1.{rng.randrange(9)}.0_{_r(rng, '0123456789abcdef', 32)}/node_modules/{rng.choice(_WORDS)}-{rng.choice(_WORDS)}-{rng.choice(_WORDS)}/package")
    gen("rust_target", lambda: f"target/debug/deps/{rng.choice(_WORDS)}_{rng.choice(_WORDS)}-{_r(rng, '0123456789abcdef', 16)}")

    def test_name():
        words = [rng.choice(_WORDS) for _ in range(rng.randrange(5, 10))]
        return f"tests/{words[0]}/test_{words[1]}.py::test_{'_'.join(words)} PASSED"
    gen("test_name", test_name)
    gen("camel_identifier", lambda: "".join(w.capitalize() for w in rng.sample(_WORDS, 6)) + "Factory")

    def prose():
        return " ".join(rng.choice(_WORDS) for _ in range(20)).capitalize() + "."
    gen("prose", prose)
    gen("placeholder_env", lambda: rng.choice([
        "API_KEY=your-api-key-here", "client_secret: <CLIENT_SECRET>", "password=********",
        "AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY}", "token: xxxxxxxxxxxxxxxxxxxx",
        "DB_PASSWORD=changeme", "password: \"{{ vault_db_password }}\"", "SECRET_KEY=replace-me-in-production"]))
    gen("numbers", lambda: f"latency_ns={rng.randrange(10 ** 15, 10 ** 18)} ts_ms=17{rng.randrange(10 ** 10, 10 ** 11)} "
                           f"snowflake=1{rng.randrange(10 ** 17, 10 ** 18)}")
    return out
