"""``ctxlake doctor``: probe what the configured store can really do (docs/design.md §8).

Where it sits: an operator command, run before trusting a store with a fleet. It exercises each
primitive the planes rely on (invariants 3 and 4) under a per-caller scratch prefix
``_meta/probe/<caller>/<run>/`` (docs/design.md §4) and reports, per capability, whether it works and
what its absence costs — a store that silently ignores ``If-None-Match`` or ``If-Match`` still
"works" for plain reads and writes, which is exactly what this command exists to catch.

Probe order: write + read back → create-only (twice: the second must lose) → CAS with the
current ETag → CAS with a stale ETag (must lose) → :data:`REPEAT_ROUNDS` more rounds of both
(:func:`lib.live.leases.probe_round`, the probe syncd and maint run) → conditional GET (must answer "not
modified") → list → delete. Scratch keys are deleted afterwards even when a step fails or
raises; leftovers of this caller older than an hour (crashed runs) are swept too.

It refuses to: print or log any credential (only boto3's provider *name*, invariant 11), or
judge the store by this host's clock (skew is reported, never used).

Exit code (:func:`exit_code`): non-zero when the store cannot be written and read back, or when
it does not honour conditional writes (leases, roster and the maintenance lease are refused
there); other missing guarantees are reported with their cost but do not fail the command.
"""
from __future__ import annotations

import json
import secrets
import sys
import time
import urllib.parse

from lib.keys import probe_prefix
from lib.sanitize import mask_url
from lib.store import CREATE, NotFound, PreconditionFailed, open_store, update

REPEAT_ROUNDS = 5
"""Extra rounds of :func:`lib.live.leases.probe_round` (a store that drops conditions only sometimes)."""
LEASE_CHECKS = ("create_only", "cas_update", "cas_stale", "cas_repeat")
"""Capabilities leases, roster and the maintenance lease need: any failed one fails the command."""
STALE_PROBE_SECS = 3600
"""Scratch keys of this caller older than this (store clock) are leftovers of a crashed run."""

CHECKS = (
    ("write_read", "write + read back",
     "nothing can be shipped: sessions stay in the spool, no live plane, no shared memory"),
    ("create_only", "create-only (If-None-Match: *)",
     "no create-only: bootstrap races possible; two agents may both think they created a lease, and "
     "a replayed session segment or claim event may overwrite another"),
    ("cas_update", "CAS with the current ETag (If-Match)",
     "no CAS: leases, roster and the snapshot pointer cannot be updated safely"),
    ("cas_stale", "CAS with a stale ETag is refused",
     "stale CAS accepted: leases and roster are unsafe; concurrent updates silently overwrite each "
     "other, two agents can hold one lease, a second maint is not excluded"),
    ("cas_repeat", "conditional writes honoured on every repeat",
     "conditions honoured only sometimes: leases, roster and the maintenance lease are refused "
     "(a lease could be granted twice whenever the store drops a condition)"),
    ("conditional_get", "conditional GET (304 Not Modified)",
     "no conditional GET: syncd re-downloads roster, leases and the snapshot pointer on every poll "
     "(bandwidth and request cost only; still correct)"),
    ("list", "list a prefix",
     "no list: the roster cannot be rebuilt from heartbeats and maint cannot find sealed sessions"),
    ("delete", "delete (and delete of a missing key)",
     "no delete: probe scratch, old heartbeats and replaced compacted generations accumulate "
     "(storage cost only)"),
)
_COST = {name: cost for name, _, cost in CHECKS}
_TITLE = {name: title for name, title, _ in CHECKS}


def identify(endpoint: str | None, server: str | None, backend: str = "s3") -> str:
    """Name the store product from its endpoint URL and ``Server`` response header.

    Returns ``file`` / ``memory`` for those schemes, else one of ``AWS``, ``R2``, ``GCS``,
    ``SeaweedFS``, ``MinIO``, ``Ceph RGW``, ``Garage`` or ``unknown``. Well-known hosts win over
    the header (a CDN in front of R2 still says ``cloudflare``); no endpoint means AWS.

    >>> identify("http://127.0.0.1:8333", "SeaweedFS 8000GB 4.48")
    'SeaweedFS'
    """
    if backend != "s3":
        return backend
    host = (urllib.parse.urlsplit(endpoint).hostname or "").lower() if endpoint else ""
    if not endpoint or host.endswith(".amazonaws.com") or host.endswith(".amazonaws.com.cn"):
        return "AWS"
    if host.endswith(".r2.cloudflarestorage.com"):
        return "R2"
    if host == "storage.googleapis.com" or host.endswith(".storage.googleapis.com"):
        return "GCS"
    s = (server or "").lower()
    for needle, name in (("seaweedfs", "SeaweedFS"), ("minio", "MinIO"), ("amazons3", "AWS"),
                         ("cloudflare", "R2"), ("uploadserver", "GCS"), ("google", "GCS"),
                         ("ceph", "Ceph RGW"), ("rgw", "Ceph RGW"), ("garage", "Garage")):
        if needle in s:
            return name
    return "unknown"


