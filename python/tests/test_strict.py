"""The Python driver as strict and as safe as the CLI: arguments checked against the CLI's rules,
ids and texts checked as a JSONL record's are, an existing file never replaced without
force=True, the update lock refused at once (never a deadlock in one process), Ctrl-C honoured
during a run, and an import error that names the interpreter the module was built for."""
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import neardup

CLI = os.environ.get("NEARDUP_CLI", "neardup")
PACKAGE = pathlib.Path(neardup.__file__).parent


def cli(*args, check=True):
    return subprocess.run([CLI, *map(str, args)], check=check, capture_output=True, text=True)


# ---- Index files ----

def test_create_refuses_an_existing_file_unless_forced(tmp_path):
    idx_path = tmp_path / "i.ndx"
    with neardup.Index.create(idx_path) as idx:
        for i in range(44):
            idx.add(f"d{i}", f"document number {i} with a few words of its own {i * 7}")
    with pytest.raises(neardup.UsageError, match="already exists; pass force=True") as e:
        neardup.Index.create(idx_path)
    assert e.value.option == "force"
    assert len(neardup.Index.open(idx_path)) == 44  # untouched
    dataset = tmp_path / "data.jsonl"
    dataset.write_text('{"id": "a", "text": "keep me"}\n')
    with pytest.raises(neardup.UsageError):
        neardup.Index.create(dataset)
    assert dataset.read_text() == '{"id": "a", "text": "keep me"}\n'
    neardup.Index.create(idx_path, force=True).close()
    assert len(neardup.Index.open(idx_path)) == 0


@pytest.mark.parametrize("bad", [None, "", 1, "a\tb", "a\nb", "a\rb"])
def test_index_ids_are_checked(tmp_path, bad):
    with neardup.Index.create(tmp_path / "i.ndx") as idx:
        with pytest.raises(neardup.UsageError):
            idx.add(bad, "a text")
        with pytest.raises(neardup.Error):
            idx.add_many([(bad, "a text")])
        assert len(idx) == 0


def test_a_tab_id_never_reaches_the_query_tsv(tmp_path):
    """The corruption this guards against: a TAB id made `index query` print four columns."""
    p = tmp_path / "i.ndx"
    with neardup.Index.create(p) as idx:
        idx.add("good", "the same words in the same order every time")
        with pytest.raises(neardup.UsageError):
            idx.add("bad\tid", "the same words in the same order every time")
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q", "text": "the same words in the same order every time"}\n')
    out = cli("index", "query", p, q, "-q").stdout
    assert [len(line.split("\t")) for line in out.splitlines()] == [3]


def test_a_second_writer_in_one_process_is_refused_not_deadlocked(tmp_path):
    p = tmp_path / "i.ndx"
    with neardup.Index.create(p):
        with pytest.raises(neardup.IoError, match="this process") as e:
            neardup.Index.open(p, update=True)
        assert "close that index first" in str(e.value)
        neardup.Index.open(p).close()  # reading needs no lock
    neardup.Index.open(p, update=True).close()  # free again


def test_the_cli_is_refused_at_once_naming_the_python_writer(tmp_path):
    p = tmp_path / "i.ndx"
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"id": "x", "text": "one two three four five six"}\n')
    with neardup.Index.create(p):
        r = cli("index", "add", p, docs, check=False)
        assert r.returncode == 4, r.stderr
        assert f"process {os.getpid()}" in r.stderr and "--wait" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1


def wait_for_lock_file(proc, lock):
    """Until process `proc` has the lock file open (it then waits for the lock, or holds it)."""
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            fds = os.listdir(f"/proc/{proc.pid}/fd")
            if any(os.path.realpath(f"/proc/{proc.pid}/fd/{fd}") == os.path.realpath(lock) for fd in fds):
                return
        except FileNotFoundError:
            pass  # between fork and exec, or ended: poll() tells
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"process {proc.pid} ended (exit {proc.returncode}) before it opened {lock}: {err}")
        time.sleep(0.01)
    raise AssertionError(f"process {proc.pid} did not open {lock} within a minute")


