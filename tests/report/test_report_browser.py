"""`snakemake --report` in a real browser (#29): the report loads in headless Chromium, and every item it
embeds is a page Chromium renders (no Markdown offered as a download), whose images are embedded and
whose links lead somewhere on the page. Skipped cleanly where no Chromium is installed (.ci/run
installs Debian's chromium). The "Job parameters" of each item hold nothing internal (read from the
report itself, browser or not)."""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.support.workflow import run_snakemake

pytestmark = pytest.mark.workflow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# What Chromium needs on this machine (no sandbox as root, no network to reach for).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
ITEM = re.compile(r'"data_uri": "data:([^;]+);charset=utf8;filename=([^;]+);base64,([A-Za-z0-9+/=]+)"')


def rendered(url: str, profile) -> str:
    """The DOM Chromium builds for url, scripts run."""
    res = subprocess.run(
        [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    return res.stdout


class Dom(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.text.append(data)


def parse(html: str) -> Dom:
    dom = Dom()
    dom.feed(html)
    return dom


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(the workflow copy, its denylist, the report) of one run with a denylist named."""
    from tests.support.workflow import copy_workflow

    wd = copy_workflow(tmp_path_factory.mktemp("report") / "wf")
    denylist = wd.parent / "denylist.txt"
    denylist.write_text("zz-private-term-r5\n")
    env = {**os.environ, "ATREX_WIKI_DENYLIST": str(denylist)}
    run_snakemake(wd, env=env)
    run_snakemake(wd, "--report", "report.html", env=env)
    return wd, denylist, wd / "report.html"


@pytest.fixture(scope="module")
def report(built):
    if CHROMIUM is None:
        pytest.skip("no Chromium installed (Debian: apt-get install chromium)")
    return built[2]


def test_the_report_opens_in_chromium(report, tmp_path):
    dom = parse(rendered(report.as_uri(), tmp_path / "profile"))
    text = " ".join(" ".join(dom.text).split())
    assert "Please enable Javascript" not in text.replace(
        "Please enable Javascript in your browser to see this report.", ""
    )
    for category in ("Results", "Traces"):
        assert category in text, text[:500]


def test_every_item_is_a_page_chromium_renders_with_its_images_and_links(report, tmp_path):
    items = [(unquote(name), mime, base64.b64decode(data)) for mime, name, data in ITEM.findall(report.read_text())]
    names = sorted(name for name, _, _ in items)
    # the recon, partition and both READMEs as pages, the ladder plot as an image; no Markdown item
    assert names.count("README.html") == 2 and {"recon.html", "partition.html", "ladder.svg"} <= set(names), names
    assert all(mime in ("text/html", "image/svg+xml") for _, mime, _ in items)
    pages = 0
    for i, (name, mime, body) in enumerate(items):
        if mime != "text/html":
            continue
        page = tmp_path / f"{i}-{name}"
        page.write_bytes(body)
        dom = parse(rendered(page.as_uri(), tmp_path / f"profile-{i}"))
        tags = [t for t, _ in dom.tags]
        assert "h1" in tags, name
        ids = {a["id"] for _, a in dom.tags if "id" in a}
        for tag, attrs in dom.tags:
            if tag == "img":
                assert attrs["src"].startswith("data:image/"), (name, attrs)  # embedded: nothing to fetch
            if tag == "a":
                href = attrs.get("href", "")
                assert href.startswith(("https://", "http://")) or href[1:] in ids, (name, href)  # no dead link
        pages += 1
    assert pages == 4
    recon = next(body for name, _, body in items if name == "recon.html")
    assert b'<img id="img-ladder-svg"' in recon  # the recon page shows its ladder plot


# An item's record in the report: its rule, wildcards and "Job parameters" (Snakemake formats job.params).
JOB = re.compile(r'"job_properties": (\{"rule": "[^"]*", "wildcards": "[^"]*", "params": "(?:[^"\\]|\\.)*"\})')


def internals(wd: Path, denylist: Path) -> dict[str, str]:
    """What a reviewer has no use for, by the values this run used: the command prefix (PYTHONPATH, the
    interpreter, `-m optrace`), the per-trace guard, every command's code digest, the package data digests
    and the denylist's."""
    from optrace.cli import MODULES
    from optrace.example.embedded import source_digest
    from optrace.run import codedigest

    pkg = wd / "workflow" / "scripts" / "optrace"
    found = {
        "PYTHONPATH": "PYTHONPATH",
        "package path": str(pkg.parent),
        "interpreter": sys.executable,
        "-m optrace": "-m optrace",
        "guard": "pertrace",
        "main digest": codedigest.digest(pkg, "__main__"),
        "targets digest": codedigest.file_digest(pkg / "ingest" / "targets.yaml"),
        "example digest": source_digest(pkg / "example" / "sources" / "trace.yaml"),
        "denylist digest": codedigest.file_digest(denylist),
    }
    for command, module in MODULES.items():
        found[f"{command} code digest"] = codedigest.digest(pkg, module.partition(".")[2])
    return found


def test_no_item_shows_an_internal_parameter(built):
    wd, denylist, report = built
    items = [json.loads(m) for m in JOB.findall(report.read_text())]
    rules = sorted(i["rule"] for i in items)  # recon: the page and the ladder plot
    assert rules == ["dataset_build", "partition_trace", "readme", "recon_trace", "recon_trace"], rules
    hidden = internals(wd, denylist)
    assert len(set(hidden.values())) == len(hidden)  # every digest computed, none empty or shared
    shown = {(i["rule"], name) for i in items for name, value in hidden.items() if value and value in i["params"]}
    assert shown == set(), shown
    # the denylist's digest is not in a rule's code either (the stamp file carries it): nowhere in the report
    assert hidden["denylist digest"] not in report.read_text()
    recon = next(i for i in items if i["rule"] == "recon_trace")
    assert "ladder=--milestone-pct" in recon["params"]  # what means something to a reviewer stays