def _describe(store) -> dict:
    describe = getattr(store, "describe", None)
    if describe:
        return describe()
    return {"backend": store.url.split("://", 1)[0], "url": store.url}


def probe(store, caller: str, now=time.time) -> dict:
    """Run every check against ``store`` under ``_meta/probe/<caller>/<run>/`` and clean up.

    :param store: any :class:`lib.store.Store`.
    :param caller: who is probing (agent id or host); percent-encoded into one key segment.
    :param now: this host's clock (epoch s), only for the skew report.
    :returns: ``{"store", "backend", "describe", "credential_source", "clock_skew_s",
        "scratch_prefix", "checks": [{"name", "title", "ok" (True/False/None = not run),
        "detail", "cost" (only when it failed)}], "cleanup": {"ok", "detail"}, "can_write_read",
        "ok"}``. ``clock_skew_s`` = store clock − this host's clock (S3's ``Date`` has 1 s
        resolution), ``None`` when the clock could not be read.
    :raises: nothing from the store — every failure becomes a failed row.
    """
    caller_prefix = probe_prefix(caller)
    run = caller_prefix + f"{int(now())}-{secrets.token_hex(4)}/"
    keys = {"plain": run + "plain.json", "create": run + "create.json", "gone": run + "gone.json"}
    written: set[str] = set()
    checks: dict[str, dict] = {}

    def record(name: str, ok: bool | None, detail: str) -> None:
        row = {"name": name, "title": _TITLE[name], "ok": ok, "detail": detail}
        if ok is False:
            row["cost"] = _COST[name]
        checks[name] = row

    def attempt(name: str, fn) -> None:
        try:
            ok, detail = fn()
        except Exception as exc:  # a diagnostic reports every failure instead of stopping
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        record(name, ok, detail)

    state: dict = {}

    def write_read():
        written.add(keys["plain"])
        payload = b'{"probe": "write_read"}'
        store.put(keys["plain"], payload)
        got = store.get(keys["plain"]).data
        return (got == payload, "wrote and read back identical bytes" if got == payload
                else f"read back {len(got or b'')} bytes that differ from the {len(payload)} written")

    def create_only():
        written.add(keys["create"])
        first = store.put(keys["create"], b'{"v": 1}', CREATE)
        state["v1"] = first.etag
        try:
            second = store.put(keys["create"], b'{"v": "second create"}', CREATE)
        except PreconditionFailed:
            return True, "first create succeeded, second refused with 412"
        state["v1"] = second.etag
        return False, "second create was accepted: the store ignored If-None-Match: *"

    def cas_update():
        current = store.head(keys["create"]).etag
        state["stale"] = current
        v2 = store.put(keys["create"], b'{"v": 2}', update(current))
        state["v2"] = v2.etag
        data = store.get(keys["create"]).data
        return (data == b'{"v": 2}', "update with the current ETag succeeded" if data == b'{"v": 2}'
                else "update reported success but the object did not change")

    def cas_stale():
        try:
            store.put(keys["create"], b'{"v": "stale writer"}', update(state["stale"]))
        except PreconditionFailed:
            return True, "update with a stale ETag refused with 412"
        return False, "update with a stale ETag was accepted: the store ignored If-Match"

    def cas_repeat():
        from lib.live import leases

        written.add(run + "repeat.json")
        for i in range(REPEAT_ROUNDS):
            reason = leases.probe_round(store, run + "repeat.json")
            if reason:
                return False, f"round {i + 1} of {REPEAT_ROUNDS}: {reason}"
        return True, f"{REPEAT_ROUNDS} rounds of create-only and If-Match, each refused what it had to"

    def conditional_get():
        current = store.head(keys["create"]).etag
        got = store.get(keys["create"], if_none_match=current)
        if got.modified is False and got.data is None:
            return True, "GET with the current ETag answered 304 Not Modified"
        return False, "GET with the current ETag returned the whole object: If-None-Match ignored"

    def listing():
        listed = sorted(e.key for e in store.list(run))
        expected = sorted({keys["plain"], keys["create"]} | (written & {run + "repeat.json"}))
        if listed == expected:
            return True, f"listed the {len(listed)} scratch keys"
        return False, f"listed {listed!r}, expected {expected!r}"

    def delete():
        written.add(keys["gone"])
        store.put(keys["gone"], b"{}")
        store.delete(keys["gone"])
        try:
            store.get(keys["gone"])
        except NotFound:
            store.delete(keys["gone"])  # deleting a missing key must not fail
            return True, "deleted; the key reads as missing; deleting it again is not an error"
        return False, "the key still reads back after delete"

    attempt("write_read", write_read)
    if checks["write_read"]["ok"]:
        attempt("create_only", create_only)
        if "v1" in state:
            attempt("cas_update", cas_update)
            if "v2" in state:
                attempt("cas_stale", cas_stale)
            else:
                record("cas_stale", None, "not run: CAS with the current ETag failed")
            attempt("cas_repeat", cas_repeat)
            attempt("conditional_get", conditional_get)
        else:
            for name in ("cas_update", "cas_stale", "cas_repeat", "conditional_get"):
                record(name, None, "not run: could not create the probe object")
        attempt("list", listing)
        attempt("delete", delete)
    else:
        for name, _, _ in CHECKS[1:]:
            record(name, None, "not run: the store cannot be written and read back")

    skew = None
    try:
        t0 = now()
        store_now = store.clock()
        skew = round(store_now - (t0 + now()) / 2, 1)
    except Exception:
        pass

    cleanup = _cleanup(store, run, caller_prefix, written, skew)
    describe = _describe(store)
    cred = getattr(store, "credential_source", None)
    rows = [checks[name] for name, _, _ in CHECKS]
    return {
        "store": store.url,
        "backend": identify(describe.get("endpoint"), describe.get("server"), describe.get("backend", "s3")),
        "describe": describe,
        "credential_source": cred() if cred else None,
        "clock_skew_s": skew,
        "scratch_prefix": caller_prefix,
        "checks": rows,
        "cleanup": cleanup,
        "can_write_read": checks["write_read"]["ok"] is True,
        "ok": all(r["ok"] is True for r in rows),
        "delta_commits": delta_commits(store.url, checks),
    }


