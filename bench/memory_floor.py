#!/usr/bin/env python3
"""What memory costs on this machine, apart from the work done in it:

- first touch: anonymous memory (asked for huge pages, as neardup's heaps are) written one byte
  per 4 KiB page, in a new mapping, then again in a mapping made right after the first was
  unmapped (the kernel hands the same pages back), then after a pause of PAUSE seconds (a virtual
  machine's host may have taken the freed pages back meanwhile);
- read(2) of FILE into 1, 4, 16 or 32 buffers of 4 MiB used in turn: the copy into a buffer that
  is still in the cache against one that is not.

    bench/memory_floor.py bench/data/crowded.jsonl [MB=512] [PAUSE=5]
"""
import mmap
import os
import statistics
import sys
import time

PAGE = 4096


def touch(mb):
    n = mb << 20
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(mmap, "MADV_HUGEPAGE"):
        m.madvise(mmap.MADV_HUGEPAGE)
    t = time.perf_counter()
    for i in range(0, n, PAGE):
        m[i] = 1
    s = time.perf_counter() - t
    m.close()
    return s


def read_into(path, buffers, size=4 << 20):
    bufs = [bytearray(size) for _ in range(buffers)]  # touched once before the timing
    views = [memoryview(b) for b in bufs]
    fd = os.open(path, os.O_RDONLY)
    t = time.perf_counter()
    k = 0
    while os.readv(fd, [views[k]]) > 0:
        k = (k + 1) % buffers
    s = time.perf_counter() - t
    os.close(fd)
    return s


def main():
    path = sys.argv[1]
    mb = int(sys.argv[2]) if len(sys.argv) > 2 else 512
    pause = float(sys.argv[3]) if len(sys.argv) > 3 else 5
    first, again = touch(mb), touch(mb)
    time.sleep(pause)
    later = touch(mb)
    for name, s in (("new", first), ("again at once", again), (f"again after {pause:g} s", later)):
        print(f"first touch of {mb} MB, {name}: {s:.3f} s ({mb / 1024 / s:.2f} GB/s, {s * 1000 / mb:.2f} ms per MB)")
    size = os.path.getsize(path)
    with open(path, "rb") as f:  # the file in the page cache for every run alike
        while f.read(64 << 20):
            pass
    for buffers in (1, 4, 16, 32):
        s = statistics.median(read_into(path, buffers) for _ in range(3))
        print(f"read(2) of {size / 1e6:.0f} MB into {buffers} buffers of 4 MiB in turn: {s:.3f} s ({size / 1e9 / s:.2f} GB/s)")


if __name__ == "__main__":
    main()