def test_wait_waits_for_the_holder_and_ctrl_c_stops_the_wait(tmp_path):
    p = tmp_path / "i.ndx"
    neardup.Index.create(p).close()
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import neardup, sys, time
        with neardup.Index.open({str(p)!r}, update=True):
            print("holding", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ)
    assert holder.stdout.readline().strip() == "holding"
    with pytest.raises(neardup.IoError, match=f"process {holder.pid}"):
        neardup.Index.open(p, update=True)
    # A waiter in another process: interrupted while it waits, it raises KeyboardInterrupt.
    waiter = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import neardup
        try:
            neardup.Index.open({str(p)!r}, update=True, wait=True)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
        """)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
    wait_for_lock_file(waiter, str(p) + ".lock")
    waiter.send_signal(signal.SIGINT)
    out, err = waiter.communicate(timeout=60)
    assert "interrupted" in out or "KeyboardInterrupt" in err
    # A waiter that the holder lets in.
    waiter = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import neardup
        with neardup.Index.open({str(p)!r}, update=True, wait=True) as idx:
            idx.add("w", "added after the wait")
        """)], env=os.environ, stderr=subprocess.PIPE, text=True)
    wait_for_lock_file(waiter, str(p) + ".lock")
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait(timeout=60) == 0
    assert waiter.wait(timeout=60) == 0
    assert "w" in neardup.Index.open(p)


def test_close_inside_with_is_fine(tmp_path):
    with neardup.Index.create(tmp_path / "i.ndx") as idx:
        idx.add("a", "a text")
        idx.save()
        idx.close()
    assert idx.closed
    assert "a" in neardup.Index.open(tmp_path / "i.ndx")


# ---- Arguments, against the CLI's rules ----

@pytest.mark.parametrize("kwargs, option", [
    ({"threshold": "0.8"}, "threshold"), ({"threshold": None}, "threshold"), ({"threshold": 0}, "threshold"),
    ({"threshold": 1.5}, "threshold"), ({"top": -1}, "top"), ({"chars": 0}, "chars"), ({"threads": -1}, "threads"),
    ({"threads": 2.5}, "threads"), ({"shingle": True}, "shingle"), ({"num_perm": 0}, "num_perm"),
    ({"bands": 0, "rows": 4}, "bands"), ({"progress": 5}, "progress"), ({"method": "bogus"}, "method"),
    ({"verify": "maybe"}, "verify"), ({"seed": -1}, "seed"), ({"on_error": "ignore"}, "on_error"),
])
def test_bad_arguments_name_the_argument(kwargs, option):
    with pytest.raises(neardup.UsageError) as e:
        neardup.pairs(["one text here", "another text"], **kwargs)
    assert e.value.option == option, str(e.value)
    assert option in str(e.value)


def test_the_rules_are_the_clis(tmp_path):
    """The same value is refused by both, with the same range in the message."""
    f = tmp_path / "d.jsonl"
    f.write_text('{"id": "a", "text": "one two three"}\n')
    for flag, option, value in [("--chars", "chars", 0), ("--num-perm", "num_perm", 5000), ("-t", "threshold", 0)]:
        r = cli("pairs", f, flag, value, check=False)
        assert r.returncode == 2
        with pytest.raises(neardup.UsageError) as e:
            neardup.pairs([("a", "one two three")], **{option: value})
        rng = str(e.value).split(" is not ")[1]
        assert rng.split(" (")[0] in r.stderr, (r.stderr, str(e.value))


def test_keep_by_a_field_needs_file_inputs():
    with pytest.raises(neardup.UsageError, match="in memory") as e:
        neardup.dedup(["a text", "another"], keep="bogus")
    assert e.value.option == "keep"


# ---- Texts and ids, as the CLI checks a JSONL record ----

