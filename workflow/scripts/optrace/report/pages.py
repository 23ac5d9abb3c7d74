"""`optrace report-page`: a Markdown report rendered as one self-contained HTML page, for `snakemake --report`.

The report embeds each item as a data URI and shows HTML and images in the browser, but offers
Markdown only as a download whose relative links then point nowhere. So each Markdown report
(recon, partition, the staging and dataset READMEs) becomes a page of its own: the images it shows
(ladder plots) are embedded, a link to an image the page embeds jumps to it, and a link to a file
the page cannot carry is shown as its path. Only the Markdown the project's reports write is read:
headings, paragraphs, lists, tables, fenced code, `code`, **bold**, links and images.
"""

from __future__ import annotations

import argparse
import base64
import html
import re
import sys
from collections.abc import Callable
from pathlib import Path

from optrace.errors import InputError
from optrace.jsonio import write_text_atomic

IMAGE_TYPES = {".svg": "image/svg+xml", ".png": "image/png"}
MAX_IMAGE_BYTES = 8 * 1024 * 1024
STYLE = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:80em;padding:0 1em;color:#1e293b}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #cbd5e1;padding:.25em .5em;text-align:left}
th{background:#f1f5f9}code{background:#f1f5f9;padding:0 .2em}pre{background:#f1f5f9;padding:.5em;overflow:auto}
img{max-width:100%}"""

_INLINE = re.compile(r"`([^`]+)`|\*\*(.+?)\*\*|(!?)\[([^\]]*)\]\(([^)\s]+)\)")
_TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
_LIST_ITEM = re.compile(r"^(\s*)[-*] (.*)$")
_HEADING = re.compile(r"^(#{1,6}) (.*)$")


def anchor_of(target: str) -> str:
    """The id an embedded image gets, from the link that names it."""
    return "img-" + re.sub(r"[^a-z0-9]+", "-", target.lower()).strip("-")


class Page:
    """Renders one document; `image(target)` gives a data URI for a link target, or None."""

    def __init__(self, image: Callable[[str], str | None]):
        self.image = image
        self.embedded: set[str] = set()

    def inline(self, text: str) -> str:
        out, pos = [], 0
        for m in _INLINE.finditer(text):
            out.append(html.escape(text[pos : m.start()]))
            code, bold, bang, label, target = m.groups()
            if code is not None:
                out.append(f"<code>{html.escape(code)}</code>")
            elif bold is not None:
                out.append(f"<strong>{self.inline(bold)}</strong>")
            else:
                out.append(self.link(bool(bang), label, target))
            pos = m.end()
        return "".join(out) + html.escape(text[pos:])

    def link(self, is_image: bool, label: str, target: str) -> str:
        uri = self.image(target)
        if is_image and uri is not None:
            self.embedded.add(target)
            return f'<img id="{anchor_of(target)}" alt="{html.escape(label)}" src="{uri}">'
        if target.startswith("#") or re.match(r"https?://", target):
            return f'<a href="{html.escape(target)}">{html.escape(label)}</a>'
        if uri is not None:  # an image shown elsewhere on this page (see render: it is always embedded)
            return f'<a href="#{anchor_of(target)}">{html.escape(label)}</a>'
        return f"{html.escape(label)} (<code>{html.escape(target)}</code>)"

    def table(self, rows: list[str]) -> str:
        def cells(row: str) -> list[str]:
            return [c.strip() for c in row.strip().strip("|").split("|")]

        head, body = cells(rows[0]), [cells(r) for r in rows[2:]]
        out = ["<table><thead><tr>", *(f"<th>{self.inline(c)}</th>" for c in head), "</tr></thead><tbody>"]
        for r in body:
            out += ["<tr>", *(f"<td>{self.inline(c)}</td>" for c in r), "</tr>"]
        return "".join(out + ["</tbody></table>"])

    def blocks(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                i += 1
            elif line.startswith("```"):
                j = next((k for k in range(i + 1, len(lines)) if lines[k].startswith("```")), len(lines))
                out.append(f"<pre><code>{html.escape(chr(10).join(lines[i + 1 : j]))}</code></pre>")
                i = j + 1
            elif m := _HEADING.match(line):
                level = len(m.group(1))
                out.append(f"<h{level}>{self.inline(m.group(2))}</h{level}>")
                i += 1
            elif line.startswith("|") and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]):
                j = i + 2
                while j < len(lines) and lines[j].startswith("|"):
                    j += 1
                out.append(self.table(lines[i:j]))
                i = j
            elif _LIST_ITEM.match(line):
                items: list[str] = []
                while i < len(lines):
                    if m := _LIST_ITEM.match(lines[i]):
                        items.append(m.group(2))
                    elif items and lines[i].startswith("  ") and lines[i].strip():  # a wrapped item
                        items[-1] += " " + lines[i].strip()
                    else:
                        break
                    i += 1
                out.append("<ul>" + "".join(f"<li>{self.inline(t)}</li>" for t in items) + "</ul>")
            else:
                j = i
                while j < len(lines) and lines[j].strip() and not _starts_block(lines, j):
                    j += 1
                j = max(j, i + 1)
                out.append(f"<p>{self.inline(' '.join(s.strip() for s in lines[i:j]))}</p>")
                i = j
        return out


def _starts_block(lines: list[str], j: int) -> bool:
    line = lines[j]
    return line.startswith(("```", "|")) or bool(_HEADING.match(line) or _LIST_ITEM.match(line))


def render(markdown: str, title: str, image: Callable[[str], str | None]) -> str:
    """The whole page. An image a link names but no `![...]` shows is embedded at the end, so every
    link to an image jumps to it."""
    page = Page(image)
    body = page.blocks(markdown.splitlines())
    linked = [t for t in re.findall(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)", markdown) if image(t) is not None]
    extra = [t for t in dict.fromkeys(linked) if t not in page.embedded]
    if extra:
        body.append("<h2>Linked images</h2>")
        body += [f"<p>{page.link(True, t, t)}</p>" for t in extra]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head>\n<body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def image_from(folder: Path) -> Callable[[str], str | None]:
    """Data URIs for the images a report links to, relative to its folder; nothing outside it."""
    root = folder.resolve()
    cache: dict[str, str | None] = {}

    def image(target: str) -> str | None:
        if target not in cache:
            cache[target] = None
            path = (folder / target).resolve()
            kind = IMAGE_TYPES.get(path.suffix.lower())
            inside = path.is_relative_to(root) and ".." not in Path(target).parts
            if kind and inside and path.is_file() and path.stat().st_size <= MAX_IMAGE_BYTES:
                cache[target] = f"data:{kind};base64,{base64.b64encode(path.read_bytes()).decode('ascii')}"
        return cache[target]

    return image


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="optrace report-page", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("markdown", type=Path, help="a Markdown report")
    ap.add_argument("--out", required=True, type=Path, help="the HTML page to write")
    ap.add_argument("--title", help="the page's title (default: its first heading)")
    args = ap.parse_args(argv)
    try:
        text = args.markdown.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(args.markdown, f"cannot be read ({exc.__class__.__name__})") from None
    first = next((ln[2:].strip() for ln in text.splitlines() if ln.startswith("# ")), args.markdown.stem)
    write_text_atomic(args.out, render(text, args.title or first, image_from(args.markdown.parent)))
    print(f"report-page: {args.out}")
    return 0


if __name__ == "__main__":
    from optrace.cli import run_main

    sys.exit(run_main(main, sys.argv[1:]))
