"""report.html: the report's Markdown as one self-contained page to attach to a ticket or mail.

:func:`write_html` reads back the report.md and the plots/*.svg a rendering has just written (relative to the
descriptors of their checked directories, no symbolic link followed, each read bounded) and writes the page
beside the report.  :func:`render_html` is the pure part: Markdown in, HTML out.

What makes the page safe to open and to share:

- the Markdown is rendered by markdown-it-py with raw HTML and links disabled, so a device model, hostname or fio
  message that reached the report as text (``<script>``, ``</svg>``, ``[a](http://…)``) stays text: every ``<`` is
  escaped and no ``<a>`` is made (report.md escapes foreign text already: app.sanitize.md_text);
- an image is never an ``<img>``: a ``plots/NAME.svg`` the report names becomes that figure's SVG, inlined;
  anything else (a hostile string that looks like Markdown's image syntax) is shown as its text;
- an inlined SVG must look like matplotlib's: no script, no event handler, no foreign object, no entity, no
  reference outside itself (``href``/``url()`` only to ``#id``, or a ``data:image/png`` a raster is embedded
  as); its ids get a per-figure prefix so two figures' clip paths cannot collide in one document;
- a Content-Security-Policy allows no fetch and no script at all, so even a mistake here loads nothing.

No JavaScript: tables are plain HTML tables (sorting them would need script), and the stylesheet, with its
print rules, is inline.
"""

from __future__ import annotations

import errno
import html
import re
from pathlib import Path
from typing import Any, Callable, Sequence

from app.errors import UsageError
from app.results import NotRegularFile, read_regular, write_new

MAX_FIGURE_BYTES = 16 << 20  # one figure; the 1,008-point report's largest is about 0.5 MB
MAX_REPORT_BYTES = 64 << 20  # report.md read back
FIGURE_SRC = re.compile(r"plots/([A-Za-z0-9][A-Za-z0-9._+-]*\.svg)")

# nothing fetched, nothing run: inline styles, and data: images (matplotlib embeds a raster as a PNG data URI)
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'"

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif;
       color: #1b1f24; background: #fff; max-width: 76rem; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1, h2, h3, h4 { line-height: 1.2; margin: 1.6em 0 .5em; }
