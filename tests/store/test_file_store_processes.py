"""The ``file://`` store's conditional writes hold across processes (docs/design.md §8, invariant 4).

Eight worker processes (fresh interpreters, each with its own ``FileStore``) meet at a barrier,
then all fire the same conditional write at one key. Per round, for each primitive, exactly one
of them must win and every other one must get :class:`lib.store.PreconditionFailed`:

- create-only (``If-None-Match: *``) on a key that does not exist yet;
- compare-and-swap (``If-Match``) with the ETag that all eight read after the previous round
  settled — and before anyone wrote — so all of them hold the same, current ETag.

After every round the object holds exactly the winner's bytes.
"""
from __future__ import annotations

import multiprocessing as mp

import pytest

WORKERS = 8
ROUNDS = 80
BARRIER_TIMEOUT = 60  # a safety net against a hung worker, not an assertion about speed


def _worker(url: str, wid: int, rounds: int, barrier, results) -> None:
    """Run every round for worker ``wid``; report ``(primitive, round, wid, outcome)`` tuples.

    ``outcome`` is ``"won"``, ``"lost"`` (PreconditionFailed) or ``"error: <type>: <msg>"``;
    ``("read", round, wid, text)`` records what the CAS key held before that round's swap.
    """
    from lib.store import CREATE, PreconditionFailed, update
    from lib.store.file import FileStore

    store = FileStore(url)
    out = []

    def attempt(fn):
        try:
            fn()
            return "won"
        except PreconditionFailed:
            return "lost"
        except Exception as exc:  # noqa: BLE001 - anything else is a failure the test reports
            return f"error: {type(exc).__name__}: {exc}"

    try:
        for r in range(rounds):
            payload = f"round={r} worker={wid}".encode()
            # create-only: everyone races to create a fresh key
            barrier.wait(BARRIER_TIMEOUT)
            out.append(("create", r, wid, attempt(lambda: store.put(f"race/create-{r:04d}", payload, CREATE))))
            # CAS: everyone reads the shared key, waits until all have read, then swaps
            barrier.wait(BARRIER_TIMEOUT)
            current = store.get("race/cas")
            out.append(("read", r, wid, current.data.decode()))
            barrier.wait(BARRIER_TIMEOUT)
            etag = current.etag
            out.append(("cas", r, wid, attempt(lambda: store.put("race/cas", payload, update(etag)))))
            barrier.wait(BARRIER_TIMEOUT)
    except Exception as exc:  # noqa: BLE001 - a broken barrier: report it instead of hanging
        out.append(("worker", -1, wid, f"error: {type(exc).__name__}: {exc}"))
    results.put(out)


@pytest.mark.slow
def test_create_and_cas_have_one_winner_per_round_across_processes(tmp_path):
    """8 processes × ROUNDS rounds: exactly one create and one CAS winner per round."""
    from lib.store import OVERWRITE
    from lib.store.file import FileStore

    url = "file://" + str(tmp_path / "lake")
    FileStore(url).put("race/cas", b"initial", OVERWRITE)

    ctx = mp.get_context("spawn")  # independent interpreters: nothing shared but the folder
    barrier = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, w, ROUNDS, barrier, results)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    try:
        outcomes = [row for _ in procs for row in results.get(timeout=BARRIER_TIMEOUT * 4)]
    finally:
        for p in procs:
            p.join(timeout=BARRIER_TIMEOUT)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]

    errors = [row for row in outcomes if row[0] != "read" and row[3].startswith("error")]
    assert not errors, errors[:5]
    store = FileStore(url)
    for primitive in ("create", "cas"):
        for r in range(ROUNDS):
            rows = [row for row in outcomes if row[0] == primitive and row[1] == r]
            assert len(rows) == WORKERS, (primitive, r, rows)
            winners = [wid for _, _, wid, outcome in rows if outcome == "won"]
            losers = [wid for _, _, wid, outcome in rows if outcome == "lost"]
            assert len(winners) == 1, f"{primitive} round {r}: winners {winners}"
            assert len(losers) == WORKERS - 1, f"{primitive} round {r}: losers {losers}"
            if primitive == "create":
                got = store.get(f"race/create-{r:04d}").data
                assert got == f"round={r} worker={winners[0]}".encode()
    # every swap that won is what the next round read: a winner's write is never lost
    cas_winner = {row[1]: row[2] for row in outcomes if row[0] == "cas" and row[3] == "won"}
    for r in range(ROUNDS):
        reads = {row[3] for row in outcomes if row[0] == "read" and row[1] == r}
        expected = "initial" if r == 0 else f"round={r - 1} worker={cas_winner[r - 1]}"
        assert reads == {expected}, (r, reads)
    assert store.get("race/cas").data == f"round={ROUNDS - 1} worker={cas_winner[ROUNDS - 1]}".encode()
    # no temp file or lock file leaked into what list() shows
    keys = [e.key for e in store.list("")]
    assert sorted(keys) == sorted([f"race/create-{r:04d}" for r in range(ROUNDS)] + ["race/cas"])
