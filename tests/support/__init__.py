"""What the tests and the benchmarks share: the real servers they start (SeaweedFS, redis-server)
and the simulations they run; ``bench/`` imports from here, ``tests/`` never imports ``bench/``
(``tests/test_layering.py``)."""
