"""What the fault scripts share: the calls to leave alone, their documents' texts, and how a
script reports."""
import os
import shutil
import subprocess
import sys
import tempfile

# neardup starts itself again with glibc.malloc.hugetlb=1 when a page fault is dear at its start
# (tools/neardup/process.cpp), which on a busy machine happens in some runs and not others: the
# loader's calls would then be counted twice in one run and once in the next, and a fault meant for
# neardup's own code would reach the loader of the second start (exit 127, or a crash inside the
# loader). Set for every run of the scripts, the tunable keeps each run a single start.
if "glibc.malloc.hugetlb=" not in os.environ.get("GLIBC_TUNABLES", ""):
    os.environ["GLIBC_TUNABLES"] = ":".join(filter(None, [os.environ.get("GLIBC_TUNABLES"), "glibc.malloc.hugetlb=0"]))


def words(rng, n):
    """n words of a 5,000-word vocabulary: a document's text."""
    return " ".join("w%d" % rng.randrange(5000) for _ in range(n))


def startup_calls(nd, calls):
    """How many calls of each kind the dynamic loader and the C library make before neardup's own
    code runs (counted on `neardup --version`): the sweeps start after them."""
    with tempfile.NamedTemporaryFile(mode="r", suffix=".trace") as log:
        subprocess.run(["strace", "-f", "-qq", "-o", log.name, "-e", "trace=" + ",".join(calls), nd, "--version"],
                       stdout=subprocess.DEVNULL, check=True)
        lines = log.read().splitlines()
    counts = {}
    for line in lines:
        words = line.split()
        call = (words[1] if words[0].isdigit() and len(words) > 1 else words[0]).split("(")[0]
        counts[call] = counts.get(call, 0) + 1
    return counts


def finish(top, problems, summary):
    """Removes the scratch folder, prints every problem and the summary, exits 1 if any."""
    shutil.rmtree(top, ignore_errors=True)
    for p in problems:
        print(p)
    print(summary + ", %d problems" % len(problems))
    sys.exit(1 if problems else 0)
