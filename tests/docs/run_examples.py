#!/usr/bin/env python3
"""Runs every example command of README.md and docs/*.md, as extracted from the files (so that an
edited example is what is tested), and checks that each exits as documented: 0, unless the line
says otherwise with a comment `# exit N`.

    tests/docs/run_examples.py BUILD_DIR REPO_DIR

Each file runs as one run in a fresh folder, its examples in order, with the built
`neardup` and `neardup-mpi` first on PATH. Examples are taken from ```sh / ```bash blocks and
from lines indented as code that start with `neardup`. A line is run when its first word is a
command of this list (neardup, neardup-mpi, mpirun, zcat, curl, printf, cat); the others
(`make`, `sudo ...`, `srun` without Slurm, lines of output shown after a command) are listed as
not run, with the reason.

The inputs the examples name are made when missing, from the sample corpus: JSONL shards
(`shard-*.jsonl.zst`, `corpus.jsonl`, ...), folders (`shards/`, `docs/`), indexes (`*.ndx`),
`pairs.tsv` and `truth.tsv.zst` for `eval`. What changes in a line, and why: `PYTHONPATH=build/python
python3 ...` runs from the repository with the build folder given and the interpreter the module
was built for; `neardup serve`
runs in the background on a free port, and `curl` lines go to it (8080 replaced by that port, a
bearer token added when the service was started with one) and must answer 2xx with JSON;
`mpirun -np N` runs 2 ranks (a 2-core machine), as root if need be; an absolute path outside the
run folder (`/etc/neardup/token`) is taken inside it.
"""
import glob
import http.client
import json
import os
import random
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILD, REPO = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
SAMPLE = os.path.join(REPO, "data", "sample", "mmds-articles-2500.jsonl.zst")
RUN = {"neardup", "neardup-mpi", "mpirun", "zcat", "curl", "printf", "cat"}
OUTPUT_FLAGS = {"-o", "--output", "--removed", "--clusters", "--report", "--plot", "--output-dir", "--rejects"}
TIMEOUT = 300
failures = []


def examples(path):
    """(line number, command) of every example in a Markdown file, continuation lines joined."""
    text = open(path, encoding="utf-8").read()
    out = []
    for m in re.finditer(r"^```(sh|bash|shell)\n(.*?)^```", text, re.S | re.M):
        first = text.count("\n", 0, m.start(2)) + 1
        lines = m.group(2).split("\n")
        i = 0
        while i < len(lines):
            start, cmd = first + i, lines[i]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            if cmd.strip():
                out.append((start, cmd.strip()))
            i += 1
    for m in re.finditer(r"^    (neardup .*)$", text, re.M):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1).strip()))
    return sorted(out)


# ---- Inputs ----

def sample_records():
    raw = subprocess.run(["zstd", "-dc", SAMPLE], check=True, capture_output=True).stdout.decode()
    return [json.loads(line) for line in raw.splitlines() if line.strip()]


RECORDS = sample_records()
made = {"n": 0}


