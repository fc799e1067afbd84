"""Regenerate docs/explain.png: the page of the README's steps.py, in headless Chromium.

    python tools/explain_screenshot.py [--out docs/explain.png] [--script steps.py]

Needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)
and selenium (pip install -e ".[browser]"); nothing is downloaded. Without --script,
the README's "Backprop through attention, step by step" example is used.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_steps_script(directory: Path) -> Path:
    """The README's steps.py, written to ``directory``."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Backprop through attention, step by step", 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    path = directory / "steps.py"
    path.write_text(code)
    return path


def browser(width: int, height: int):
    """A headless Chromium driven by selenium, from the system's binaries."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--window-size={width},{height}",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "explain.png"))
    parser.add_argument("--script", default=None)
    parser.add_argument(
        "--steps", type=int, default=3, help="backward steps to run before the shot"
    )
    parser.add_argument("--theme", default="light", choices=["light", "dark"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(args.script) if args.script else readme_steps_script(Path(tmp))
        page = Path(tmp) / "page.html"
        subprocess.run(
            [sys.executable, "-m", "tinyattn", "explain", str(script), "--out", str(page)],
            check=True,
            cwd=ROOT,
        )
        driver = browser(1400, 1000)
        try:
            driver.get(page.as_uri())
            if args.theme == "dark":
                driver.find_element("id", "theme").click()
            for _ in range(args.steps):
                driver.find_element("id", "step-next").click()
            driver.save_screenshot(args.out)
        finally:
            driver.quit()
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