def delta_commits(url: str, checks: dict) -> dict:
    """Whether maint can commit the compacted lake's Delta table on this store (docs/lake.md):
    a Delta commit is a create-only PUT of ``_delta_log/<n>.json``, so it is safe exactly when
    create-only holds (``file://``: delta-rs renames without replacing). ``{"ok", "detail"}``;
    ``ok`` is ``None`` when create-only was not probed."""
    if url.startswith("memory://"):
        return {"ok": False, "detail": "memory:// holds no Delta table (use file:// or s3://)"}
    row = checks.get("create_only") or {}
    if row.get("ok") is True:
        return {"ok": True, "detail": "create-only PUTs are honoured: two maintenance passes can never both "
                                      "commit one table version"}
    if row.get("ok") is False:
        return {"ok": False, "detail": "UNSAFE: the store accepts a second create-only PUT, so two commits could "
                                       "both claim one version and one silently vanishes; maint refuses to commit"}
    return {"ok": None, "detail": "not probed (create-only did not run)"}


def _cleanup(store, run: str, caller_prefix: str, written: set, skew: float | None) -> dict:
    """Delete every scratch key of this run, plus this caller's leftovers older than an hour."""
    left = []
    targets = set(written)
    try:
        targets.update(e.key for e in store.list(run))
        cutoff = store.clock() - STALE_PROBE_SECS
        targets.update(e.key for e in store.list(caller_prefix)
                       if e.last_modified is not None and e.last_modified < cutoff)
    except Exception:
        pass
    for key in sorted(targets):
        try:
            store.delete(key)
        except Exception:
            left.append(key)
    if left:
        return {"ok": False, "detail": f"could not delete {len(left)} scratch key(s): {', '.join(left)}"}
    return {"ok": True, "detail": f"deleted {len(targets)} scratch key(s)"}


