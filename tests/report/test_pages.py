"""Markdown reports as self-contained HTML pages (#29): what the project's reports write renders, images
are embedded, a link to an embedded image jumps to it, nothing outside the report's folder is read."""

from __future__ import annotations

import base64
import re
import subprocess
import sys
from html.parser import HTMLParser

from optrace.report.pages import anchor_of, image_from, render

SVG = b'<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'
DOC = """# Staging store

Some **bold** text with `a <b> | code` and a [ladder](reports/t/ladder.svg) link.

| trace | ladder |
|---|---|
| t <x> | [ladder](reports/t/ladder.svg) |

- an item
  that wraps
- another with [a page](https://example.org/x)

```python
samples = load("results/dataset")  # <not a tag>
```

![t ladder](reports/t/ladder.svg)

See [the recon](reports/t/recon.md) and ![missing](reports/u/ladder.svg).
"""


class Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.open: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag not in ("img", "meta"):
            self.open.append(tag)

    def handle_endtag(self, tag):
        assert self.open and self.open[-1] == tag, (self.open, tag)  # well nested
        self.open.pop()


def page(tmp_path, doc=DOC):
    (tmp_path / "reports" / "t").mkdir(parents=True)
    (tmp_path / "reports" / "t" / "ladder.svg").write_bytes(SVG)
    (tmp_path / "reports" / "t" / "recon.md").write_text("# recon\n")
    out = render(doc, "Staging store", image_from(tmp_path))
    tags = Tags()
    tags.feed(out)
    assert tags.open == []
    return out, tags.tags


def test_the_reports_markdown_renders_as_well_formed_html(tmp_path):
    out, tags = page(tmp_path)
    names = [t for t, _ in tags]
    for tag in ("h1", "table", "th", "td", "ul", "li", "pre", "code", "strong"):
        assert tag in names, tag
    assert "<td>t &lt;x&gt;</td>" in out and "a &lt;b&gt; | code" in out and "# &lt;not a tag&gt;" in out
    assert "<li>an item that wraps</li>" in out
    assert '<a href="https://example.org/x">a page</a>' in out


def test_images_are_embedded_and_every_link_to_one_jumps_to_it(tmp_path):
    out, tags = page(tmp_path)
    images = [a for t, a in tags if t == "img"]
    assert len(images) == 1 and images[0]["id"] == anchor_of("reports/t/ladder.svg")
    assert base64.b64decode(images[0]["src"].split(",", 1)[1]) == SVG
    links = [a["href"] for t, a in tags if t == "a"]
    assert links.count(f"#{images[0]['id']}") == 2
    # a link to something the page cannot carry is shown as its path; a missing image as its text
    assert "the recon (<code>reports/t/recon.md</code>)" in out and "missing (<code>reports/u/ladder.svg</code>)" in out


def test_an_image_only_linked_to_is_embedded_at_the_end(tmp_path):
    out, tags = page(tmp_path, "# r\n\n[ladder](reports/t/ladder.svg)\n")
    assert "<h2>Linked images</h2>" in out and [t for t, _ in tags].count("img") == 1
    assert f'href="#{anchor_of("reports/t/ladder.svg")}"' in out


def test_nothing_outside_the_reports_folder_is_embedded(tmp_path):
    (tmp_path / "secret.svg").write_bytes(SVG)
    inner = tmp_path / "staging"
    inner.mkdir()
    (inner / "link.svg").symlink_to(tmp_path / "secret.svg")
    image = image_from(inner)
    assert image("../secret.svg") is None and image("link.svg") is None and image("/etc/hostname") is None


def test_the_command_writes_a_page_and_names_an_unreadable_file_in_one_line(tmp_path):
    (tmp_path / "r.md").write_text("# Recon: t\n\n![ladder plot](ladder.svg)\n")
    (tmp_path / "ladder.svg").write_bytes(SVG)
    cmd = [sys.executable, "-m", "optrace", "report-page"]
    res = subprocess.run([*cmd, tmp_path / "r.md", "--out", tmp_path / "r.html"], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<title>Recon: t</title>" in html and re.search(r'<img id="img-ladder-svg" alt="ladder plot"', html)
    (tmp_path / "bad.md").write_bytes(b"\xff\xfe")
    res = subprocess.run([*cmd, tmp_path / "bad.md", "--out", tmp_path / "b.html"], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "bad.md" in res.stderr
