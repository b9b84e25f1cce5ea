"""The interactive HTML view in a real browser (Debian's Chromium, driven by Playwright), offline."""

from __future__ import annotations

import copy

import pytest

from hyperfolio.viz import Budget, prune, write_html

from .test_hyperviz import star_graph

playwright = pytest.importorskip("playwright.sync_api", reason="pip install -e '.[test]' installs Playwright")
pytestmark = pytest.mark.long  # a real browser: run by .ci/run (`pytest -m long`)


def test_page_loads_offline_and_a_click_expands_an_entity(tmp_path, browser):
    full = star_graph(40)
    shown = copy.deepcopy(full)
    prune(shown, "Rotterdam", Budget(width=700, height=500))
    assert len(shown.entities) < len(full.entities)
    page_file = write_html(full, shown, tmp_path / "graph.html")
    assert "cdn" not in page_file.read_text().lower().split("<script>", 1)[0]  # nothing fetched from outside

    # bypass_csp: the page forbids eval, which Playwright's polling waits need; networking stays off.
    context = browser.new_context(offline=True, bypass_csp=True, viewport={"width": 1200, "height": 800})
    remote: list[str] = []
    context.on("request", lambda r: remote.append(r.url) if not r.url.startswith(("file:", "data:")) else None)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_file.as_uri())
    page.wait_for_function("window.hyperfolio && window.hyperfolio.nodes.length > 0")
    page.wait_for_timeout(800)  # let the layout settle before clicking
    before = page.evaluate("window.hyperfolio.nodes.length")
    assert before == len(shown.entities) + len(shown.edges)

    # Click the hub (in every hyperedge of the full graph): its hidden hyperedges come in.
    point = page.evaluate(
        """() => { const net = window.hyperfolio.network; net.stopSimulation();
                   return net.canvasToDOM(net.getPositions(['hub'])['hub']); }"""
    )
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function(f"window.hyperfolio.nodes.length > {before}")
    after = page.evaluate("window.hyperfolio.nodes.length")
    assert after == len(full.entities) + len(full.edges)
    assert "Osprey Shipping Company" in page.inner_text("#details")
    page.wait_for_timeout(800)  # the expanded graph settles: a node still moving can miss the click

    # Click a hyperedge: its members, description and sources appear in the side panel.
    point = page.evaluate(
        """() => { const net = window.hyperfolio.network; net.stopSimulation(); net.fit();
                   return net.canvasToDOM(net.getPositions(['h0'])['h0']); }"""
    )
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function("document.getElementById('details').innerText.includes('Members')")
    details = page.inner_text("#details")
    assert "Osprey operates from Rotterdam" in details and "Rotterdam" in details
    assert not errors and not remote
    context.close()