def snapshot_blob(url: str, fleet_id: str) -> dict:
    """``{"ok", "detail"}``: whether the configured fleet's current snapshot blob hashes to its
    name (:func:`lib.memory.snapshot.check_current`); a store error is a failed row."""
    from lib.memory import snapshot

    try:
        return snapshot.check_current(open_store(url), fleet_id)
    except Exception as exc:  # a diagnostic reports every failure instead of stopping
        return {"ok": False, "detail": f"fleet {fleet_id}: could not read the snapshot: {type(exc).__name__}: {exc}"}


def unsafe_reason(result: dict) -> str | None:
    """Why leases are refused on the probed store (the first failed :data:`LEASE_CHECKS` row),
    or ``None`` when every conditional write was honoured."""
    failed = [r for r in result["checks"] if r["name"] in LEASE_CHECKS and r["ok"] is False]
    return f"{failed[0]['title']}: {failed[0]['detail']}" if failed else None


def exit_code(result: dict) -> int:
    """0 when the store can be written and read back and honours conditional writes; 4 (the
    ``store`` exit code of lib/failures.py) when it cannot be written and read back; 1
    (``refused``) when it does not honour conditional writes (:func:`unsafe_reason`: syncd and
    maint refuse leases, roster and the maintenance lease there). Conditional GET, list and
    delete failures are reported with their cost only."""
    from lib.failures import EXIT_CODES

    if not result["can_write_read"]:
        return EXIT_CODES["store"]
    return EXIT_CODES["refused"] if unsafe_reason(result) else 0


def render_table(result: dict) -> str:
    """The human report: header lines (store, backend, credentials, clock skew, scratch prefix),
    one row per capability (``ok`` / ``FAILED`` / ``not run``) with a ``cost:`` line under
    each failed row, and a one-line verdict."""
    d = result["describe"]
    backend = result["backend"]
    if d.get("backend") == "s3":
        backend += f" (endpoint {d.get('endpoint')}, server {d.get('server') or 'not reported'!r})"
    skew = result["clock_skew_s"]
    lines = [
        f"ctxlake doctor — {result['store']}",
        f"  backend      {backend}",
        f"  credentials  {result['credential_source'] or 'n/a'}"
        + (" (boto3 default chain; name only)" if d.get("backend") == "s3" else ""),
        "  clock skew   " + ("unknown (store clock unreadable)" if skew is None else
                             f"{skew:+.1f} s (store − this host; expiry always uses the store clock)"),
        f"  scratch      {result['scratch_prefix']} ({'cleaned' if result['cleanup']['ok'] else result['cleanup']['detail']})",
        "",
    ]
    width = max(len(r["title"]) for r in result["checks"])
    for row in result["checks"]:
        mark = {True: "ok", False: "FAILED", None: "not run"}[row["ok"]]
        lines.append(f"  {row['title']:<{width}}  {mark:<7}  {row['detail']}")
        if row["ok"] is False:
            lines.append(f"  {'':<{width}}  {'':<7}  cost: {row['cost']}")
    delta = result.get("delta_commits") or {}
    lines.append(f"  {'Delta table commits':<{width}}  {({True: 'ok', False: 'FAILED', None: 'not run'})[delta.get('ok')]:<7}"
                 f"  {delta.get('detail', '')}")
    snap = result.get("snapshot")
    if snap:
        lines.append(f"  {'Current snapshot blob':<{width}}  {({True: 'ok', False: 'FAILED', None: 'none yet'})[snap['ok']]:<7}"
                     f"  {snap['detail']}")
    failed = [r for r in result["checks"] if r["ok"] is not True]
    lines.append("")
    if not result["can_write_read"]:
        lines.append("verdict: UNUSABLE — the store cannot be written and read back")
    elif unsafe_reason(result):
        lines.append("verdict: UNSAFE for the live plane — the store does not honour conditional writes "
                     f"({unsafe_reason(result)}); syncd and maint refuse leases, roster and the maintenance lease "
                     "on it. Fix: a store or gateway that honours If-None-Match/If-Match, or live_store = redis://...")
    elif failed:
        lines.append(f"verdict: usable with weaker guarantees — {len(failed)} capability(ies) missing (costs above)")
    elif snap and snap["ok"] is False:
        lines.append("verdict: all primitives work, but the current snapshot blob is damaged or missing; "
                     "run `ctxlake maint --once` to re-publish it")
    else:
        lines.append("verdict: all primitives work")
    return "\n".join(lines) + "\n"


