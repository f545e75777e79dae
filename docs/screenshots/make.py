"""Screenshots of the HTML report for docs/report.md, one per bundled sample trace.

Run from the repository root after changing templates/ (needs `pip install playwright` and a
Chromium: Debian's `apt-get install chromium`; Playwright's own browser download is not used):

    python docs/screenshots/make.py

For every folder under sample_traces/ it renders the report exactly as `tcreport report` would
and writes docs/screenshots/<folder>.png (the whole page, light) and <folder>-dark.png (the first
screen, dark). The source path shown in the report is the repository-relative one, so the PNGs do
not depend on where the clone lives.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent
ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--force-device-scale-factor=1",
    "--hide-scrollbars",
]


def _input_of(folder: Path) -> Path:
    """The trace in a sample folder: its one non-README file, else the folder (DLProf reports)."""
    files = [p for p in sorted(folder.iterdir()) if p.is_file() and not p.name.startswith("README")]
    return files[0] if len(files) == 1 else folder


def _step_time(browser: object, html: Path, out: Path) -> None:
    """The "Where the step time goes" section, hovering its widest Tensor Core block."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})  # type: ignore[attr-defined]
    page.goto(html.as_uri())
    section = page.locator("#step-time")
    if section.count() == 0:
        page.close()
        return
    blocks = page.locator("#tl-lanes rect.t-tc")
    if blocks.count():
        widest = page.evaluate(
            "() => { const rs = [...document.querySelectorAll('#tl-lanes rect.t-tc')]; let b = 0;"
            " rs.forEach((r, i) => { if (+r.getAttribute('width') > +rs[b].getAttribute('width'))"
            " b = i; }); return b; }"
        )
        blocks.nth(widest).scroll_into_view_if_needed()
        blocks.nth(widest).hover(force=True)
    section.screenshot(path=str(out))
    page.close()
    print(f"{out.relative_to(ROOT)}: {out.stat().st_size // 1024} KiB")


def _cpu_only(browser: object, tmp: Path) -> None:
    """The report of a real CPU-only capture (examples/keras_mixed.py under the TensorFlow
    profiler on this machine's CPU), whole page at 1280 px: it must fit the width. Needs
    TensorFlow (the ``[tf]`` extra); skipped without it."""
    import importlib.util
    import subprocess

    from tcreport import api

    if importlib.util.find_spec("tensorflow") is None:
        print("cpu-only.png: skipped (needs TensorFlow: pip install -e '.[tf]')")
        return
    out_dir = tmp / "keras_mixed"
    example = ROOT / "examples" / "keras_mixed.py"
    args = ["profile", str(example), "--backend", "tf", "--output-dir", str(out_dir)]
    done = subprocess.run([sys.executable, "-m", "tcreport", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"tcreport profile failed: {done.stderr[-2000:]}")
    trace = next(out_dir.rglob("*.xplane.pb"))
    view = api.analyze(api.load(trace), source_path="examples/keras_mixed.py (CPU, tf backend)")
    html = tmp / "cpu-only.html"
    html.write_text(api.render_html(view), "utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})  # type: ignore[attr-defined]
    page.goto(html.as_uri())
    # two PNGs, each well under 300 KB: the first screen (verdict, fix first, findings), then
    # the host-time tables with the GPU-run line (the whole page is ~450 KB of text)
    first = OUT / "cpu-only.png"
    page.screenshot(path=str(first))
    top, bottom = page.evaluate(
        "() => [document.querySelector('#host').getBoundingClientRect().top + scrollY,"
        " document.querySelector('#gpu-run').getBoundingClientRect().bottom + scrollY]"
    )
    host = OUT / "cpu-only-host-time.png"
    clip = {"x": 0, "y": top - 8, "width": 1280, "height": bottom - top + 16}
    page.screenshot(path=str(host), full_page=True, clip=clip)
    page.close()
    for out in (first, host):
        print(f"{out.relative_to(ROOT)}: {out.stat().st_size // 1024} KiB")


def main() -> int:
    """``make.py`` renders every sample and the CPU-only capture; ``make.py cpu-only`` only the
    latter."""
    sys.path.insert(0, str(ROOT))
    from tcreport import api

    exe = os.environ.get("TCREPORT_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    only_cpu = sys.argv[1:] == ["cpu-only"]
    samples = (
        [] if only_cpu else sorted(p for p in (ROOT / "sample_traces").iterdir() if p.is_dir())
    )
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=ARGS)
        for folder in samples:
            src = _input_of(folder)
            rel = src.relative_to(ROOT).as_posix()
            html = Path(tmp) / f"{folder.name}.html"
            job = api.find_job(src)  # a torchrun export is a job: `report` shows the job's page
            if job is not None:
                jr = api.analyze_job(job, source_path=rel, with_timeline=True)
                html.write_text(api.render_job_html(jr), "utf-8")
            else:
                view = api.analyze(api.load(src), source_path=rel, with_timeline=True)
                html.write_text(api.render_html(view), "utf-8")
            for scheme, full, name in (("light", True, ""), ("dark", False, "-dark")):
                page = browser.new_page(
                    viewport={"width": 1280, "height": 1000}, color_scheme=scheme
                )
                page.goto(html.as_uri())
                out = OUT / f"{folder.name}{name}.png"
                page.screenshot(path=str(out), full_page=full)
                page.close()
                print(f"{out.relative_to(ROOT)}: {out.stat().st_size // 1024} KiB")
            _step_time(browser, html, OUT / f"{folder.name}-step-time.png")
        _cpu_only(browser, Path(tmp))
        browser.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
