"""The pull-request comment as a reviewer sees it: a report's comment rendered to HTML (markdown-it-py) in a
column as wide as GitHub's comment body, with GitHub's table rules, shot in headless Chromium, folded as posted
and with every fold opened; each table's width measured in the page. Writes OUT/comment.png, comment-open.png
and measure.json; exits 1 when a table overflows. Usage (needs Chromium; reports/pr_comment/README.md):
`python3 benchmarks/comment_screenshot.py reports/numerics_seed_pair/report.json reports/pr_comment`."""
from __future__ import annotations

import html
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from markdown_it import MarkdownIt

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from compare.render import json_report, markdown  # noqa: E402

COLUMN_PX = 760   # GitHub's comment body in a pull request's conversation, at a 1280-pixel window
CHROMIUM = ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
# GitHub's markdown-body rules that decide a table's width: a table is a block as wide as its content, at
# most the column, scrolling beyond it; cells padded 6px 13px; 14px system fonts
STYLE = f"""
body {{ margin: 0; background: #fff; }}
.markdown-body {{ box-sizing: border-box; width: {COLUMN_PX}px; padding: 16px; font: 14px/1.5 -apple-system,
  BlinkMacSystemFont, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif; color: #1f2328; word-wrap: break-word; }}
.markdown-body table {{ display: block; width: max-content; max-width: 100%; overflow: auto; border-spacing: 0;
  border-collapse: collapse; margin: 0 0 16px; }}
.markdown-body td, .markdown-body th {{ padding: 6px 13px; border: 1px solid #d1d9e0; }}
.markdown-body th {{ font-weight: 600; }}
.markdown-body tr:nth-child(2n) {{ background: #f6f8fa; }}
.markdown-body code {{ font: 85% ui-monospace, SFMono-Regular, Menlo, monospace; background: #eff1f3;
  padding: .2em .4em; border-radius: 6px; }}
.markdown-body pre {{ background: #f6f8fa; padding: 16px; overflow: auto; font-size: 85%; }}
.markdown-body sub {{ font-size: 75%; }}
"""
MEASURE = """
<script>
const opened = new URLSearchParams(location.search).has('open');
if (opened) document.querySelectorAll('details').forEach(d => d.open = true);
const column = document.querySelector('.markdown-body').clientWidth;
const tables = [...document.querySelectorAll('table')].map(t => ({
  shown: t.offsetParent !== null, width: t.scrollWidth, box: t.clientWidth,
  head: t.querySelector('tr').innerText.slice(0, 80)}));
const pre = document.createElement('pre');
pre.id = 'kab-measure';
pre.style.display = 'none';
pre.textContent = JSON.stringify({column, height: document.body.scrollHeight, tables});
document.body.appendChild(pre);
</script>
"""


def page(comment: str) -> str:
    body = MarkdownIt("commonmark", {"html": True}).enable("table").render(comment)
    return (f"<!doctype html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
            f"<div class='markdown-body'>{body}</div>{MEASURE}</body></html>")


def measured(url: str) -> dict:
    dom = subprocess.run([*CHROMIUM, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True).stdout
    start = dom.index("<pre id=\"kab-measure\"")
    text = dom[dom.index(">", start) + 1:dom.index("</pre>", start)]
    return json.loads(html.unescape(text))


def shot(url: str, height: int, png: Path) -> None:
    subprocess.run([*CHROMIUM, f"--screenshot={png}", f"--window-size={COLUMN_PX},{min(height + 20, 16000)}", url],
                   capture_output=True, timeout=120, check=True)


def main(report_json: str, out: str) -> int:
    report = json_report.load(Path(report_json).read_text())
    comment = markdown.render(report)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        html_file = Path(tmp) / "comment.html"
        html_file.write_text(page(comment))
        found = {}
        for name, query in (("comment", ""), ("comment-open", "?open")):
            url = html_file.as_uri() + query
            found[name] = measured(url)
            shot(url, found[name]["height"], folder / f"{name}.png")
    over = [t for m in found.values() for t in m["tables"] if t["shown"] and t["width"] > t["box"]]
    summary = {"report": report_json, "comment_chars": len(comment), "column_px": COLUMN_PX,
               "tables_shown_open": sum(t["shown"] for t in found["comment-open"]["tables"]),
               "widest_table_px": max((t["width"] for t in found["comment-open"]["tables"] if t["shown"]), default=0),
               "overflowing": over}
    (folder / "measure.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "overflowing"}), f"overflowing: {len(over)}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
