"""The page in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) driven by selenium, opened from ``file://``; nothing is downloaded.

Skipped, with the reason, where the browser, its driver or selenium is missing
(``apt-get install chromium chromium-driver`` and ``pip install -e ".[browser]"``).
"""

from __future__ import annotations

import base64
import json
import os
import runpy
import time

import numpy as np
import pytest
from explain_helpers import explain_script, page_data

import tinyattn

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
webdriver = pytest.importorskip(
    "selenium.webdriver", reason="browser tests need selenium: pip install -e '.[browser]'"
)
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip(
        "browser tests need Debian's chromium and chromium-driver (apt-get install chromium "
        "chromium-driver)",
        allow_module_level=True,
    )


def _driver(javascript: bool = True, downloads: str | None = None):
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1400,1000", "--force-device-scale-factor=1"):  # fmt: skip
        options.add_argument(arg)
    prefs: dict = {}
    if not javascript:
        prefs["profile.managed_default_content_settings.javascript"] = 2
    if downloads:
        prefs["download.default_directory"] = downloads
        prefs["download.prompt_for_download"] = False
    if prefs:
        options.add_experimental_option("prefs", prefs)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(DRIVER), options=options)


@pytest.fixture(scope="module")
def driver():
    d = _driver()
    yield d
    d.quit()


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    from explain_helpers import SELF_ATTENTION, readme_block

    tmp = tmp_path_factory.mktemp("pages")
    steps = tmp / "steps.py"
    steps.write_text(readme_block("## Backprop through attention, step by step"))
    attention = tmp / "self_attention.py"
    attention.write_text(SELF_ATTENTION)
    out = {}
    for name, script in (("steps", steps), ("attention", attention)):
        html = explain_script(script, tmp / f"{name}.html")
        out[name] = (tmp / f"{name}.html", page_data(html), runpy.run_path(str(script)))
    return out


def _js(driver, code: str, *args):
    return driver.execute_script(code, *args)


def _current(driver) -> list[str]:
    return _js(
        driver,
        "return [...document.querySelectorAll('#graph-full .node.current')].map(e => e.dataset.node)",
    )


def test_no_request_beyond_the_page_and_no_console_error(driver, pages):
    path, data, _ = pages["attention"]
    driver.get_log("performance")
    driver.get_log("browser")
    driver.get(path.as_uri())
    for _ in range(len(data["steps"])):
        driver.find_element("id", "step-next").click()
    driver.find_element("id", "theme").click()
    driver.find_element("css selector", '#graph-full [data-node="n0"]').click()
    requests = [
        json.loads(e["message"])["message"]["params"]["request"]["url"]
        for e in driver.get_log("performance")
        if '"Network.requestWillBeSent"' in e["message"]
    ]
    assert requests == [path.as_uri()]
    assert _js(driver, "return performance.getEntriesByType('resource').length") == 0
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "ERROR")]
    assert errors == []
    srcs = _js(
        driver,
        "return [...document.querySelectorAll('[src],[href]')].map(e => e.getAttribute('src') || e.getAttribute('href'))",
    )
    assert not [s for s in srcs if s.startswith(("http:", "https:", "//"))]


def test_stepping_follows_the_engine_order(driver, pages):
    path, data, ns = pages["steps"]
    Q, K, V = (ns[k].detach().requires_grad_() for k in "QKV")  # (ns's .grad stay as they are)
    with tinyattn.autograd.trace() as t:
        (tinyattn.softmax(Q @ K.T * ns["scale"], dim=-1) @ V).backward(ns["dO"])
    engine_ops = [r["op"] for r in t.records]
    op_of = {n["id"]: n["op"] for n in data["nodes"]}
    driver.get(path.as_uri())
    assert _current(driver) == []
    for i in range(1, len(engine_ops) + 1):
        driver.find_element("id", "step-next").click()
        (node,) = _current(driver)
        assert op_of[node] == engine_ops[i - 1] and node == data["steps"][i - 1]
        row = _js(driver, "return document.querySelector('#step-table tr.current').dataset.step")
        assert row == str(i)
    done = _js(
        driver,
        "return [...document.querySelectorAll('#graph-full .node.done')].map(e => e.dataset.node)",
    )
    assert sorted(done) == sorted(
        n["id"] for n in data["nodes"]
    )  # (leaves: their .grad is complete)
    body = driver.find_element("tag name", "body")
    from selenium.webdriver.common.keys import Keys

    body.send_keys(Keys.ARROW_LEFT)
    assert _current(driver) == [data["steps"][-2]]
    _js(
        driver,
        "const s = document.getElementById('step-slider'); s.value = 1; s.dispatchEvent(new Event('input'))",
    )
    assert _current(driver) == [data["steps"][0]]
    assert "step 1 of 5" in driver.find_element("id", "step-status").text


