"""PNG screenshots of a report.html in headless Chromium: the page's top, the per-query table, and a drill-down.

Drives the operating system's Chromium (/usr/bin/chromium, Debian's package; scripts/install_browser.sh)
through Playwright's Python package; it never downloads a browser. The page is opened from its
file:// URL with every network request refused, as a reader would open it offline.

    .venv/bin/python scripts/screenshot_report.py reports/ocean-facts-sweep/report.html --out /tmp/shots
    .venv/bin/python scripts/screenshot_report.py REPORT --query q-largest-ocean --beside 1 --width 1280

Writes ``<out>/report-top.png`` (the first screen), ``<out>/report-table.png`` (the Queries section)
and ``<out>/report-detail.png`` (one query's drill-down: the first query of the table unless
``--query``; with ``--beside N`` the N-th retriever, counted from 0, side by side with the first
shown). Exit 0 when all three were written, 1 when the page logged an error, 2 without Chromium.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
LAUNCH_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def screenshots(report: Path, out: Path, query: str | None, beside: int | None, width: int, height: int) -> list[str]:
    """Write the three PNGs; returns the page's console errors (none expected)."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            page = browser.new_page(viewport={"width": width, "height": height}, device_scale_factor=1)
            page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(("file:", "data:"))
                       else route.abort())
            page.goto(report.resolve().as_uri())
            page.wait_for_selector("html[data-ready]")
            page.screenshot(path=str(out / "report-top.png"))
            page.locator("#queries").screenshot(path=str(out / "report-table.png"))
            if query is None:
                page.locator("#queries-table tbody tr").first.focus()
            else:
                page.fill("#search", query)
                page.press("#search", "Enter")
                page.locator(f'#queries-table tbody tr[data-qid="{query}"]').first.focus()
            page.keyboard.press("Enter")
            page.wait_for_selector("dialog#detail[open]")
            if beside is not None:
                page.select_option("#pick-b", str(beside))
            page.locator("#detail-body").evaluate("node => node.closest('dialog').scrollTop = 0")
            page.screenshot(path=str(out / "report-detail.png"))
        finally:
            browser.close()
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="a report.html")
    parser.add_argument("--out", type=Path, default=Path("."), help="folder for the PNGs (default: here)")
    parser.add_argument("--query", help="the query whose drill-down to take (default: the table's first)")
    parser.add_argument("--beside", type=int, help="show this retriever (number, from 0) side by side")
    parser.add_argument("--width", type=int, default=1400)
    parser.add_argument("--height", type=int, default=900)
    args = parser.parse_args()
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} not found: install Debian's chromium package (scripts/install_browser.sh)", file=sys.stderr)
        return 2
    errors = screenshots(args.report, args.out, args.query, args.beside, args.width, args.height)
    for error in errors:
        print(f"page error: {error}", file=sys.stderr)
    print("\n".join(str(args.out / name) for name in ("report-top.png", "report-table.png", "report-detail.png")))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