def jsonl_records(name, n=120):
    """Records for one input: a slice of the sample with near-copies of a few, ids unique to the
    file, and a quality field (for --keep-by quality)."""
    rng = random.Random(name)
    start = (made["n"] * n) % (len(RECORDS) - n)
    made["n"] += 1
    stem = re.sub(r"\W", "_", os.path.basename(name).split(".")[0])
    recs = []
    for i, r in enumerate(RECORDS[start:start + n]):
        recs.append({"id": f"{stem}-{i}", "text": r["text"], "quality": rng.randint(1, 9)})
        if i % 10 == 0:  # a near-copy
            words = r["text"].split()
            words[len(words) // 2] = "changed"
            recs.append({"id": f"{stem}-{i}c", "text": " ".join(words), "quality": rng.randint(1, 9)})
    return recs


def write_jsonl(path, recs=None):
    recs = recs if recs is not None else jsonl_records(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    data = "".join(json.dumps(r) + "\n" for r in recs).encode()
    plain = re.sub(r"\.(gz|zst)$", "", path)
    if path.endswith(".zst"):
        subprocess.run(["zstd", "-q", "-o", path], input=data, check=True)
    elif path.endswith(".gz"):
        subprocess.run(["gzip", "-c"], input=data, check=True, stdout=open(path, "wb"))
    else:
        open(plain, "wb").write(data)


def make_input(arg, cmd_words):
    """Makes the input `arg` names, if it is one this script knows how to make."""
    if "*" in arg:
        for part in ("a", "b"):
            make_input(arg.replace("*", part, 1), cmd_words)
        return
    if os.path.exists(arg.rstrip("/")):
        return
    if arg.endswith("/"):
        os.makedirs(arg, exist_ok=True)
        if arg.rstrip("/") == "docs":  # a folder of text files
            for i, r in enumerate(RECORDS[:40]):
                open(os.path.join(arg, f"doc{i}.txt"), "w").write(r["text"] + "\n")
                if i % 8 == 0:
                    open(os.path.join(arg, f"doc{i}-copy.txt"), "w").write(r["text"] + " (a copy)\n")
        else:
            for part in ("a", "b"):
                write_jsonl(os.path.join(arg, f"{os.path.basename(arg.rstrip('/'))}-{part}.jsonl.zst"))
        return
    if re.search(r"\.(jsonl|ndjson)(\.gz|\.zst)?$", arg):
        write_jsonl(arg)
    elif arg.endswith(".ndx") and cmd_words[1:3] != ["index", "create"]:
        subprocess.run(["neardup", "index", "create", arg, "-q"], check=True)
        write_jsonl(arg + ".jsonl")
        subprocess.run(["neardup", "index", "add", arg, arg + ".jsonl", "-q"], check=True)
    elif arg in ("pairs.tsv", "truth.tsv.zst"):
        if not os.path.exists("eval-corpus.jsonl"):
            write_jsonl("eval-corpus.jsonl")
        if arg == "pairs.tsv":
            subprocess.run(["neardup", "pairs", "eval-corpus.jsonl", "-t", "0.5", "-o", "pairs.tsv", "-q"], check=True)
        else:
            subprocess.run(["neardup", "pairs", "eval-corpus.jsonl", "--method", "exact", "-t", "0.5", "-o", "truth.tsv.zst", "-q"],
                           check=True)


def make_inputs(words):
    """The inputs among a command's words: not an option's value for an output, not an option."""
    for cmd in split_pipeline(words):
        if not cmd or cmd[0] not in ("neardup", "neardup-mpi", "zcat", "cat"):
            continue
        skip = False
        for i, w in enumerate(cmd[1:], 1):
            if skip:
                skip = False
                continue
            if w in OUTPUT_FLAGS:
                skip = True
                continue
            if w.startswith("-") or w.startswith("http"):
                continue
            if cmd[0] == "neardup" and cmd[1:3] == ["index", "create"] and i == 3:
                continue  # what it makes
            make_input(w, cmd)


def split_pipeline(words):
    out, cur = [], []
    for w in words:
        if w in ("|", "&", "&&", ";"):
            out.append(cur)
            cur = []
        else:
            cur.append(w)
    out.append(cur)
    # mpirun -np N neardup-mpi ...: the program's words.
    for i, c in enumerate(out):
        if c and c[0] in ("mpirun", "srun"):
            j = next((k for k, w in enumerate(c) if w in ("neardup-mpi", "neardup")), None)
            if j is not None:
                out[i] = c[j:]
    return out


# ---- The service ----

class Service:
    def __init__(self):
        self.proc = None
        self.port = None
        self.token = None

    def start(self, line, where):
        self.stop(where)
        port = free_port()
        line = re.sub(r"--listen \S+", "", line)
        words = shlex.split(line, comments=True)
        if words and words[-1] == "&":
            words.pop()
        if "--token-file" in words:
            path = words[words.index("--token-file") + 1]
            self.token = "t" * 32
            open(path, "w").write(self.token + "\n")
        else:
            self.token = None
        words += ["--listen", f"127.0.0.1:{port}"]
        self.proc = subprocess.Popen(words, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.proc.poll() is not None:
                failures.append(f"{where}: `{line}` ended at start (exit {self.proc.returncode}): {self.proc.stderr.read().strip()}")
                self.proc = None
                return
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/healthz")
                if c.getresponse().status == 200:
                    self.port = port
                    return
            except OSError:
                time.sleep(0.1)
        failures.append(f"{where}: `{line}` did not answer /healthz")

    def stop(self, where):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=60)
        if rc != 0:
            failures.append(f"{where}: the service ended with exit {rc}: {self.proc.stderr.read().strip()}")
        self.proc = None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def check_http(output, where, line):
    *body, status = output.rstrip("\n").split("\n")
    if not status.isdigit() or not 200 <= int(status) < 300:
        failures.append(f"{where}: `{line}` answered HTTP {status}: {' '.join(body)[:300]}")
        return
    for b in body:
        if b.strip():
            try:
                json.loads(b)
            except ValueError:
                failures.append(f"{where}: `{line}` answered with something that is not JSON: {b[:200]}")


# ---- Running ----

def build_interpreter():
    """The interpreter the Python module was built for (python/CMakeLists.txt writes it)."""
    m = re.search(r'INTERPRETER = "(.*)"', open(os.path.join(BUILD, "python", "neardup", "_build.py")).read())
    return m.group(1)


def expected_exit(line):
    m = re.search(r"#.*\bexit (\d+)", line)
    return int(m.group(1)) if m else 0


def run_file(md, bindir):
    rel = os.path.relpath(md, REPO)
    workdir = tempfile.mkdtemp(prefix="neardup-docs-")
    os.chdir(workdir)
    service = Service()
    ran = 0
    for lineno, line in examples(md):
        where = f"{rel}:{lineno}"
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = []
        if line.startswith("#"):
            continue
        if words and words[0] == "PYTHONPATH=build/python":  # from the repository, with the build's interpreter
            r = subprocess.run(["bash", "-c", line.replace("build/python", os.path.join(BUILD, "python"), 1).replace(
                " python3 ", " " + build_interpreter() + " ", 1)], capture_output=True, text=True, cwd=REPO, timeout=TIMEOUT)
            ran += 1
            if r.returncode != expected_exit(line):
                failures.append(f"{where}: `{line}` exited {r.returncode}: {r.stderr.strip()[-400:]}")
            continue
        if not words or words[0] not in RUN:
            print(f"  not run: {where}: {line[:100]} ({'no command' if not words else words[0] + ' is not run here'})")
            continue
        if words[0] == "srun":
            print(f"  not run: {where}: {line[:100]} (no Slurm here)")
            continue
        # Absolute paths outside the run folder are taken inside it.
        line = re.sub(r"(?<=\s)/etc/(\S+)", lambda m: os.makedirs(os.path.dirname("etc/" + m.group(1)), exist_ok=True)
                      or "etc/" + m.group(1), line)
        words = shlex.split(line, comments=True)
        if words[0] == "mpirun" and not os.path.exists(os.path.join(BUILD, "neardup-mpi")):
            print(f"  not run: {where}: {line[:100]} (neardup-mpi is not built)")
            continue
        if words[:2] == ["neardup", "serve"]:
            service.start(line, where)
            ran += 1
            continue
        make_inputs(words)
        cmd = line
        if words[0] == "mpirun":
            cmd = re.sub(r"^mpirun -np \d+", "mpirun --allow-run-as-root --oversubscribe -np 2", line)
        is_http = "curl" in words
        if is_http:
            if service.port is None:
                failures.append(f"{where}: `{line}` has no service to ask (no `neardup serve` before it in {rel})")
                continue
            cmd = cmd.replace("localhost:8080", f"127.0.0.1:{service.port}")
            auth = f" -H 'Authorization: Bearer {service.token}'" if service.token else ""
            cmd = cmd.replace("curl -s", f"curl -s -w '\\n%{{http_code}}'{auth}", 1)
        r = subprocess.run(["bash", "-c", "set -o pipefail; " + cmd], capture_output=True, text=True, timeout=TIMEOUT,
                           env={**os.environ, "OMPI_MCA_btl_vader_single_copy_mechanism": "none"})
        ran += 1
        want = expected_exit(line)
        if r.returncode != want:
            failures.append(f"{where}: `{line}` exited {r.returncode}, documented {want}: {r.stderr.strip()[-400:]}")
        elif words[:2] == ["neardup", "tune"] and "TARGET NOT MET" in r.stdout:
            failures.append(f"{where}: `{line}` shows targets that no choice meets; choose an example that meets them")
        elif is_http:
            check_http(r.stdout, where, line)
    service.stop(rel)
    print(f"{rel}: {ran} examples run")
    return ran


def main():
    bindir = tempfile.mkdtemp(prefix="neardup-bin-")
    for name in ("neardup", "neardup-mpi"):
        if os.path.exists(os.path.join(BUILD, name)):
            os.symlink(os.path.abspath(os.path.join(BUILD, name)), os.path.join(bindir, name))
    os.environ["PATH"] = bindir + os.pathsep + os.environ["PATH"]
    total = 0
    for md in [os.path.join(REPO, "README.md")] + sorted(glob.glob(os.path.join(REPO, "docs", "*.md"))):
        total += run_file(md, bindir)
    if total < 30:
        failures.append(f"only {total} examples found: the extraction is broken")
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