def test_texts_must_be_text():
    with pytest.raises(neardup.FormatError, match="NoneType, not a str") as e:
        neardup.pairs([("a", "None"), ("b", None)])
    assert e.value.line == 2
    with pytest.raises(neardup.FormatError, match="int, not a str"):
        neardup.pairs([("a", "5"), ("b", 5)])
    with pytest.raises(neardup.FormatError, match="lone surrogate") as e:
        neardup.pairs(["fine", "bad \udc80 text"])
    assert e.value.line == 2


def test_ids_as_a_jsonl_record_has_them():
    r = neardup.pairs([(1, "the very same words here"), ("x", "the very same words here")])
    assert r.pairs == [("1", "x", 1.0)]  # an int id is written as a JSON number id is
    with pytest.raises(neardup.FormatError, match="NoneType"):
        neardup.pairs([(None, "a text")])
    with pytest.raises(neardup.FormatError, match="TAB"):
        neardup.pairs([("a\tb", "a text")])


def test_the_duplicate_id_message_names_both_records():
    with pytest.raises(neardup.FormatError) as e:
        neardup.dedup([("a", "x y z"), ("b", "p q r"), ("a", "q r s")])
    assert str(e.value).startswith('<memory>:3: id "a" is already used by <memory>:1'), str(e.value)


# ---- Ctrl-C ----

def test_ctrl_c_stops_a_long_run_promptly(tmp_path):
    """A run of several seconds, interrupted early, raises KeyboardInterrupt long before it would
    have ended (the ratio of the two times in one test, no fixed threshold)."""
    script = textwrap.dedent("""
        import random, sys, time, neardup
        rng = random.Random(1)
        words = ["w%d" % i for i in range(5000)]
        docs = [" ".join(rng.choice(words) for _ in range(60)) for _ in range(150000)]
        t = time.perf_counter()
        neardup.dedup(docs, threshold=0.5, shingle=2, threads=1)
        full = time.perf_counter() - t
        print("full", full, flush=True)
        sys.stdin.readline()
        t = time.perf_counter()
        try:
            neardup.dedup(docs, threshold=0.5, shingle=2, threads=1)
            print("finished", time.perf_counter() - t, flush=True)
        except KeyboardInterrupt:
            print("interrupted", time.perf_counter() - t, flush=True)
        """)
    p = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                         env=os.environ)
    full = float(p.stdout.readline().split()[1])
    p.stdin.write("\n")
    p.stdin.flush()
    time.sleep(full / 5)
    p.send_signal(signal.SIGINT)
    outcome, seconds = p.stdout.readline().split()
    p.wait(timeout=60)
    assert outcome == "interrupted"
    assert float(seconds) < full * 0.6, (seconds, full)


# ---- Importing ----

def test_the_import_error_names_the_interpreter_it_was_built_for(tmp_path):
    copy = tmp_path / "neardup"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("_native*", "__pycache__"))
    (copy / "_build.py").write_text('INTERPRETER = "/opt/other/bin/python3"\nVERSION = "3.99"\n')
    r = subprocess.run([sys.executable, "-c", "import neardup"], capture_output=True, text=True, cwd=tmp_path,
                       env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert "built for /opt/other/bin/python3 (Python 3.99)" in last and sys.executable in last, last


# ---- docs/python.md ----

def test_the_documented_values_are_what_the_calls_return():
    """docs/python.md's example of the native API: every line `EXPR  # VALUE ...` whose VALUE is
    a Python literal gives that value (the page said 0.5555 where the call returned 0.6)."""
    import ast
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "python.md").read_text()
    block = doc.split("## The native API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    checked = 0
    pending = ""
    for line in block.splitlines():
        code, _, comment = line.partition("#")
        pending += code + "\n"
        try:
            ast.parse(pending)
        except SyntaxError:
            continue  # a statement over several lines
        statement, pending = pending, ""
        try:
            want = ast.literal_eval(comment.strip().split("  ")[0])
        except (ValueError, SyntaxError):
            exec(statement, scope)
            continue
        got = eval(statement.strip(), scope)
        assert got == want, (line, got)
        checked += 1
    assert checked >= 2