def host_report() -> dict:
    """What this host's runtimes run, beside the store probe: ``{"entries": installed_entries,
    "missing": [one line per hook or MCP entry whose interpreter or script is gone, with the fix]}``
    (:func:`lib.install.installed_entries`; a runtime cannot start such an entry, docs/runtimes.md
    "When the hook is gone")."""
    from lib import install

    entries = install.installed_entries()
    return {"entries": entries, "missing": install.missing_lines(entries)}


def render_host(host: dict) -> str:
    """The ``this host`` lines of the text report for :func:`host_report`'s dict."""
    if not host["entries"]:
        return "this host: no runtime has ctxlake's hooks or MCP server installed (ctxlake install --all)\n"
    if not host["missing"]:
        return f"this host: {len(host['entries'])} installed hook/MCP entr(ies), every file they run exists\n"
    return "".join(f"this host: MISSING {line}\n" for line in host["missing"])


def run(url: str, caller: str) -> dict:
    """Open ``url`` with :func:`lib.store.open_store` and :func:`probe` it.

    :raises ValueError: unsupported or malformed store URL.
    """
    return probe(open_store(url), caller)


HELP = ("Probe the store's primitives (write and read back, create-only and compare-and-swap writes, conditional "
        "GET, list, delete) under a scratch prefix it cleans up, and print what each failure costs. With live_store "
        "set (e.g. redis://), the live plane's backend is probed too.")
"""``ctxlake doctor --help``'s description: user text, no internal references."""


def main(argv: list[str], stdout, stderr=None) -> int:
    """``ctxlake doctor [--store URL] [--caller ID] [--json]``: probe the store and print the
    capability table (or the result dict as JSON). Defaults come from the ctxlake config
    (``store``, ``agent_id``); when ``live_store`` is configured (e.g. ``redis://``) the live
    plane's backend is probed the same way and reported beside it (``live_plane`` in JSON).
    Returns the worse :func:`exit_code`; a bad store URL (2) or config (3) is one line on
    ``stderr`` (lib/failures.py).

    Example::

        $ ctxlake doctor --store s3://lake/team-a --json
    """
    from lib import failures

    return failures.run("ctxlake doctor", lambda a: _main(a, stdout, stderr), argv, stderr)


def _main(argv: list[str], stdout, stderr=None) -> int:
    from lib.failures import Failure, Parser

    parser = Parser(prog="ctxlake doctor", description=HELP,
                    epilog="Exit 0: usable and safe; 1: the store ignores conditional writes (leases unsafe); "
                           "2: a bad store URL; 3: a bad config; 4: the store cannot be written and read back.")
    parser.add_argument("--store", metavar="URL", help="store URL (default: the configured store)")
    parser.add_argument("--caller", metavar="ID", help="scratch prefix owner (default: the configured agent id)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    url, caller = args.store, args.caller
    live_url = None
    if url:
        from lib.config import check_store

        check_store("", "--store", url)
    if not url or not caller:
        from lib import config

        cfg = config.load(strict=True)
        (stderr or sys.stderr).write(config.startup_notes(cfg, "ctxlake doctor"))
        if not url:
            live_url = cfg.live_store  # the live plane's own backend (redis://...), probed too
        url, caller = url or cfg.store, caller or cfg.agent_id
    try:
        result = run(url, caller)
        live = run(live_url, caller) if live_url and live_url != url else None
    except ValueError as exc:
        raise Failure("usage", str(exc)) from None
    if not args.store and result["can_write_read"]:
        result["snapshot"] = snapshot_blob(url, cfg.fleet_id)
    host = host_report()
    if args.json:
        stdout.write(json.dumps(dict(result, live_plane=live, host=host), indent=2, sort_keys=True) + "\n")
    else:
        stdout.write(render_table(result))
        stdout.write("\nlive plane (heartbeats, roster, leases): " + (
            "on the store above" if live is None else f"live_store {mask_url(live_url)}\n" + render_table(live)) + "\n")
        stdout.write(render_host(host))
    return max(exit_code(result), exit_code(live) if live else 0)
