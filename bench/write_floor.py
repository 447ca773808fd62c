#!/usr/bin/env python3
"""The floor of dedup's kept write on this disk: copy_file_range of the first BYTES of a file
into a new file beside it, then fsync, with the write-behind (sync_file_range) every 4-128 MB
from the copying thread, from another thread, or not at all, and with the file preallocated;
and the same bytes read into aligned 4 MiB buffers and written with O_DIRECT by one or two
threads (neardup's way on ext4). Wall time and CPU (user + system) of each.
Each run starts on a quiet disk (the previous copy deleted and synced, 2 s apart); medians.

    bench/write_floor.py bench/data/crowded.jsonl 1290000000 [REPS=5]
"""
import ctypes
import mmap
import os
import queue
import resource
import statistics
import sys
import threading
import time

SYNC_FILE_RANGE_WRITE = 2
libc = ctypes.CDLL("libc.so.6", use_errno=True)
libc.sync_file_range.argtypes = [ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong, ctypes.c_uint]


def finish(fi, fo, dst, t0):
    """Syncs the copy, takes the time since t0, and leaves a quiet disk for the next run."""
    os.fsync(fo)
    seconds = time.monotonic() - t0
    os.close(fi)
    os.close(fo)
    os.unlink(dst)
    os.sync()
    return seconds


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
    return finish(fi, fo, dst, t0)


def direct(src, dst, n, threads):
    """Reads into reused aligned buffers (anonymous maps are page-aligned) and writes each full
    one with O_DIRECT on `threads` threads while the next fills; the last partial block padded,
    the file cut to n."""
    block, size = 4096, 4 << 20
    fi = os.open(src, os.O_RDONLY)
    fo = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_DIRECT, 0o644)
    idle, todo = queue.Queue(), queue.Queue()
    for _ in range(threads + 2):
        idle.put(mmap.mmap(-1, size))

    def writer():
        while (item := todo.get()) is not None:
            buf, at, length = item
            os.pwrite(fo, memoryview(buf)[:length], at)
            idle.put(buf)

    helpers = [threading.Thread(target=writer) for _ in range(threads)]
    for h in helpers:
        h.start()
    t0 = time.monotonic()
    off = 0
    while off < n:
        buf = idle.get()
        length = os.preadv(fi, [memoryview(buf)[:min(size, n - off)]], off)
        if length <= 0:
            sys.exit(f"{src}: shorter than {n} bytes")
        padded = (length + block - 1) // block * block
        buf[length:padded] = bytes(padded - length)
        todo.put((buf, off, padded))
        off += length
    for _ in helpers:
        todo.put(None)
    for h in helpers:
        h.join()
    os.ftruncate(fo, n)
    return finish(fi, fo, dst, t0)


def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    src, n = sys.argv[1], int(sys.argv[2])
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
    dst = os.path.join(os.path.dirname(os.path.abspath(src)), ".write_floor.out")
    mb = 1 << 20
    configs = [("no write-behind", lambda: copy(src, dst, n, 0, False, False)),
               ("every 4 MB", lambda: copy(src, dst, n, 4 * mb, False, False)),
               ("every 32 MB", lambda: copy(src, dst, n, 32 * mb, False, False)),
               ("every 128 MB", lambda: copy(src, dst, n, 128 * mb, False, False)),
               ("every 8 MB, another thread", lambda: copy(src, dst, n, 8 * mb, True, False)),
               ("every 32 MB, preallocated", lambda: copy(src, dst, n, 32 * mb, False, True)),
               ("O_DIRECT, 1 thread", lambda: direct(src, dst, n, 1)),
               ("O_DIRECT, 2 threads (neardup)", lambda: direct(src, dst, n, 2))]
    times = {name: [] for name, _ in configs}
    cpus = {name: [] for name, _ in configs}
    for _ in range(reps):
        for name, run in configs:
            time.sleep(2)
            c0 = cpu()
            times[name].append(run())
            cpus[name].append(cpu() - c0)
    print(f"{n / 1e9:.2f} GB copied, then fsync; {reps} alternating runs each (copy_file_range, then O_DIRECT)")
    for name, _ in configs:
        t = times[name]
        print(f"  {name:30s} median {statistics.median(t):.2f} s  ({' '.join(f'{x:.2f}' for x in t)}); "
              f"CPU {statistics.median(cpus[name]):.2f} s")

if __name__ == "__main__":
    main()