def _panel_numbers(driver, kind: str) -> np.ndarray:
    rows = _js(
        driver,
        "return [...document.querySelectorAll('#panel-body .tensor[data-kind=\"' + arguments[0] + '\"] tr')]"
        ".map(r => [...r.children].map(td => Number(td.dataset.v)))",
        kind,
    )
    return np.array(rows)


def test_numbers_in_the_dom_equal_grad_and_the_traced_values(driver, pages):
    path, data, ns = pages["steps"]
    label = {n["label"]: n["id"] for n in data["nodes"]}
    driver.get(path.as_uri())
    for leaf in ("Q", "K", "V"):
        driver.find_element("css selector", f'#graph-full [data-node="{label[leaf]}"]').click()
        np.testing.assert_allclose(
            _panel_numbers(driver, "gradient (this backward)"), ns[leaf].grad.numpy(), atol=1e-6
        )
        np.testing.assert_allclose(
            _panel_numbers(driver, ".grad"), ns[leaf].grad.numpy(), atol=1e-6
        )
    driver.find_element("css selector", f'#graph-full [data-node="{label["P"]}"]').click()
    np.testing.assert_allclose(_panel_numbers(driver, "value"), ns["P"].detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(
        _panel_numbers(driver, "incoming gradient"), ns["P"].grad.numpy(), atol=1e-6
    )
    text = driver.find_element("id", "panel-body").text
    assert "y = exp(x - max) / sum(exp(x - max))" in text and "steps.py:" in text and "PASS" in text


def test_accumulation_in_the_dom(driver, pages):
    path, data, ns = pages["attention"]
    (x,) = [n["id"] for n in data["nodes"] if n["label"] == "x"]
    driver.get(path.as_uri())
    driver.find_element("css selector", f'#graph-full [data-node="{x}"]').click()
    parts = _js(
        driver,
        "return [...document.querySelectorAll('#panel-body [data-contribution]')].map(e => e.dataset.contribution)",
    )
    assert parts == ["0", "1", "2", "sum"]
    total = sum(
        _panel_numbers(driver, f"contribution {i + 1} from " + label)
        for i, label in enumerate(_contribution_labels(data, x))
    )
    np.testing.assert_allclose(total, ns["x"].grad.numpy()[0], atol=1e-6)
    np.testing.assert_allclose(
        _panel_numbers(driver, "sum of the contributions"), ns["x"].grad.numpy()[0], atol=1e-6
    )


def _contribution_labels(data, node_id) -> list[str]:
    by_id = {n["id"]: n for n in data["nodes"]}
    return [
        f"{by_id[c['from']]['label']} ({by_id[c['from']]['op']})"
        for c in by_id[node_id]["contributions"]
    ]


def test_attention_map_sums_hold_in_the_dom(driver, pages):
    path, data, _ = pages["attention"]
    driver.get(path.as_uri())
    maps = _js(
        driver,
        "return [...document.querySelectorAll('#attention .head')].map(h => Object.fromEntries(['P', 'dS'].map(k =>"
        " [k, [...h.querySelectorAll('[data-map=\"' + k + '\"] rect')].map(r => [+r.dataset.r, +r.dataset.c, +r.dataset.v])])))",
    )
    assert len(maps) == 2
    for head in maps:
        P, dS = np.zeros((4, 4)), np.zeros((4, 4))
        for (r, c, v), (_, _, s) in zip(head["P"], head["dS"]):
            P[r, c], dS[r, c] = v, s
        np.testing.assert_allclose(P.sum(-1), 1.0, atol=1e-6)
        np.testing.assert_allclose(dS.sum(-1), 0.0, atol=1e-6)
        assert np.all(dS[np.triu_indices(4, 1)] == 0)
    statuses = [
        e.text.split()[0] for e in driver.find_elements("css selector", "#attention .checks li")
    ]
    assert statuses == ["PASS"] * 6


def _pixels(driver):
    """The screenshot, decoded by the browser itself: a function (x, y) -> (r, g, b)."""
    png = base64.b64encode(driver.get_screenshot_as_png()).decode()
    _js(driver, "window.__shot = null; const i = new Image(); i.onload = () => { const c = document.createElement('canvas');"
        " c.width = i.width; c.height = i.height; const g = c.getContext('2d'); g.drawImage(i, 0, 0); window.__shot = g; };"
        " i.src = 'data:image/png;base64,' + arguments[0];", png)  # fmt: skip
    for _ in range(100):
        if _js(driver, "return window.__shot !== null"):
            break
        time.sleep(0.05)
    return lambda x, y: tuple(
        _js(
            driver,
            "return [...window.__shot.getImageData(arguments[0], arguments[1], 1, 1).data].slice(0, 3)",
            x,
            y,
        )
    )


def test_both_themes_render_and_a_heatmap_cell_has_its_colour(driver, pages):
    path, _, _ = pages["attention"]
    driver.get(path.as_uri())
    seen = {}
    for theme in ("light", "dark"):
        if theme == "dark":
            driver.find_element("id", "theme").click()
        assert _js(driver, "return document.documentElement.dataset.theme") == theme
        _js(driver, "window.scrollTo(0, 0)")
        pixel = _pixels(driver)
        sample = {pixel(x, y) for x in range(5, 1400, 97) for y in range(5, 1000, 89)}
        assert len(sample) > 8, f"{theme} theme looks blank"
        seen[theme] = pixel(3, 300)
    assert seen["light"] != seen["dark"] and sum(seen["light"]) > sum(seen["dark"])
    cell = driver.find_element(
        "css selector", '#attention [data-map="P"] rect[data-r="0"][data-c="0"]'
    )
    _js(driver, "arguments[0].scrollIntoView({block: 'center'})", cell)
    box = _js(
        driver,
        "const b = arguments[0].getBoundingClientRect(); return [b.x + b.width / 2, b.y + b.height / 2]",
        cell,
    )
    got = _pixels(driver)(int(box[0]), int(box[1]))
    want = cell.get_attribute("fill")
    want = tuple(int(want[k : k + 2], 16) for k in (1, 3, 5))
    assert max(abs(a - b) for a, b in zip(got, want)) <= 3


def test_every_control_has_an_accessible_name(driver, pages):
    path, _, _ = pages["attention"]
    driver.get(path.as_uri())
    controls = driver.find_elements("css selector", "button, input, [role=button], [tabindex]")
    assert len(controls) > 10
    nameless = [
        c.get_attribute("outerHTML")[:80] for c in controls if not c.accessible_name.strip()
    ]
    assert nameless == []


def test_with_javascript_off_the_graph_and_step_table_are_there(pages):
    path, data, _ = pages["steps"]
    d = _driver(javascript=False)
    try:
        d.get(path.as_uri())
        assert d.execute_script("return 1") == 1  # (webdriver's own scripts still run)
        graph = d.find_element("id", "graph-full")
        assert graph.is_displayed() and len(graph.find_elements("css selector", ".node")) == len(
            data["nodes"]
        )
        rows = d.find_elements("css selector", "#step-table tbody tr")
        assert len(rows) == len(data["steps"])
        assert d.find_element("id", "panel-body").text == ""  # (nothing ran: the script is off)
    finally:
        d.quit()


def test_downloaded_json_is_the_trace(pages, tmp_path):
    path, data, _ = pages["steps"]
    d = _driver(downloads=str(tmp_path))
    try:
        d.get(path.as_uri())
        d.find_element("id", "download-trace").click()
        target = tmp_path / "trace.json"
        for _ in range(100):
            if target.exists() and target.stat().st_size:
                break
            time.sleep(0.05)
        assert json.loads(target.read_text()) == data["trace"]
    finally:
        d.quit()


def test_big_graph_starts_by_module_and_a_module_expands_on_click(driver, tmp_path):
    path = tmp_path / "demo.html"
    data = page_data(explain_script("demo", path))
    driver.get(path.as_uri())

    def visible_nodes():
        return _js(
            driver,
            "return [...document.querySelectorAll('#views .view:not([hidden]) .node')].map(e => e.dataset.node || 'g:' + e.dataset.group)",
        )

    first = visible_nodes()
    assert sorted(n for n in first if n.startswith("g:")) == [
        "g:model.attention", "g:model.embed", "g:model.norm", "g:model.out", "g:model.position"
    ]  # fmt: skip
    assert len(first) < len(data["nodes"])
    box = driver.find_element(
        "css selector", '#views .view:not([hidden]) [data-group="model.attention"]'
    )
    _js(driver, "arguments[0].focus()", box)
    from selenium.webdriver.common.keys import Keys

    box.send_keys(Keys.ENTER)  # (keyboard: Enter on a focused box expands it, as a click does)
    opened = visible_nodes()
    inside = [n["id"] for n in data["nodes"] if n["module"].startswith("model.attention")]
    assert inside and set(inside) <= set(opened) and "g:model.attention" not in opened
    driver.find_element("id", "show-all").click()
    assert sorted(visible_nodes()) == sorted(n["id"] for n in data["nodes"])
