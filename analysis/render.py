"""Turn report sections into Markdown and into one self-contained HTML page (images inlined as base64).

Formatting only: the numbers arrive computed. Headers in words (analysis/labels.py); tables wider than a
page are split; sample-count warnings become footnotes. An empty cell prints as an em dash (not measured).
"""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from analysis.labels import label
from analysis.model import Section

NOT_MEASURED = "—"
MAX_COLUMNS = 8  # wider tables are split into parts that fit a 1280 px page
SMALL_SAMPLE = "small_sample"


def fmt(value: object) -> str:
    """One table cell: thousands separators, 3 significant digits for small floats, a dash for empty."""
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return NOT_MEASURED
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) < 1e15):
        return f"{int(value):,}"
    if isinstance(value, float):
        return f"{value:,.1f}" if abs(value) >= 10 else f"{value:.3g}"
    return str(value)


def _cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    frame = df.reset_index() if _named_index(df) else df
    header = [label(c) for c in frame.columns]
    rows = [[_key(row[0]), *map(fmt, row[1:])] for row in frame.astype(object).itertuples(index=False)]
    return header, rows


def _key(value: object) -> str:
    """A row's first cell; a column name used as a row key (queue series, a turned table) in words."""
    return label(value) if isinstance(value, str) else fmt(value)


def readable(df: pd.DataFrame) -> tuple[list[pd.DataFrame], list[str]]:
    """A table as parts of at most MAX_COLUMNS columns (one or two rows: turned on its side instead),
    with its small-sample flag columns taken out as footnotes."""
    flags = [c for c in df.columns if str(c).endswith(SMALL_SAMPLE)]
    notes = [
        f"{_row_name(df, key)}{_prefix(col)}: {text} samples"
        for col in flags
        for key, text in df[col].items()
        if isinstance(text, str) and text
    ]
    body = df.drop(columns=flags)
    if len(body.columns) <= MAX_COLUMNS:
        return [body], notes
    if len(body) <= 2:
        side = body.T
        side.index.name = "measure"
        return [side], notes
    cuts = range(0, len(body.columns), MAX_COLUMNS)
    return [body.iloc[:, i : i + MAX_COLUMNS] for i in cuts], notes


def _row_name(df: pd.DataFrame, key: object) -> str:
    return "" if not _named_index(df) else str(key)


def _prefix(col: object) -> str:
    what = str(col).removesuffix(SMALL_SAMPLE).rstrip("_")
    return f" ({label(what + '_n').removesuffix(' count')})" if what else ""


def _named_index(df: pd.DataFrame) -> bool:
    return any(name is not None for name in df.index.names)


def table_markdown(df: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table."""
    header, rows = _cells(df)
    esc = [[c.replace("|", "\\|").replace("\n", " ") for c in r] for r in [header, *rows]]
    lines = ["| " + " | ".join(esc[0]) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in esc[1:]]
    return "\n".join(lines)


def table_html(df: pd.DataFrame) -> str:
    header, rows = _cells(df)
    head = "".join(f"<th>{html.escape(c)}</th>" for c in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def markdown(title: str, sections: list[Section]) -> str:
    """The whole report as Markdown; images referenced by file name (they sit beside report.md)."""
    out = [f"# {title}", ""]
    for sec in sections:
        out += [f"## {sec.title}", ""]
        out += [f"- {note}" for note in sec.notes] + ([""] if sec.notes else [])
        for caption, df in sec.tables:
            parts, notes = readable(df)
            out += [f"**{caption}**", ""]
            for part in parts:
                out += [table_markdown(part), ""]
            out += [f"<sub>{note}</sub>  " for note in notes] + ([""] if notes else [])
        out += [f"![{img.stem}]({img.name})" for img in sec.images] + ([""] if sec.images else [])
    return "\n".join(out)


STYLE = (
    "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse;margin:.5em 0 1em;font-size:13px;max-width:100%}"
    "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right;overflow-wrap:anywhere}"
    "th{background:#f3f3f3}td:first-child{text-align:left}"
    "img{max-width:100%;height:auto}li{margin:.2em 0}.foot{font-size:12px;color:#555;margin:0}"
    ".headline{font-size:18px;border-left:4px solid #36c;padding:.3em .8em;background:#f5f8ff}"
)


def page(title: str, sections: list[Section]) -> str:
    """The whole report as one HTML file that opens offline: no links, images embedded."""
    out = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
        f"<style>{STYLE}</style></head><body><h1>{html.escape(title)}</h1>"
    ]
    for i, sec in enumerate(sections):
        out.append(f"<h2>{html.escape(sec.title)}</h2>")
        if i == 0 and sec.notes:  # the headline's verdict
            out.append(f"<p class='headline'>{html.escape(sec.notes[0])}</p>")
        elif sec.notes:
            out.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in sec.notes) + "</ul>")
        for caption, df in sec.tables:
            parts, notes = readable(df)
            out.append(f"<h4>{html.escape(caption)}</h4>" + "".join(table_html(p) for p in parts))
            out += [f"<p class='foot'>{html.escape(n)}</p>" for n in notes]
        out += [image_html(p) for p in sec.images]
    out.append("</body></html>")
    return "\n".join(out)


def image_html(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f"<p><img alt='{html.escape(path.stem)}' src='data:image/png;base64,{data}'></p>"
