#!/usr/bin/env python3
"""The HTML report against the run's own outputs, and rendered in headless Chromium.

    check_report.py NEARDUP SAMPLE_DIR CORPORA_DIR ARTEFACT_DIR

For the sample corpus (and SpamAssassin, when the corpora are there): `neardup dedup --report`
with --removed and --clusters, and `neardup pairs --report`; every number the page states is
compared with those files. Then Chromium renders each page: the DOM it builds must hold the
charts with their data points and the side-by-side diff, the log must show no console message,
and a screenshot is kept in ARTEFACT_DIR.
"""
import collections
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

BINS = 50


class Page(html.parser.HTMLParser):
    """The elements of a report with their attributes, and the text of each <h1>/<h3>."""

    def __init__(self):
        super().__init__()
        self.elements = []  # (tag, attrs, parent chart id)
        self.chart = None
        self.headings = []
        self._heading = None
        self.ticks = collections.defaultdict(list)  # chart id -> the texts of its ticks
        self._tick = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg":
            self.chart = a.get("id")
        self.elements.append((tag, a, self.chart))
        self._tick = tag == "text" and "tick" in a.get("class", "").split() and self.chart is not None
        if tag in ("h1", "h3"):
            self._heading = ""

    def handle_endtag(self, tag):
        if tag == "svg":
            self.chart = None
        if tag in ("h1", "h3") and self._heading is not None:
            self.headings.append(self._heading)
            self._heading = None

    def handle_data(self, data):
        if self._tick:
            self.ticks[self.chart].append(data)
            self._tick = False
        if self._heading is not None:
            self._heading += data

    def find(self, tag, cls=None, chart=None):
        return [a for t, a, c in self.elements
                if t == tag and (cls is None or cls in a.get("class", "").split()) and (chart is None or c == chart)]


