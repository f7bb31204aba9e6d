"""``file://`` is safe across processes on one host (DESIGN.md §8): processes racing a create-only
and a CAS on one key produce exactly one winner each round."""
from __future__ import annotations

import multiprocessing

from lib.store import CREATE, PreconditionFailed, update
from lib.store.file import FileStore

PROCESSES = 8
ROUNDS = 5


def _contender(url: str, index: int, barrier, results) -> None:
    """One racing process: per round, create-only then CAS against the version everyone read."""
    store = FileStore(url)
    for r in range(ROUNDS):
        key = f"live/f/leases/proc-race-{r}.json"
        barrier.wait()
        try:
            store.put(key, f"created by {index}".encode(), CREATE)
            results.put((r, "create", index, True))
        except PreconditionFailed:
            results.put((r, "create", index, False))
        barrier.wait()
        seen = store.get(key).etag
        barrier.wait()
        try:
            store.put(key, f"swapped by {index}".encode(), update(seen))
            results.put((r, "cas", index, True))
        except PreconditionFailed:
            results.put((r, "cas", index, False))


def test_processes_racing_create_and_cas_on_file_store_have_exactly_one_winner(tmp_path):
    ctx = multiprocessing.get_context("spawn")  # fresh interpreters: no shared locks or fds
    url = f"file://{tmp_path}/lake"
    barrier = ctx.Barrier(PROCESSES)
    results = ctx.Queue()
    procs = [ctx.Process(target=_contender, args=(url, i, barrier, results)) for i in range(PROCESSES)]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in range(PROCESSES * ROUNDS * 2)]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    for r in range(ROUNDS):
        for step in ("create", "cas"):
            wins = [i for (rr, s, i, won) in outcomes if rr == r and s == step and won]
            assert len(wins) == 1, f"round {r} {step}: winners {wins}"
    store = FileStore(url)
    assert all(store.get(f"live/f/leases/proc-race-{r}.json").data.startswith(b"swapped by ") for r in range(ROUNDS))
