"""A stand-in for pybloomfiltermmap3's BloomFilter, which datasketch's MinHashLSHBloom needs and
Debian does not ship: a Python set, so that datasketch's class can run beside neardup's in
bench/datasketch_bench.py. Its add and membership are the set's own C calls, which do less than
the real filter's (a hash of the key and k bits set or tested), so a speed ratio measured against
datasketch with it is at most the ratio against datasketch with the real filter. It answers
exactly (no false positives)."""


class BloomFilter(set):
    def __init__(self, capacity=None, error_rate=None, filename=None):
        super().__init__()

    @classmethod
    def open(cls, filename):
        return cls()

    def sync(self):
        pass