def parse(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    return p


def fail(msg):
    print("FAIL:", msg, file=sys.stderr)
    sys.exit(1)


def bin_of(s):
    return min(BINS - 1, max(0, int(s * BINS)))


def check_labels(page, chart, lows, name):
    """Every bar of a histogram labelled by its lower end, or every k-th one (the first
    included) when there are more than ten; the last tick is the y axis's largest count."""
    ticks = page.ticks[chart][:-1]
    step = (len(lows) + 9) // 10
    if ticks != lows[::step]:
        fail(f"{name}: the {chart} histogram's labels {ticks} are not its bins' {lows[::step]}")


def check_dedup(page, removed_tsv, clusters_tsv, name):
    body = page.find("body")[0]
    removed = [line.split("\t") for line in open(removed_tsv, encoding="utf-8").read().splitlines()]
    clusters = [line.split("\t") for line in open(clusters_tsv, encoding="utf-8").read().splitlines()]
    if int(body["data-removed"]) != len(removed):
        fail(f"{name}: the page says {body['data-removed']} removed, --removed has {len(removed)}")
    cluster_ids = collections.Counter(c[0] for c in clusters)
    if int(body["data-clusters"]) != len(cluster_ids):
        fail(f"{name}: the page says {body['data-clusters']} clusters, --clusters has {len(cluster_ids)}")
    # The similarity histogram: one bar per bin from the first non-empty one, counts equal to
    # the similarities in --removed.
    want = collections.Counter(bin_of(float(r[2])) for r in removed)
    bars = page.find("rect", "bar", "similarities")
    got = {round(float(b["data-lo"]) * BINS): int(b["data-count"]) for b in bars}
    if {k: v for k, v in got.items() if v} != dict(want):
        fail(f"{name}: the similarity histogram differs from --removed")
    check_labels(page, "similarities", [f"{float(b['data-lo']):.2f}" for b in bars], name)
    # Cluster sizes: counts per size class, from --clusters.
    sizes = collections.Counter()
    for n in cluster_ids.values():
        c = max(1, (n - 1).bit_length())
        lo, hi = (2 if c <= 1 else (1 << (c - 1)) + 1), 1 << c
        sizes[str(lo) if lo == hi else f"{lo}-{hi}"] += 1
    got = {b["data-sizes"]: int(b["data-count"]) for b in page.find("rect", "bar", "cluster-sizes")}
    if got != dict(sizes):
        fail(f"{name}: cluster sizes {got} differ from --clusters {dict(sizes)}")
    # Removed per input: with every input listed (30 at most), the rows add up to the removed.
    rows = [r for r in page.find("tr") if "data-removed" in r]
    per_input = sum(int(r["data-removed"]) for r in rows)
    if not rows or (len(rows) < 30 and per_input != len(removed)) or per_input > len(removed):
        fail(f"{name}: the per-input table counts {per_input} removed of {len(removed)} in {len(rows)} rows")
    # Side by side: each pair's similarity is the one --removed gives for it, when it is a
    # removed document and its kept one.
    sims = {(r[1], r[0]): float(r[2]) for r in removed}
    blocks = page.find("section", "pair-block")
    if not blocks:
        fail(f"{name}: no pair side by side")
    heads = [h for h in page.headings if " and " in h and ": J = " in h]
    checked = 0
    for h, block in zip(heads, blocks):
        a, b = h.split(": J = ")[0].split(" and ")
        if (a, b) in sims:
            checked += 1
            if abs(sims[(a, b)] - float(block["data-similarity"])) > 1e-6:
                fail(f"{name}: {a} and {b}: the page says {block['data-similarity']}, --removed {sims[(a, b)]}")
    if checked == 0:
        fail(f"{name}: no pair side by side is a removed document with its kept one")


def check_pairs(page, pairs_tsv, name):
    body = page.find("body")[0]
    pairs = [line.split("\t") for line in open(pairs_tsv, encoding="utf-8").read().splitlines()]
    if int(body["data-pairs"]) != len(pairs):
        fail(f"{name}: the page says {body['data-pairs']} pairs, the output has {len(pairs)}")
    want = collections.Counter(bin_of(float(p[2])) for p in pairs)
    bars = page.find("rect", "bar", "similarities")
    got = {round(float(b["data-lo"]) * BINS): int(b["data-count"]) for b in bars}
    if {k: v for k, v in got.items() if v} != dict(want):
        fail(f"{name}: the pair histogram differs from the pairs written")
    check_labels(page, "similarities", [f"{float(b['data-lo']):.2f}" for b in bars], name)


def render(chromium, page_path, png, tmp):
    """Renders the page in headless Chromium: the DOM it built, its console, a screenshot."""
    common = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + tmp,
              "--enable-logging=stderr", "--v=0", "--window-size=1100,3000"]
    url = "file://" + os.path.abspath(page_path)
    dom = subprocess.run(common + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    if dom.returncode != 0:
        fail(f"chromium could not render {page_path}: {dom.stderr[-500:]}")
    console = [line for line in dom.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    if console:
        fail(f"{page_path}: console messages: {console[:3]}")
    shot = subprocess.run(common + ["--screenshot=" + png, url], capture_output=True, text=True, timeout=120)
    if shot.returncode != 0 or not os.path.getsize(png):
        fail(f"chromium made no screenshot of {page_path}")
    return dom.stdout


def check_rendered(dom, page_path, with_curve):
    # What Chromium built from the page: the charts with their data points, the diff.
    if len(re.findall(r'<rect class="bar"[^>]*data-count="\d+"', dom)) < 2:
        fail(f"{page_path}: the rendered page has no bars with data")
    if with_curve and (not re.search(r'<polyline class="curve"', dom) or not re.search(r'<circle class="point"[^>]*data-rate=', dom)):
        fail(f"{page_path}: the rendered page has no S-curve with measured points")
    if '<section class="pair-block"' not in dom or "<mark>" not in dom:
        fail(f"{page_path}: the rendered page has no side-by-side diff")


def main():
    neardup, sample, corpora, artefacts = sys.argv[1:5]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        fail("chromium is not installed (scripts/install-deps.sh test installs it)")
    os.makedirs(artefacts, exist_ok=True)
    runs = [("sample", os.path.join(sample, "mmds-articles-2500.jsonl.zst"), ["-k", "3", "-t", "0.5"])]
    spam = os.path.join(corpora, "spamassassin.jsonl.zst")
    if os.path.exists(spam):
        runs.append(("spamassassin", spam, []))
    else:
        print(f"SpamAssassin not found under {corpora}: its report skipped")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path, opts in runs:
            d = os.path.join(tmp, name)
            os.makedirs(d)
            subprocess.run([neardup, "dedup", path, "-o", os.path.join(d, "kept.jsonl"), "--removed", os.path.join(d, "removed.tsv"),
                            "--clusters", os.path.join(d, "clusters.tsv"), "--report", os.path.join(d, "dedup.html"), "-q"] + opts,
                           check=True)
            check_dedup(parse(os.path.join(d, "dedup.html")), os.path.join(d, "removed.tsv"), os.path.join(d, "clusters.tsv"), name)
            subprocess.run([neardup, "pairs", path, "-o", os.path.join(d, "pairs.tsv"), "--report", os.path.join(d, "pairs.html"), "-q"] + opts,
                           check=True)
            check_pairs(parse(os.path.join(d, "pairs.html")), os.path.join(d, "pairs.tsv"), name)
            for kind in ("dedup", "pairs"):
                page = os.path.join(d, kind + ".html")
                dom = render(chromium, page, os.path.join(artefacts, f"report-{name}-{kind}.png"), os.path.join(tmp, "chromium"))
                check_rendered(dom, page, with_curve=True)
    print("reports: numbers equal the outputs; rendered in Chromium; screenshots in", artefacts)


if __name__ == "__main__":
    main()
