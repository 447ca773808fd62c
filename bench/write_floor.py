#!/usr/bin/env python3
"""The floor of dedup's kept write on this disk: copy_file_range of the first BYTES of a file
into a new file beside it, then fsync, with the write-behind (sync_file_range) every 4-128 MB
from the copying thread, from another thread, or not at all, and with the file preallocated.
Each run starts on a quiet disk (the previous copy deleted and synced, 2 s apart); medians.

    bench/write_floor.py bench/data/crowded.jsonl 1290000000 [REPS=5]
"""
import ctypes
import os
import queue
import statistics
import sys
import threading
import time

SYNC_FILE_RANGE_WRITE = 2
libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]


def copy(src, dst, n, chunk, threaded, prealloc):
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    if prealloc:
        os.posix_fallocate(fo, 0, n)
    todo = queue.Queue()

    def syncer():
        while (item := todo.get()) is not None:
            libc.sync_file_range(fo, item[0], item[1] - item[0], SYNC_FILE_RANGE_WRITE)

    helper = threading.Thread(target=syncer) if threaded else None
    if helper:
        helper.start()
    t0 = time.monotonic()
    off = synced = 0
    while off < n:
        got = os.copy_file_range(fi, fo, min(128 << 10, n - off), off)
        if got <= 0:
            sys.exit(f"{src}: shorter than {n} bytes")
        off += got
        if chunk and off - synced >= chunk:
            if helper:
                todo.put((synced, off))
            else:
                libc.sync_file_range(fo, synced, off - synced, SYNC_FILE_RANGE_WRITE)
            synced = off
    if helper:
        todo.put(None)
        helper.join()
    os.fsync(fo)
    seconds = time.monotonic() - t0
    os.close(fi)
    os.close(fo)
    os.unlink(dst)
    os.sync()
    return seconds


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, n = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    dst = os.path.join(os.path.dirname(os.path.abspath(src)), ".write_floor.out")
    mb = 1 << 20
    configs = [("no write-behind", 0, False, False), ("every 4 MB", 4 * mb, False, False),
               ("every 32 MB (neardup)", 32 * mb, False, False), ("every 128 MB", 128 * mb, False, False),
               ("every 8 MB, another thread", 8 * mb, True, False), ("every 32 MB, preallocated", 32 * mb, False, True)]
    times = {c[0]: [] for c in configs}
    for _ in range(reps):
        for name, chunk, threaded, prealloc in configs:
            time.sleep(2)
            times[name].append(copy(src, dst, n, chunk, threaded, prealloc))
    print(f"copy_file_range + fsync of {n / 1e9:.2f} GB, {reps} alternating runs each")
    for name, _, _, _ in configs:
        t = times[name]
        print(f"  {name:28s} median {statistics.median(t):.2f} s  ({' '.join(f'{x:.2f}' for x in t)})")


if __name__ == "__main__":
    main()
