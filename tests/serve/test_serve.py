"""`neardup serve` over HTTP: every endpoint, every class of bad request, the token, the limits,
back-pressure, concurrent near-copies, graceful shutdown, and kill -9 under a load of adds.

Run by ctest (serve.http) with NEARDUP_CLI naming the binary and NEARDUP_SAMPLE_DIR the sample
corpus; `python3 -m pytest tests/serve` does the same by hand.
"""
import http.client
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

CLI = os.environ.get("NEARDUP_CLI", "build/neardup")
SAMPLE = os.path.join(os.environ.get("NEARDUP_SAMPLE_DIR", "data/sample"), "mmds-articles-2500.jsonl.zst")


def sample_docs(n=None):
    out = subprocess.run(["zstd", "-dc", SAMPLE], check=True, capture_output=True).stdout.decode()
    docs = [json.loads(line) for line in out.splitlines() if line.strip()]
    return docs[:n] if n else docs


def wait_until(done, what, seconds=20):
    """Polls done() every 10 ms until it holds; fails naming `what` after `seconds`."""
    deadline = time.time() + seconds
    while not done():
        assert time.time() < deadline, "waited %d s for %s" % (seconds, what)
        time.sleep(0.01)


def refuses_connections(port):
    """Whether a connection to the port is refused: by no listener, or reset by one closing with
    the connection still in its queue (the shutdown's close met the attempt)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return False
    except (ConnectionRefusedError, ConnectionResetError):
        return True


class Server:
    """A `neardup serve` process on a free loopback port."""

    def __init__(self, index, *args, token=None):
        self.index = index
        self.token = token
        self.proc = subprocess.Popen([CLI, "serve", str(index), "--listen", "127.0.0.1:0", *map(str, args)],
                                     stderr=subprocess.PIPE, text=True)
        self.banner = ""
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                raise AssertionError("serve ended before listening: " + self.banner + self.proc.stderr.read())
            self.banner += line
            m = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
            if m:
                self.port = int(m.group(1))
                break
        else:
            raise AssertionError("serve did not start listening")
        self.rest = []
        threading.Thread(target=lambda: self.rest.extend(self.proc.stderr), daemon=True).start()

    @classmethod
    def quiet(cls, index, preexec_fn):
        """A `-q` service started with preexec_fn (a file size limit: a full disk), its port read
        from its output; its stderr is the caller's to read once it has ended."""
        s = cls.__new__(cls)
        s.index, s.token = index, None
        s.proc = subprocess.Popen([CLI, "serve", str(index), "--listen", "127.0.0.1:0", "-q"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, preexec_fn=preexec_fn)
        s.port = int(s.proc.stdout.readline().strip().rsplit(":", 1)[1])
        return s

    def request(self, method, path, body=None, headers=None, timeout=30):
        h = dict(headers or {})
        if self.token and "Authorization" not in h:
            h["Authorization"] = "Bearer " + self.token
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read().decode()
            return r.status, data, dict(r.getheaders())
        finally:
            c.close()

    def json(self, method, path, body=None, **kw):
        status, data, _ = self.request(method, path, body, **kw)
        return status, json.loads(data)

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        rc = self.proc.wait(timeout=120)
        return rc


@pytest.fixture
def index(tmp_path):
    path = tmp_path / "pages.ndx"
    subprocess.run([CLI, "index", "create", str(path), "-q"], check=True)
    return path


@pytest.fixture
def server(index):
    s = Server(index)
    yield s
    if s.proc.poll() is None:
        assert s.stop() == 0


def ndjson(objs):
    return "".join(json.dumps(o) + "\n" for o in objs)


def test_endpoints_and_the_cli_agree(index, tmp_path):
    docs = sample_docs(600)
    s = Server(index)
    status, data, headers = s.request("POST", "/v1/add/batch", ndjson({"id": d["id"], "text": d["text"], "dedup": False} for d in docs))
    assert status == 200 and headers["Content-Type"] == "application/x-ndjson"
    results = [json.loads(line) for line in data.splitlines()]
    assert [r["id"] for r in results] == [d["id"] for d in docs] and all(r["added"] for r in results)

    # Queries: every match is at or above the threshold, best first; the document itself is found.
    answers = {}
    for d in docs[:200]:
        status, r = s.json("POST", "/v1/query", {"text": d["text"]})
        assert status == 200
        sims = [m["similarity"] for m in r["matches"]]
        assert sims == sorted(sims, reverse=True) and all(x >= 0.8 for x in sims)
        assert d["id"] in [m["id"] for m in r["matches"]]
        answers[d["id"]] = r["matches"]
    # The batch form answers the same, line for line; "id" leaves the document itself out.
    status, data, _ = s.request("POST", "/v1/query/batch", ndjson({"text": d["text"], "id": d["id"]} for d in docs[:200]))
    assert status == 200
    for d, line in zip(docs[:200], data.splitlines()):
        assert json.loads(line)["matches"] == [m for m in answers[d["id"]] if m["id"] != d["id"]]

    # add with dedup: a near-copy is refused and names what it copies; a new text gets in.
    status, r = s.json("POST", "/v1/add", {"id": "copy-of-" + docs[5]["id"], "text": docs[5]["text"] + " And one more sentence."})
    assert status == 200 and r["added"] is False and r["duplicate_of"] == docs[5]["id"] and 0.8 <= r["similarity"] <= 1
    status, r = s.json("POST", "/v1/add", {"id": "fresh", "text": "an entirely new text about nothing in the corpus at all " * 3})
    assert (status, r) == (201, {"id": "fresh", "added": True})

    # Documents: present, absent, removed, removed twice.
    assert s.json("GET", "/v1/docs/fresh") == (200, {"id": "fresh", "present": True})
    assert s.json("GET", "/v1/docs/nothing") == (404, {"id": "nothing", "present": False})
    assert s.json("DELETE", "/v1/docs/fresh") == (200, {"id": "fresh", "removed": True})
    status, r = s.json("DELETE", "/v1/docs/fresh")
    assert status == 404 and r["removed"] is False and r["field"] == "id"
    # An id with a slash, percent-encoded in the path.
    assert s.json("POST", "/v1/add", {"id": "https://example.com/a b", "text": "a page with a url as its id and some words"})[0] == 201
    assert s.json("GET", "/v1/docs/https:%2F%2Fexample.com%2Fa%20b") == (200, {"id": "https://example.com/a b", "present": True})

    status, st = s.json("GET", "/v1/stats")
    assert status == 200 and st["documents"] == 601 and st["changes"] == 603 and st["syncs"] >= 1
    assert s.json("GET", "/healthz") == (200, {"status": "ok"})
    status, text, headers = s.request("GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert 'neardup_requests_total{endpoint="query",code="2xx"} 200' in text
    assert 'neardup_request_seconds_count{endpoint="query"} 200' in text
    assert "neardup_index_documents 601" in text
    assert s.stop() == 0

    # After the service, the CLI queries the folded index and finds what the service found.
    queries = tmp_path / "q.jsonl"
    queries.write_text(ndjson({"id": d["id"], "text": d["text"]} for d in docs[:200]))
    out = subprocess.run([CLI, "index", "query", str(index), str(queries), "-q"], check=True, capture_output=True, text=True).stdout
    cli = {}
    for line in out.splitlines():
        q, i, sim = line.split("\t")
        cli.setdefault(q, []).append({"id": i, "similarity": float(sim)})
    assert cli == answers


def test_containment_and_top_k_agree_with_the_cli(index, tmp_path):
    docs = sample_docs(300)
    # Passages of the first documents quoted inside others.
    for i in range(20):
        words = docs[i]["text"].split()
        docs.append({"id": "quote%d" % i, "text": " ".join(words[10:70])})
        docs.append({"id": "page%d" % i, "text": docs[100 + i]["text"] + " " + " ".join(words[10:70])})
    s = Server(index)
    half = len(docs) // 2
    assert s.request("POST", "/v1/add/batch", ndjson({"id": d["id"], "text": d["text"], "dedup": False} for d in docs[:half]))[0] == 200
    assert s.json("POST", "/v1/query?top=1", {"text": docs[0]["text"]})[0] == 200  # the search is built here
    assert s.request("POST", "/v1/add/batch", ndjson({"id": d["id"], "text": d["text"], "dedup": False} for d in docs[half:]))[0] == 200
    queries = [d for d in docs if d["id"].startswith("quote")] + docs[:20]
    served = {}
    for d in queries:
        status, c = s.json("POST", "/v1/query", {"text": d["text"], "id": d["id"], "containment": 0.9})
        assert status == 200 and c["containment"] == 0.9
        status, t = s.json("POST", "/v1/query?top=3", {"text": d["text"], "id": d["id"]})
        assert status == 200 and t["top"] == 3 and len(t["matches"]) <= 3
        served[d["id"]] = (c["matches"], t["matches"])
        if d["id"].startswith("quote"):  # its source and the page quoting it hold all of it
            n = d["id"][5:]
            assert {m["id"] for m in c["matches"]} >= {docs[int(n)]["id"], "page" + n}
    status, st = s.json("GET", "/v1/stats")
    assert status == 200 and st["search_bytes"] > 8 * sum(len(d["text"].split()) - 4 for d in docs[:half]) / 2
    assert "neardup_search_bytes " in s.request("GET", "/metrics")[1]
    status, data, _ = s.request("POST", "/v1/query/batch?top=3", ndjson({"text": d["text"], "id": d["id"]} for d in queries))
    assert [json.loads(line)["matches"] for line in data.splitlines()] == [served[d["id"]][1] for d in queries]
    assert s.stop() == 0

    qfile = tmp_path / "q.jsonl"
    qfile.write_text(ndjson(queries))
    for flag, value, which in (("--containment", "0.9", 0), ("--top", "3", 1)):
        out = subprocess.run([CLI, "index", "query", str(index), str(qfile), flag, value, "--skip-same-id", "-q"],
                             check=True, capture_output=True, text=True).stdout
        cli = {d["id"]: [] for d in queries}
        for line in out.splitlines():
            q, i, sim = line.split("\t")
            cli[q].append({"id": i, "similarity": float(sim)})
        assert cli == {k: v[which] for k, v in served.items()}, flag


def test_bad_requests_name_the_field(server):
    s = server
    cases = [
        ("POST", "/v1/query", "{not json", 400, None),
        ("POST", "/v1/query", "[1, 2]", 400, None),
        ("POST", "/v1/query", {"id": "x"}, 400, "text"),
        ("POST", "/v1/query", {"text": 5}, 400, "text"),
        ("POST", "/v1/query", {"text": "a", "threshold": "high"}, 400, "threshold"),
        ("POST", "/v1/query", {"text": "a", "threshold": 1.5}, 400, "threshold"),
        ("POST", "/v1/query", {"text": "a", "path": "/etc/passwd"}, 400, "path"),
        ("POST", "/v1/query", '{"text": "a", "text": "b"}', 400, "text"),
        ("POST", "/v1/query", {"text": "a", "containment": 0}, 400, "containment"),
        ("POST", "/v1/query", {"text": "a", "top": 0}, 400, "top"),
        ("POST", "/v1/query", {"text": "a", "top": 2.5}, 400, "top"),
        ("POST", "/v1/query", {"text": "a", "top": 2, "threshold": 0.5}, 400, "top"),
        ("POST", "/v1/query?top=ten", {"text": "a"}, 400, "top"),
        ("POST", "/v1/query?top=3&containment=0.5", {"text": "a"}, 400, "top"),
        ("POST", "/v1/add", {"text": "a"}, 400, "id"),
        ("POST", "/v1/add", {"id": "a"}, 400, "text"),
        ("POST", "/v1/add", {"id": 7, "text": "a"}, 400, "id"),
        ("POST", "/v1/add", {"id": "a\tb", "text": "a"}, 400, "id"),
        ("POST", "/v1/add", {"id": "a\nb", "text": "a"}, 400, "id"),
        ("POST", "/v1/add", {"id": "", "text": "a"}, 400, "id"),
        ("POST", "/v1/add", {"id": "a", "text": "a", "dedup": "yes"}, 400, "dedup"),
        ("POST", "/v1/add", b'{"id": "a", "text": "\xff\xfe"}', 400, None),
    ]
    for method, path, body, status, field in cases:
        got, data, headers = s.request(method, path, body)
        assert got == status, (body, got, data)
        r = json.loads(data)
        assert headers["Content-Type"] == "application/json" and r["error"], (body, data)
        assert r.get("field") == field, (body, data)
    # A duplicate id: 409 naming the field; the first document stays.
    assert s.json("POST", "/v1/add", {"id": "a", "text": "one two three four five six"})[0] == 201
    status, r = s.json("POST", "/v1/add", {"id": "a", "text": "something else entirely, seven eight nine ten"})
    assert status == 409 and r["field"] == "id"
    # A bad line of a batch: 400 naming the line and the field, and nothing of the batch applied.
    status, data, _ = s.request("POST", "/v1/add/batch", ndjson([{"id": "b1", "text": "x y z"}, {"id": "b2"}]))
    r = json.loads(data)
    assert status == 400 and r["line"] == 2 and r["field"] == "text"
    assert s.json("GET", "/v1/docs/b1")[0] == 404
    # No endpoint serves files or answers other paths and methods.
    for method, path in [("GET", "/../../etc/passwd"), ("GET", "/v1/query"), ("PUT", "/v1/add"), ("GET", "/index.html")]:
        status, data, _ = s.request(method, path)
        assert status in (400, 404, 405) and "error" in json.loads(data) and "root:" not in data


def test_token(index, tmp_path):
    token = "0123456789abcdef0123456789abcdef"
    (tmp_path / "token").write_text(token + "\n")
    s = Server(index, "--token-file", tmp_path / "token", token=token)
    try:
        assert s.json("POST", "/v1/add", {"id": "a", "text": "some words here"})[0] == 201
        for auth in [None, "Bearer wrong", "Bearer " + token[:-1], "Bearer " + token + "0", "Basic " + token, token]:
            headers = {"Authorization": auth} if auth else {"Authorization": ""}
            status, data, h = s.request("GET", "/v1/docs/a", headers=headers)
            assert status == 401 and h["WWW-Authenticate"].startswith("Bearer") and json.loads(data)["field"] == "Authorization"
        assert s.request("GET", "/healthz", headers={"Authorization": ""})[0] == 200  # for load balancers
        assert s.json("GET", "/v1/docs/a")[0] == 200
        for scheme in ("bearer", "BEARER", "BeArEr"):  # the scheme is case-insensitive (RFC 7235)
            assert s.request("GET", "/v1/docs/a", headers={"Authorization": scheme + " " + token})[0] == 200
    finally:
        assert s.stop() == 0
    # A short token is refused at start.
    (tmp_path / "short").write_text("abc\n")
    r = subprocess.run([CLI, "serve", str(index), "--token-file", str(tmp_path / "short")], capture_output=True, text=True)
    assert r.returncode == 2 and "shorter than 16" in r.stderr


def test_size_limits(index):
    s = Server(index, "--max-body-bytes", 4096, "--max-text-bytes", 100)
    try:
        status, data, _ = s.request("POST", "/v1/add", {"id": "big", "text": "x " * 5000})
        assert status == 413 and "max-body-bytes" in json.loads(data)["error"]
        status, r = s.json("POST", "/v1/add", {"id": "long", "text": "y " * 60})
        assert status == 413 and r["field"] == "text"
        status, r = s.json("POST", "/v1/query", {"text": "y " * 60})
        assert status == 413 and r["field"] == "text"
        assert s.json("POST", "/v1/add", {"id": "ok", "text": "y " * 40})[0] == 201
    finally:
        assert s.stop() == 0


def test_concurrent_near_copies_admit_exactly_one(server):
    s = server
    base = sample_docs(40)
    for round_, d in enumerate(base[:8]):
        words = d["text"].split()
        barrier = threading.Barrier(16)
        outcomes = []

        def add(k):
            # Near-copies: the same article with one word changed at a different place.
            w = list(words)
            w[(k * 7) % len(w)] = "changed%d" % k
            barrier.wait()
            outcomes.append(s.json("POST", "/v1/add", {"id": "r%d-%d" % (round_, k), "text": " ".join(w)}))

        threads = [threading.Thread(target=add, args=(k,)) for k in range(16)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        added = [r for status, r in outcomes if status == 201]
        dups = [r for status, r in outcomes if status == 200]
        assert len(added) == 1 and len(dups) == 15, outcomes
        assert all(r["duplicate_of"] == added[0]["id"] for r in dups)


def test_back_pressure(index):
    # One worker thread, one waiting connection: a third is answered 503 with Retry-After.
    s = Server(index, "--threads", 1, "--max-connections", 1, "--timeout", 3)
    try:
        held = []
        for _ in range(2):
            held.append(socket.create_connection(("127.0.0.1", s.port)))
            # The one fixed pause left in these tests: the service shows no sign of its worker
            # taking a connection off the queue (its socket count grows when it accepts one, before
            # that), and a second connection that finds the first still queued is refused itself.
            time.sleep(0.2)
        status, data, headers = s.request("GET", "/v1/stats", timeout=10)
        assert status == 503 and headers["Retry-After"] == "1" and "busy" in json.loads(data)["error"]
        for h in held:
            h.close()
        wait_until(lambda: s.request("GET", "/healthz")[0] == 200, "the service to take connections again", 15)
        _, text, _ = s.request("GET", "/metrics")
        assert re.search(r"neardup_refused_connections_total [1-9]", text)
    finally:
        assert s.stop() == 0
    # A batch larger than --max-pending could never get in: 413, nothing applied.
    s = Server(index, "--max-pending", 2)
    try:
        status, data, headers = s.request("POST", "/v1/add/batch", ndjson({"id": "p%d" % i, "text": "w%d words" % i} for i in range(3)))
        assert status == 413 and "--max-pending 2" in json.loads(data)["error"]
        assert s.json("GET", "/v1/docs/p0")[0] == 404
        assert s.request("POST", "/v1/add/batch", ndjson({"id": "p%d" % i, "text": "w%d words" % i} for i in range(2)))[0] == 200
        # Many batches at once against a queue of two changes: those that find it full are
        # answered 503 with Retry-After and left out; every one answered 200 is in.
        docs = sample_docs(400)
        seen_503 = False
        for attempt in range(5):
            results = []

            def send(j):
                body = ndjson({"id": "q%d-%d-%d" % (attempt, j, i), "text": docs[(j * 2 + i) % 400]["text"], "dedup": False} for i in range(2))
                results.append((j, s.request("POST", "/v1/add/batch", body)))

            threads = [threading.Thread(target=send, args=(j,)) for j in range(24)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            for j, (status, data, headers) in results:
                assert status in (200, 503), (status, data)
                if status == 503:
                    seen_503 = True
                    assert headers["Retry-After"] == "1"
                    assert s.json("GET", "/v1/docs/q%d-%d-0" % (attempt, j))[0] == 404
                else:
                    assert s.json("GET", "/v1/docs/q%d-%d-1" % (attempt, j))[0] == 200
            if seen_503:
                break
        assert seen_503
    finally:
        assert s.stop() == 0


def test_slow_client_times_out(index):
    s = Server(index, "--timeout", 1)
    try:
        slow = socket.create_connection(("127.0.0.1", s.port))
        slow.sendall(b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"te")
        # The server gives up on the body after its 1 s timeout and closes (with or without an
        # answer); were it to wait for ever, recv would raise at this socket's own 20 s.
        slow.settimeout(20)
        data = slow.recv(4096)
        assert data == b"" or data.startswith(b"HTTP/1.1 4")
        slow.close()
        assert s.request("GET", "/healthz")[0] == 200
    finally:
        assert s.stop() == 0


def test_graceful_shutdown_finishes_requests_in_flight(index):
    docs = sample_docs(300)
    s = Server(index)
    body = ndjson({"id": d["id"], "text": d["text"], "dedup": False} for d in docs).encode()
    c = socket.create_connection(("127.0.0.1", s.port))
    c.sendall(b"POST /v1/add/batch HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body) + body[: len(body) // 2])
    # A pause, as in test_back_pressure: a connection accepted but not yet taken by a worker is
    # closed by the shutdown, and the service shows no sign of a worker taking it.
    time.sleep(0.3)
    s.proc.send_signal(signal.SIGTERM)  # while the request is being read
    # The signal taken: no new connection is accepted, and the one in flight is still served.
    wait_until(lambda: refuses_connections(s.port), "the service to stop accepting after SIGTERM")
    assert s.proc.poll() is None
    c.sendall(body[len(body) // 2:])
    c.settimeout(30)
    answer = b""
    while b"\r\n\r\n" not in answer or answer.count(b"\n") < 300 + 5:
        chunk = c.recv(1 << 16)
        if not chunk:
            break
        answer += chunk
    c.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    assert s.proc.wait(timeout=60) == 0
    assert "folding the log" in "".join(s.rest)
    # Every add of the batch was acknowledged and is in the index file, folded.
    s2 = Server(index)
    try:
        status, st = s2.json("GET", "/v1/stats")
        assert st["documents"] == 300 and st["replayed"] == 0
    finally:
        assert s2.stop() == 0


def test_kill_9_under_load_loses_no_acknowledged_change(index):
    docs = sample_docs()
    acked, removed, deleting = set(), set(), set()  # deleting: sent, answer not seen (may or may not be applied)
    lock = threading.Lock()
    for round_ in range(3):
        # A small fold size in the first rounds, so that kills land during folds; the default in
        # the last, so that its kill leaves changes in the log for the restart to replay.
        s = Server(index, "--fold-mb", 1 if round_ < 2 else 256)
        stop = threading.Event()

        def load(k):
            rnd = random.Random(k + 100 * round_)
            c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
            i = k
            while not stop.is_set():
                d = docs[(i * 13 + round_ * 7) % len(docs)]
                i += 8
                doc_id = "r%d-%s-%d" % (round_, d["id"], i)
                try:
                    if rnd.random() < 0.1 and acked:
                        with lock:
                            live = sorted(acked - removed - deleting)
                            victim = rnd.choice(live) if live else None
                            if victim is not None:
                                deleting.add(victim)
                        if victim is None:
                            continue
                        c.request("DELETE", "/v1/docs/" + victim)
                        r = c.getresponse()
                        r.read()
                        if r.status == 200:
                            with lock:
                                removed.add(victim)
                                deleting.discard(victim)
                        continue
                    c.request("POST", "/v1/add", json.dumps({"id": doc_id, "text": d["text"], "dedup": False}))
                    r = c.getresponse()
                    r.read()
                    if r.status == 201:
                        with lock:
                            acked.add(doc_id)
                except (OSError, http.client.HTTPException):
                    return  # the server is gone

        threads = [threading.Thread(target=load, args=(k,)) for k in range(8)]
        for t in threads:
            t.start()
        # Killed after a different amount of work each round (so the kill lands elsewhere).
        goal = len(acked) + 60 + 80 * round_
        wait_until(lambda: len(acked) >= goal, "%d acknowledged adds" % goal, 60)
        s.proc.kill()  # SIGKILL: no chance to sync or fold
        s.proc.wait()
        stop.set()
        for t in threads:
            t.join()
        # Until the log is folded, every other command refuses the index (it would be stale).
        r = subprocess.run([CLI, "index", "stats", str(index)], capture_output=True, text=True)
        assert r.returncode in (0, 3)
        if r.returncode == 3:
            assert "index fold" in r.stderr

    assert len(acked) > 100
    s = Server(index)
    try:
        status, st = s.json("GET", "/v1/stats")
        assert st["replayed"] > 0  # the last kill left its round's changes in the log, replayed now
        # Adds applied but killed before their answer may be there too.
        assert st["documents"] >= len(acked - removed - deleting)
        missing = [i for i in sorted(acked - removed - deleting) if s.json("GET", "/v1/docs/" + i)[0] != 200]
        back = [i for i in sorted(removed) if s.json("GET", "/v1/docs/" + i)[0] != 404]
        assert not missing and not back
    finally:
        assert s.stop() == 0
    r = subprocess.run([CLI, "index", "verify", str(index)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert not os.path.exists(str(index) + ".wal") or os.path.getsize(str(index) + ".wal") == 64


def test_a_second_service_on_the_same_index_is_refused(server, index):
    r = subprocess.run([CLI, "serve", str(index), "--listen", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 4 and f"being changed by process {server.proc.pid} (neardup serve" in r.stderr, r.stderr


def raw_request(port, data, timeout=10):
    """Bytes sent as they are (http.client would fix a bad Content-Length); the reply's bytes, up
    to the end of its body (the connection may be kept alive), the close, or the timeout."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as c:
        c.sendall(data)
        out = b""
        while not whole_reply(out):
            try:
                chunk = c.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            out += chunk
    return out.decode(errors="replace")


def whole_reply(out):
    """Whether `out` holds a reply's head and as many body bytes as its Content-Length says."""
    head, sep, body = out.partition(b"\r\n\r\n")
    m = re.search(rb"(?im)^content-length:\s*(\d+)\s*$", head)
    return bool(sep) and m is not None and len(body) >= int(m.group(1))


def test_bodies_are_read_whatever_their_content_type(server):
    """curl -d sends application/x-www-form-urlencoded: bodies of any size up to the limit are
    taken as they are, as docs/serve.md's examples send them."""
    s = server
    text = " ".join("word%d" % i for i in range(3000))  # over 8 KiB
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    status, r = s.json("POST", "/v1/add", {"id": "big", "text": text}, headers=form)
    assert (status, r) == (201, {"id": "big", "added": True})
    status, data, _ = s.request("POST", "/v1/add/batch", ndjson({"id": "b%d" % i, "text": text + " %d" % i, "dedup": False}
                                                                 for i in range(5)), headers=form)
    assert status == 200 and all(json.loads(line)["added"] for line in data.splitlines())
    status, r = s.json("POST", "/v1/query", {"text": text}, headers=form)
    assert status == 200 and r["matches"][0]["id"] == "big"
    status, r = s.json("POST", "/v1/query", {"text": text}, headers={"Content-Type": "text/plain"})
    assert status == 200
    status, r = s.json("POST", "/v1/add", "--x\r\n", headers={"Content-Type": "multipart/form-data; boundary=x"})
    assert status == 415 and "multipart" in r["error"]


def test_a_bad_content_length_is_named(server):
    s = server
    for length in ("-5", "abc", "1e3", "12 34"):
        reply = raw_request(s.port, ("POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\n{}" % length).encode())
        assert reply.startswith("HTTP/1.1 400"), reply
        assert "is not a number of bytes" in reply and "over the limit" not in reply, reply
    # Fewer bytes than announced, then the client hangs up: a true message, no crash.
    reply = raw_request(s.port, b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"te", timeout=3)
    assert "413" not in reply.split("\r\n")[0]
    assert s.json("GET", "/healthz") == (200, {"status": "ok"})


def test_methods_no_endpoint_takes_are_404_in_json(server):
    for method in ("PATCH", "PUT", "OPTIONS"):
        for body in ({"id": "a", "text": "b"}, None):
            status, r = server.json(method, "/v1/add", body)
            assert status == 404 and r["error"].startswith("no endpoint %s /v1/add" % method), (method, body, status, r)
        reply = raw_request(server.port, ("%s /v1/add HTTP/1.1\r\nHost: x\r\n\r\n" % method).encode(), timeout=3)
        assert reply.startswith("HTTP/1.1 404"), reply


def test_quiet_with_port_0_still_says_where_it_listens(index):
    p = subprocess.Popen([CLI, "serve", str(index), "--listen", "127.0.0.1:0", "-q"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        url = p.stdout.readline().strip()
        m = re.fullmatch(r"http://127\.0\.0\.1:(\d+)", url)
        assert m, url
        # Named after its file, also when it started itself again (never "exe"): ps, pgrep -x.
        assert open(f"/proc/{p.pid}/comm").read().strip() == "neardup"
        c = http.client.HTTPConnection("127.0.0.1", int(m.group(1)), timeout=10)
        c.request("GET", "/healthz")
        assert c.getresponse().status == 200
    finally:
        p.send_signal(signal.SIGTERM)
        assert p.wait(timeout=60) == 0
    assert p.stderr.read() == ""


def limited_file_size(blocks):
    """A full disk, as far as the service's files go: writes past the size fail (EFBIG)."""
    import resource

    def set_limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (blocks * 1024, blocks * 1024))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    return set_limit


def test_a_full_disk_at_the_last_fold_is_reported_never_an_abort(index):
    """The disk fills before the fold a stop makes: SIGTERM ends with exit 4 and what to do, in one
    line; a restart on the full disk does the same; with room again every acknowledged change is
    there."""
    import resource
    text = lambda i: " ".join("w%d_%d" % (i, j) for j in range(3000))
    acked = []
    for attempt in range(2):
        s = Server.quiet(index, limited_file_size(400))
        proc = s.proc
        for i in range(3):
            doc_id = "a%d-%d" % (attempt, i)
            assert s.json("POST", "/v1/add", {"id": doc_id, "text": text(100 * attempt + i)})[0] == 201
            acked.append(doc_id)
        # The disk fills: the index file the fold writes does not fit.
        resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 4
        err = proc.stderr.read()
        assert "every acknowledged change is still in" in err and "terminate" not in err, err
        assert len(err.strip().splitlines()) == 1, err
    s = Server(index)
    try:
        for doc_id in acked:
            assert s.json("GET", "/v1/docs/" + doc_id)[0] == 200
    finally:
        assert s.stop() == 0


def test_a_full_disk_recovers_without_a_restart(index):
    """The log fills while serving: the adds that cannot be logged are answered 5xx naming the
    cause and are not applied; queries go on; once there is room again, adds succeed without a
    restart; and after one every acknowledged change, and none of the refused, is there."""
    import resource
    text = lambda i: " ".join("r%d_%d" % (i, j) for j in range(3000))

    def soft_limit():  # 200 KiB for the service's files, a soft limit it may be given back
        resource.setrlimit(resource.RLIMIT_FSIZE, (200 * 1024, resource.RLIM_INFINITY))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    s = Server.quiet(index, soft_limit)
    proc = s.proc
    acked, refused = [], []
    for i in range(12):
        status, r = s.json("POST", "/v1/add", {"id": "r%d" % i, "text": text(i)})
        if status == 201:
            acked.append("r%d" % i)
        else:
            assert status == 500 and "log" in r["error"] and "File too large" in r["error"], (status, r)
            refused.append("r%d" % i)
    assert acked and refused
    status, r = s.json("GET", "/healthz")
    assert status == 503 and "tried again" in r["error"], r
    for doc_id in refused:
        assert s.json("GET", "/v1/docs/" + doc_id)[0] == 404  # not applied
    status, r = s.json("POST", "/v1/query", {"text": text(0)})
    assert status == 200 and [m["id"] for m in r["matches"]] == ["r0"]
    # Room again: the same service takes changes.
    resource.prlimit(proc.pid, resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert s.json("POST", "/v1/add", {"id": "after", "text": text(99)})[0] == 201
    assert s.json("GET", "/healthz")[0] == 200
    acked.append("after")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=60) == 0
    s = Server(index)
    try:
        for doc_id in acked:
            assert s.json("GET", "/v1/docs/" + doc_id)[0] == 200
        for doc_id in refused:
            assert s.json("GET", "/v1/docs/" + doc_id)[0] == 404
    finally:
        assert s.stop() == 0


def test_the_cli_on_a_served_index_is_told_who_holds_it(server, index, tmp_path):
    docs = tmp_path / "d.jsonl"
    docs.write_text('{"id": "x", "text": "one two three four five six seven"}\n')
    assert server.json("POST", "/v1/add", {"id": "y", "text": "eight nine ten eleven twelve"})[0] == 201
    for args in (["index", "add", index, docs], ["index", "remove", index, "y"], ["index", "fold", index],
                 ["index", "create", index, "--force"]):
        r = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, timeout=30)
        assert r.returncode == 4, (args, r.stderr)
        assert "process %d (neardup serve" % server.proc.pid in r.stderr, r.stderr
    r = subprocess.run([CLI, "index", "query", str(index), str(docs)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 4 and "ask the service" in r.stderr and "index fold" not in r.stderr, r.stderr


def test_starting_on_a_full_disk_is_an_error_not_an_abort(index):
    """The log is made at start: where it cannot be written, the start fails with exit 4 and one line."""
    r = subprocess.run([CLI, "serve", str(index), "--listen", "127.0.0.1:0", "-q"], capture_output=True, text=True,
                       timeout=60, preexec_fn=limited_file_size(0))
    assert r.returncode == 4, r.stderr
    assert r.stderr.startswith("neardup: error: ") and ".wal" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
