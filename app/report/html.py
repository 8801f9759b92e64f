"""report.html: the report's Markdown as one self-contained page to attach to a ticket or mail.

:func:`write_html` reads back the report.md and the plots/*.svg a rendering has just written (relative to the
descriptors of their checked directories, no symbolic link followed, each read bounded) and writes the page
beside the report.  :func:`render_html` is the pure part: Markdown in, HTML out.

What makes the page safe to open and to share:

- the Markdown is rendered by markdown-it-py with raw HTML and links disabled, so a device model, hostname or fio
  message that reached the report as text (``<script>``, ``</svg>``, ``[a](http://…)``) stays text: every ``<`` is
  escaped and no ``<a>`` is made (report.md escapes foreign text already: app.core.sanitize.md_text);
- an image is never an ``<img>``: a ``plots/NAME.svg`` the report names becomes that figure's SVG, inlined;
  anything else (a hostile string that looks like Markdown's image syntax) is shown as its text;
- an inlined SVG is parsed (XML, no declaration or entity of its own: only matplotlib's prolog precedes it) and
  checked against an allow-list of what matplotlib's SVG backend writes — its elements, their attributes, references
  only to ``#id`` (or a ``data:image/png`` a raster is embedded as), styles of a CSS subset (its properties; words,
  numbers, colours and ``url(#id)``: no escape, no at-rule) — then written again from the checked tree, so what is
  inlined is what was checked; its ids get a per-figure prefix so two figures' clip paths cannot collide;
- a Content-Security-Policy allows no fetch and no script at all, so even a mistake here loads nothing.

No JavaScript: tables are plain HTML tables (sorting them would need script), and the stylesheet, with its
print rules, is inline.  Read on a desktop or a phone, nothing is cut: tables wrap to their column (on a narrow
screen a wide one becomes a card per row: :func:`_label_cells`), and a figure is never shown smaller than makes
its smallest text 11 px (:func:`_least_width`; it scrolls in its frame instead).
"""

from __future__ import annotations

import errno
import html
import math
import re
from pathlib import Path
from typing import Any, Callable, Sequence
from xml.etree import ElementTree