h1 { font-size: 1.9rem; margin-top: .2em; }
h2 { font-size: 1.45rem; border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
h3 { font-size: 1.15rem; }
code { font: .9em/1.3 ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; background: #f3f4f6;
       padding: .05em .3em; border-radius: 3px; }
pre { background: #f3f4f6; padding: .7em 1em; overflow-x: auto; border-radius: 4px; }
pre code { background: none; padding: 0; }
blockquote { margin: 0; padding: .1em 1em; border-left: 4px solid #d0d7de; color: #444c56; }
table { display: block; overflow-x: auto; border-collapse: collapse; margin: .8em 0; font-size: .88rem;
        font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .25em .55em; vertical-align: top; }
td[style*="right"], th[style*="right"] { white-space: nowrap; }  /* numbers stay whole; text columns wrap */
th { background: #f3f4f6; }
tbody tr:nth-child(even) { background: #f8f9fb; }
.figure { display: block; margin: .6em 0; overflow-x: auto; }
.figure svg { display: block; max-width: 100%; height: auto; }
.missing { color: #8a4b00; }
@media print {
  @page { margin: 14mm 12mm; }
  body { font-size: 10pt; max-width: none; padding: 0; }
  h1, h2, h3 { break-after: avoid; }
  table { display: table; font-size: 7.5pt; break-inside: auto; }
  th, td { padding: .15em .3em; }
  th { white-space: normal !important; }  /* long headers wrap so a wide table fits the page */
  tr, .figure, pre, blockquote { break-inside: avoid; }
  .figure svg { max-height: 24cm; width: auto; max-width: 100%; }
  a { color: inherit; text-decoration: none; }
}
"""

# what matplotlib's SVG never holds: anything that runs, loads or declares.  Checked in the markup only (tags and
# the stylesheet): text is escaped there, so a label such as "url(x) onload=" drawn from a device model is not markup
_TAG = re.compile(r"<[^>]*>")
_STYLE = re.compile(r"<style\b[^>]*>(.*?)</style>", re.IGNORECASE | re.DOTALL)
_BAD_TAG = re.compile(r"<\s*/?\s*(script|foreignObject|iframe|object|embed|animate|set|handler|a)\b|<[!?]",
                      re.IGNORECASE)
_HANDLER = re.compile(r"\son[a-z]+\s*=", re.IGNORECASE)
_HREF = re.compile(r"\bhref\s*=\s*(\"[^\"]*\"|'[^']*')", re.IGNORECASE)
_URL = re.compile(r"url\(\s*([^)]*)\)", re.IGNORECASE)
_SVG_START = re.compile(r"<svg\b")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.DOTALL)
_ID = re.compile(r"\bid=\"([^\"]+)\"")
_REF = re.compile(r"(url\(#|href=\"#)([^\")]+)")


class FigureRefused(ValueError):
    """An SVG that is not what the report draws (it runs, loads or declares something)."""


def inline_svg(text: str, prefix: str) -> str:
    """The ``<svg>…</svg>`` element of a matplotlib SVG file, checked and with every id (and every reference to
    one) prefixed with ``prefix``; :class:`FigureRefused` naming why when it is not such a file."""
    start = _SVG_START.search(text)
    end = text.rfind("</svg>")
    if start is None or end < start.start():
        raise FigureRefused("it holds no <svg> element")
    body = _METADATA.sub("", text[start.start(): end + len("</svg>")], count=1)  # matplotlib's credit: not drawn
    body = _COMMENT.sub("", body)  # mathtext's source of a label; whatever follows a first "-->" is checked below
    if body.count("<svg") != 1 or body.count("</svg>") != 1:  # matplotlib draws one, never nested
        raise FigureRefused("it holds more than one <svg> element")
    for tag in _TAG.findall(body):
        _check_markup(tag, tag)
    for style in _STYLE.findall(body):
        if "@import" in style.lower():
            raise FigureRefused("its stylesheet imports another")
        _check_markup(style, "its stylesheet")
    body = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', body)
    return _REF.sub(lambda m: f"{m.group(1)}{prefix}{m.group(2)}", body)


def _check_markup(markup: str, what: str) -> None:
    """FigureRefused when ``markup`` (a tag, or the stylesheet) runs or loads something."""
    if m := _BAD_TAG.search(markup):
        raise FigureRefused(f"it holds {m.group()[:24]!r}")
    if _HANDLER.search(markup):
        raise FigureRefused(f"it holds an event handler in {what[:40]!r}")
    for m in _HREF.finditer(markup):
        target = m.group(1)[1:-1].strip()
        if not (target.startswith("#") or target.startswith("data:image/png;base64,")):
            raise FigureRefused(f"it refers to {target[:40]!r}")
    for m in _URL.finditer(markup):
        if not m.group(1).strip().strip("'\"").startswith("#"):
            raise FigureRefused(f"it refers to url({m.group(1)[:40]})")


def markdown_parser() -> Any:
    """markdown-it as the page reads report.md: CommonMark with tables; no raw HTML, and no link of any kind
    (``[a](b)``, ``<http://…>``, a reference, a bare URL): the report writes none, so any is foreign text, shown as
    it is written."""
    from markdown_it import MarkdownIt

    return (MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable("table")
            .disable(["link", "autolink", "reference"]))


def render_html(markdown: str, figure: Callable[[str], str | None]) -> str:
    """The page for ``markdown``: ``figure(NAME)`` gives the inlined ``<svg>`` of ``plots/NAME`` (None: not there,
    shown as a line saying so)."""
    md = markdown_parser()

    def image(renderer: Any, tokens: Sequence[Any], idx: int, options: Any, env: Any) -> str:
        token = tokens[idx]
        alt = renderer.renderInlineAsText(token.children or [], options, env)
        src = str(token.attrGet("src") or "")
        m = FIGURE_SRC.fullmatch(src)
        svg = figure(m.group(1)) if m else None
        if svg is not None:
            return f'<span class="figure" role="img" aria-label="{html.escape(alt)}">{svg}</span>'
        if m:
            return f'<span class="missing">[figure {html.escape(src)} is missing: {html.escape(alt)}]</span>'
        return html.escape(f"![{alt}]({src})")  # never an <img>: nothing is fetched, whatever the text says

    md.add_render_rule("image", image)
    env: dict[str, Any] = {}
    tokens = md.parse(markdown, env)
    renderer: Any = md.renderer  # markdown-it's HTML renderer (its protocol type lacks renderInlineAsText)
    body = renderer.render(tokens, md.options, env)
    # the first level-1 heading as plain text (Markdown's escapes undone), else a fixed name
    title = next((renderer.renderInlineAsText(inline.children or [], md.options, env)
                  for head, inline in zip(tokens, tokens[1:]) if head.type == "heading_open" and head.tag == "h1"),
                 "profiler-tui report")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<meta name=\"generator\" content=\"profiler-tui\">\n"
            f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n")


def html_path(report_path: Path) -> Path:
    """Where report.html goes for the Markdown report ``report_path``: the same name with ``.html``."""
    return report_path.with_suffix(".html")


def write_html(report_path: Path, base_fd: int, plots_fd: int, html_name: str) -> None:
    """``html_name`` in ``base_fd``: the page of the report ``report_path`` (its name in ``base_fd``), its figures
    read from ``plots_fd``.  UsageError naming the file when report.md or a figure cannot be read or is refused;
    OSError when the page cannot be written (the caller words it)."""
    base = report_path.parent
    markdown = _read(report_path.name, base_fd, MAX_REPORT_BYTES, report_path).decode("utf-8", "replace")
    inlined: dict[str, str] = {}

    def figure(name: str) -> str | None:
        if name not in inlined:
            shown = base / "plots" / name
            try:
                data = _read(name, plots_fd, MAX_FIGURE_BYTES, shown)
            except FileNotFoundError:
                return None
            try:
                inlined[name] = inline_svg(data.decode("utf-8"), f"f{len(inlined) + 1}-")
            except (UnicodeDecodeError, FigureRefused) as e:
                why = "it is not UTF-8 text" if isinstance(e, UnicodeDecodeError) else str(e)
                raise UsageError(f"{shown}: not inlined into {html_name}: {why}; render the report again.") from None
        return inlined[name]

    write_new(html_name, render_html(markdown, figure).encode("utf-8"), dir_fd=base_fd)


def _read(name: str, dir_fd: int, limit: int, shown: Path) -> bytes:
    """``name`` in ``dir_fd``, at most ``limit`` bytes, no symbolic link followed; UsageError (naming ``shown``) when
    it is no regular file, too large or unreadable; FileNotFoundError when it is not there."""
    try:
        data = read_regular(name, limit, dir_fd=dir_fd)
    except NotRegularFile:
        raise UsageError(f"{shown}: is not a regular file; refusing to read it into the HTML report.") from None
    except FileNotFoundError:
        raise
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UsageError(f"{shown}: is a symbolic link; refusing to read it into the HTML report.") from None
        raise UsageError(f"{shown}: cannot be read ({e.strerror or e}).") from None
    if len(data) > limit:
        raise UsageError(f"{shown}: larger than {limit >> 20} MiB; refusing to read it into the HTML report.")
    return data


__all__ = ["write_html", "render_html", "inline_svg", "html_path", "FigureRefused", "MAX_FIGURE_BYTES"]