from app.core.errors import UsageError
from app.store.results import NotRegularFile, read_regular, write_new

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
table { display: block; max-width: 100%; width: max-content; overflow-x: auto; border-collapse: collapse;
        margin: .8em 0; font-size: .88rem; font-variant-numeric: tabular-nums;
        scrollbar-width: thin; scrollbar-color: #8c959f #eef0f3; }  /* a last resort, with a scrollbar one sees */
th, td { border: 1px solid #d0d7de; padding: .25em .55em; vertical-align: top; }
td { overflow-wrap: anywhere; }  /* a long word (a path, a model) wraps; a table fits its column */
td[style*="right"] { overflow-wrap: normal; }  /* a number wraps only at a space, never inside */
th { background: #f3f4f6; }
tbody tr:nth-child(even) { background: #f8f9fb; }
.figure { display: block; margin: .6em 0; overflow-x: auto; scrollbar-width: thin;
          scrollbar-color: #8c959f #eef0f3; }
.figure svg { display: block; max-width: 100%; height: auto; }  /* min-width per figure: its text ≥ 11 px */
@media screen and (max-width: 40rem) {  /* a phone: a table of four or more columns becomes a card per row */
  body { padding: 1rem .9rem 3rem; }
  table.cards { display: block; width: auto; overflow: visible; border: 0; }
  table.cards thead { display: none; }
  table.cards tbody, table.cards tr { display: block; }
  table.cards tr { border: 1px solid #d0d7de; border-radius: 4px; margin: .6em 0; padding: .3em .6em; }
  table.cards td { display: grid; grid-template-columns: minmax(6.5em, 42%) 1fr; gap: .2em .7em; border: 0;
                   padding: .12em 0; text-align: left !important; overflow-wrap: anywhere; }
  table.cards td::before { content: attr(data-label); font-weight: 600; color: #444c56; }
  table.cards td:empty { display: none; }
  table.cards td:first-child { font-weight: 600; }
}
.missing { color: #8a4b00; }
@media print {
  @page { margin: 14mm 12mm; }
  body { font-size: 10pt; max-width: none; padding: 0; }
  h1, h2, h3 { break-after: avoid; }
  table { display: table; font-size: 7.5pt; break-inside: auto; }
  th, td { padding: .15em .3em; }
  th { white-space: normal !important; }  /* long headers wrap so a wide table fits the page */
  tr, .figure, pre, blockquote { break-inside: avoid; }
  .figure svg { max-height: 24cm; width: auto; max-width: 100%; min-width: 0 !important; }  /* paper: whole */
  a { color: inherit; text-decoration: none; }
}
"""

# --- the figures: an SVG is parsed, checked against what matplotlib writes, and written again -------------------

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}"
XML = "{http://www.w3.org/XML/1998/namespace}"
# matplotlib's prolog, the only text allowed before <svg: its XML declaration and the SVG 1.1 DOCTYPE (a public
# identifier, no internal subset: no entity is declared)
_PROLOG = re.compile(r'\s*(?:<\?xml version="1\.0" encoding="utf-8"(?: standalone="no")?\?>\s*)?'
                     r'(?:<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1\.1//EN"\s+'
                     r'"http://www\.w3\.org/Graphics/SVG/1\.1/DTD/svg11\.dtd">\s*)?')
# a declaration after the prolog (<!DOCTYPE, <!ENTITY …): only comments and CDATA may start with "<!"
_DECLARATION = re.compile(r"<!(?!--|\[CDATA\[)")
# the elements matplotlib's SVG backend writes for the report's figures (not <a>, which it writes for a URL the
# report never sets, nor its gradients and filters, which only Gouraud shading uses); <metadata> is dropped
ELEMENTS = frozenset({"svg", "g", "defs", "style", "path", "use", "clipPath", "rect", "text", "tspan", "image",
                      "pattern", "title", "desc"})
METADATA = f"{SVG}metadata"
# their attributes; CSS properties (in a style attribute or the stylesheet, or as presentation attributes)
ATTRIBUTES = frozenset({"id", "d", "style", "transform", "x", "y", "dx", "dy", "width", "height", "viewBox", "version",
                        "type", "patternUnits", "xlink:href", "href", "xml:space", "clip-path", "opacity"})
CSS_PROPERTIES = frozenset({
    "fill", "fill-opacity", "fill-rule", "stroke", "stroke-width", "stroke-linecap", "stroke-linejoin",
    "stroke-dasharray", "stroke-dashoffset", "stroke-opacity", "stroke-miterlimit", "opacity", "clip-path",
    "font-size", "font-family", "font-style", "font-weight", "font-variant", "font-stretch", "text-anchor",
    "dominant-baseline", "image-rendering", "letter-spacing", "white-space"})
_ID_TEXT = re.compile(r"[A-Za-z_][\w.:-]{0,127}")
_CSS_VALUE = re.compile(r"(?:url\(#[A-Za-z_][\w.:-]{0,127}\)|[-\w\s.,#%'\"])*")  # no function but url(#id)
# a number, a path, a word, a transform: a '(' only after one of the transform functions (so no url( either)
_GEOMETRY = re.compile(r"(?:(?:matrix|translate|scale|rotate|skewX|skewY)\s*\(|[-+\w\s.,)])*")
_DECLARATION_LIST = re.compile(r"\s*([a-z-]+)\s*:([^;]*)")
_RULE = re.compile(r"\s*([\w\s.#*,:>-]+?)\s*\{([^{}]*)\}\s*")  # a selector and its declarations
_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=\s]*")
_URL_ID = re.compile(r"url\(#([^)]*)\)")


class FigureRefused(ValueError):
    """An SVG that is not what the report draws (it runs, loads or declares something)."""


def inline_svg(text: str, prefix: str) -> str:
    """The ``<svg>…</svg>`` element of a matplotlib SVG file, parsed, checked against what matplotlib writes (its
    elements and attributes, references to ``#id`` only, a CSS subset, a PNG as the only image) and written again
    from the checked tree — so what is inlined is what was checked — with every id (and every reference to one)
    prefixed with ``prefix``; :class:`FigureRefused` naming why when it is not such a file."""
    start = text.find("<svg")
    if start < 0:
        raise FigureRefused("it holds no <svg> element")
    if not _PROLOG.fullmatch(text[:start]):
        raise FigureRefused("what precedes its <svg> element is not the SVG prolog matplotlib writes")
    body = text[start:]
    if m := _DECLARATION.search(body):
        raise FigureRefused(f"it declares something ({body[m.start():m.start() + 24]!r})")
    try:
        root = ElementTree.fromstring(body)  # comments and processing instructions are not kept
    except ElementTree.ParseError as e:
        raise FigureRefused(f"it is not well-formed XML ({e})") from None
    if root.tag != f"{SVG}svg":
        raise FigureRefused("its root element is not <svg>")
    for parent in root.iter():
        for child in [c for c in parent if c.tag == METADATA]:  # matplotlib's credit: not drawn
            parent.remove(child)
    for element in root.iter():
        _check_element(element)
    if (least := _least_width(root)) is not None:
        root.set("style", f"min-width: {least}px")
    return _write(root, prefix, top=True)


MIN_TEXT_PX = 11.0  # the smallest text a figure may be shown with in the page
_FONT_SIZE = re.compile(r"(?:^|;)\s*font-size\s*:\s*([0-9.]+)px")


def _least_width(root: ElementTree.Element) -> int | None:
    """The narrowest the figure may be drawn, in CSS pixels: where its smallest text is ``MIN_TEXT_PX`` high (text
    sizes and the viewBox are in the same user units, so the width is MIN_TEXT_PX · viewBox width / smallest size).
    Narrower than that the page lets the figure scroll sideways in its frame rather than shrink it.  None when it
    has no viewBox or no sized text."""
    try:
        view = float((root.get("viewBox") or "").split()[2])
    except (IndexError, ValueError):
        return None
    sizes = [float(m.group(1)) for e in root.iter() if _name(e.tag) in ("text", "tspan")
             if (m := _FONT_SIZE.search(e.get("style") or "")) and float(m.group(1)) > 0]
    sizes += [float(size) for e in root.iter() if _name(e.tag) in ("text", "tspan")
              if (size := e.get("font-size")) and re.fullmatch(r"[0-9.]+", size) and float(size) > 0]
    if not sizes or view <= 0:
        return None
    return math.ceil(MIN_TEXT_PX * view / min(sizes)) + 1  # + 1: the browser lays out in fractions of a pixel


def _name(tag: str) -> str:
    """An element's or attribute's name as SVG in HTML spells it ("clipPath", "xlink:href"); the namespace
    URI kept in braces for one the figures do not use."""
    for uri, prefix in ((SVG, ""), (XLINK, "xlink:"), (XML, "xml:")):
        if tag.startswith(uri):
            return prefix + tag[len(uri):]
    return tag


def _check_element(element: ElementTree.Element) -> None:
    tag = _name(element.tag)
    if tag not in ELEMENTS or tag.startswith(("xlink:", "xml:")):
        raise FigureRefused(f"it holds the element <{tag[:40]}>")
    for key, value in element.attrib.items():
        name = _name(key)
        if name not in ATTRIBUTES and name not in CSS_PROPERTIES:
            raise FigureRefused(f"it holds the attribute {name[:40]!r} on <{tag}>")
        if name in ("href", "xlink:href"):
            if not (value.startswith("#") and _ID_TEXT.fullmatch(value[1:])
                    or tag == "image" and _PNG.fullmatch(value)):
                raise FigureRefused(f"it refers to {value[:40]!r}")
        elif name == "id":
            if not _ID_TEXT.fullmatch(value):
                raise FigureRefused(f"it holds the id {value[:40]!r}")
        elif name == "style":
            _check_declarations(value)
        elif name == "type":
            if value != "text/css":
                raise FigureRefused(f"it holds a stylesheet of type {value[:40]!r}")
        elif not (_CSS_VALUE if name in CSS_PROPERTIES else _GEOMETRY).fullmatch(value):
            raise FigureRefused(f"it holds {name}={value[:40]!r}")
    if tag == "style":
        _check_stylesheet(element.text or "")
    elif len(element) and tag in ("text", "tspan", "title", "desc") and any(_name(c.tag) != "tspan" for c in element):
        raise FigureRefused(f"it holds an element in <{tag}>")


def _check_declarations(css: str) -> None:
    """FigureRefused unless ``css`` is declarations of the properties matplotlib writes, with values of words,
    numbers, colours and url(#id) only (no escape, no at-rule, no function that loads)."""
    for part in css.split(";"):
        if not part.strip():
            continue
        m = _DECLARATION_LIST.fullmatch(part)
        if m is None or m.group(1) not in CSS_PROPERTIES or not _CSS_VALUE.fullmatch(m.group(2)):
            raise FigureRefused(f"its style holds {part.strip()[:40]!r}")


def _check_stylesheet(css: str) -> None:
    rest = css
    while rest.strip():
        m = _RULE.match(rest)
        if m is None:
            raise FigureRefused(f"its stylesheet holds {rest.strip()[:40]!r}")
        _check_declarations(m.group(2))
        rest = rest[m.end():]


def _quoted(value: str) -> str:
    """An attribute's value between double quotes: '&', '<', '>' and '"' escaped (a font list keeps its "'")."""
    return html.escape(value, quote=False).replace('"', "&quot;")


def _write(element: ElementTree.Element, prefix: str, top: bool = False) -> str:
    """The checked element as SVG in HTML, its ids and references prefixed; text and attribute values escaped."""
    tag = _name(element.tag)
    attrs = ' xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"' if top else ""
    for key, value in element.attrib.items():
        name = _name(key)
        if name == "id":
            value = prefix + value
        elif name in ("href", "xlink:href") and value.startswith("#"):
            value = "#" + prefix + value[1:]
        else:
            value = _URL_ID.sub(lambda m: f"url(#{prefix}{m.group(1)})", value)
        attrs += f' {name}="{_quoted(value)}"'
    inner = html.escape(element.text or "", quote=False) + "".join(_write(c, prefix) for c in element)
    tail = "" if top else html.escape(element.tail or "", quote=False)
    return (f"<{tag}{attrs}>{inner}</{tag}>" if inner else f"<{tag}{attrs}/>") + tail


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
    _label_cells(tokens, lambda inline: renderer.renderInlineAsText(inline.children or [], md.options, env))
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


CARD_COLUMNS = 4  # a table of this many columns or more is shown as a card per row on a phone's screen


def _label_cells(tokens: Sequence[Any], text: Callable[[Any], str]) -> None:
    """Each table of ``CARD_COLUMNS`` columns or more gets the class ``cards`` and each of its body cells its
    column's header as ``data-label``: on a narrow screen the stylesheet shows such a table as one card per row,
    every value beside its header (no table a phone must scroll sideways, and no script)."""
    table: Any = None
    headers: list[str] = []
    column = 0
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            table, headers = token, []
        elif token.type == "th_open":
            headers.append(text(tokens[i + 1]) if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else "")
        elif token.type == "thead_close" and table is not None and len(headers) >= CARD_COLUMNS:
            table.attrSet("class", "cards")
        elif token.type == "tr_open":
            column = 0
        elif token.type == "td_open":
            if len(headers) >= CARD_COLUMNS and column < len(headers):
                token.attrSet("data-label", headers[column])
            column += 1
        elif token.type == "table_close":
            table, headers = None, []


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
