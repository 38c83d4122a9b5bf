"""The report in a real browser: Debian's headless Chromium driven by Selenium through
Debian's chromedriver (no network: the page is a local file).

The tests click a summary pointer and see its target entry highlighted, open a model call's
context, read the verdict on the first screen, and filter and search the timeline.
Screenshots are saved under ``$REGISTRE_TEST_ARTIFACTS`` (default: the test's temporary
folder) as ``report-*.png``. Without Chromium the tests are skipped, unless
``REGISTRE_TEST_BROWSER=1`` says the browser must be there (``.ci/run`` sets it).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registre.report import gather, render_report
from tests.report.conftest import Investigation

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")


@pytest.fixture(scope="module")
def browser() -> Iterator[webdriver.Chrome]:
    if CHROMIUM is None or CHROMEDRIVER is None:
        if os.environ.get("REGISTRE_TEST_BROWSER") == "1":
            pytest.fail("REGISTRE_TEST_BROWSER=1 but chromium or chromedriver is not installed")
        pytest.skip("chromium and chromedriver are not installed (apt install chromium-driver)")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=webdriver.ChromeService(CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    folder = Path(os.environ.get("REGISTRE_TEST_ARTIFACTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def report_file(investigation: Investigation, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("browser") / "report.html"
    path.write_text(
        "".join(render_report(gather(investigation.bundle, investigation.policy))),
        encoding="utf-8",
    )
    return path


def _ready(browser: webdriver.Chrome) -> None:
    WebDriverWait(browser, 20).until(
        lambda driver: driver.execute_script("return document.body.dataset.ready === '1'")
    )


def test_summary_pointer_opens_its_entry(
    browser: webdriver.Chrome, report_file: Path, artifacts: Path
) -> None:
    browser.get(report_file.as_uri())
    _ready(browser)
    assert "VERIFIED" in browser.find_element(By.ID, "verdict").text
    browser.save_screenshot(str(artifacts / "report-top.png"))
    # a pointer in a compaction's summary line, to an entry on another page or this one
    line = WebDriverWait(browser, 10).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, ".sline a"))
    )
    target = line.get_attribute("href").rsplit("#", 1)[1]
    browser.execute_script("arguments[0].scrollIntoView({block:'center'})", line)
    line.click()
    entry = WebDriverWait(browser, 10).until(
        expected_conditions.visibility_of_element_located((By.ID, target))
    )
    assert "hit" in entry.get_attribute("class").split()
    assert entry.find_element(By.CSS_SELECTOR, ".cov").text.startswith("summarized by")
    browser.save_screenshot(str(artifacts / "report-pointer.png"))


def test_model_call_context_opens(
    browser: webdriver.Chrome, report_file: Path, artifacts: Path
) -> None:
    browser.get(report_file.as_uri() + "#e-0")
    _ready(browser)
    buttons = browser.find_elements(By.CSS_SELECTOR, "button.show-context")
    assert buttons, "the first page holds model calls"
    button = buttons[-1]
    browser.execute_script("arguments[0].scrollIntoView({block:'center'})", button)
    button.click()
    panel = WebDriverWait(browser, 10).until(
        expected_conditions.visibility_of_element_located((By.ID, "context"))
    )
    assert "reproduced" in panel.find_element(By.ID, "context-title").text
    messages = panel.find_elements(By.CSS_SELECTOR, "#context-messages .msg")
    assert messages and messages[0].find_element(By.CSS_SELECTOR, ".role").text
    browser.save_screenshot(str(artifacts / "report-context.png"))
    panel.find_element(By.ID, "context-close").click()
    assert not panel.is_displayed()


def test_go_to_entry_paginates(browser: webdriver.Chrome, report_file: Path) -> None:
    browser.get(report_file.as_uri())
    last = browser.execute_script(
        "const d=JSON.parse(document.getElementById('report-data').textContent);"
        "return d.pages[d.pages.length-1][1];"
    )
    browser.get(report_file.as_uri() + f"#e-{last}")
    entry = WebDriverWait(browser, 10).until(
        expected_conditions.visibility_of_element_located((By.ID, f"e-{last}"))
    )
    assert "hit" in entry.get_attribute("class").split()


# --- issue 33 item 2: the first screen, filters and search ----------------------------------


def _filtered(browser: webdriver.Chrome, act: Any) -> list[int]:
    """Run ``act`` (which changes a filter), wait until the filtered view is shown, and return
    the seqs of the entries it shows."""
    before = browser.execute_script("return document.body.dataset.filtered || ''")
    act()
    WebDriverWait(browser, 20).until(
        lambda driver: (
            driver.execute_script("return document.body.dataset.filtered || ''") != before
        )
    )
    ids = browser.execute_script(
        "return [...document.querySelectorAll('#timeline-entries .entry')].map(e=>e.id)"
    )
    return [int(i.split("-", 1)[1]) for i in ids]


def test_first_screen_shows_the_terminal_verdict(
    browser: webdriver.Chrome, report_file: Path, investigation: Investigation, artifacts: Path
) -> None:
    browser.get(report_file.as_uri())
    _ready(browser)
    report = gather(investigation.bundle, investigation.policy).verification
    line = browser.find_element(By.ID, "verdict-line")
    assert line.text == report.verdict() == "VERIFIED; not checked: witnesses, rollback"
    assert "warn" in browser.find_element(By.ID, "verdict").get_attribute("class").split()
    assert line.location["y"] + line.size["height"] < 900  # on the first screen
    refusals = browser.find_element(By.ID, "refusals")
    assert refusals.text.startswith("1 refused request (1 conclusion.final)")
    colour = refusals.value_of_css_property("color")
    assert colour != browser.find_element(By.ID, "glance").value_of_css_property("color")
    browser.save_screenshot(str(artifacts / "report-first-screen.png"))


def test_timeline_filters_by_kind_actor_refused_compactions_and_calls(
    browser: webdriver.Chrome, report_file: Path, investigation: Investigation
) -> None:
    from selenium.webdriver.support.select import Select

    data = gather(investigation.bundle, investigation.policy)
    by_kind: dict[str, list[int]] = {}
    by_actor: dict[str, list[int]] = {}
    for entry in data.entries:
        by_kind.setdefault(entry.kind, []).append(entry.seq)
        by_actor.setdefault(entry.actor, []).append(entry.seq)
    browser.get(report_file.as_uri())
    _ready(browser)
    kind = Select(browser.find_element(By.ID, "f-kind"))
    shown = _filtered(
        browser, lambda: kind.select_by_visible_text(f"tool.call ({len(by_kind['tool.call'])})")
    )
    assert shown == by_kind["tool.call"][:200]
    assert browser.find_element(By.ID, "f-count").text.startswith(
        f"{len(by_kind['tool.call'])} entries match"
    )
    actor = Select(browser.find_element(By.ID, "f-actor"))
    shown = _filtered(
        browser, lambda: actor.select_by_visible_text(f"tool ({len(by_actor['tool'])})")
    )
    assert shown == []  # tool calls are the agent's, results the tool's
    assert "No entry matches" in browser.find_element(By.ID, "timeline-entries").text
    _filtered(browser, lambda: browser.find_element(By.ID, "f-clear").click())
    shown = _filtered(browser, lambda: browser.find_element(By.ID, "f-refused").click())
    assert shown == [seq for seq in by_kind["conclusion.final"] if seq not in _accepted(data)]
    box = browser.find_element(By.ID, f"e-{shown[0]}")
    assert "refused" in box.get_attribute("class").split()
    _filtered(browser, lambda: browser.find_element(By.ID, "f-refused").click())
    shown = _filtered(browser, lambda: browser.find_element(By.ID, "f-compactions").click())
    assert shown == by_kind["context.compaction"][:200]
    _filtered(browser, lambda: browser.find_element(By.ID, "f-compactions").click())
    shown = _filtered(browser, lambda: browser.find_element(By.ID, "f-hide-calls").click())
    calls = set(by_kind["model.call"])
    assert shown and not calls & set(shown)
    assert shown == [e.seq for e in data.entries if e.seq not in calls][:200]


def _accepted(data: Any) -> set[int]:
    return {chain.conclusion["seq"] for chain in data.chains}


def test_search_reads_every_page_and_clears(
    browser: webdriver.Chrome, report_file: Path, investigation: Investigation
) -> None:
    data = gather(investigation.bundle, investigation.policy)
    wanted = [e.seq for e in data.entries if "select * from risk where seg=7" in json.dumps(e.body)]
    browser.get(report_file.as_uri())
    _ready(browser)
    box = browser.find_element(By.ID, "f-text")
    shown = _filtered(browser, lambda: box.send_keys("SELECT * FROM risk WHERE seg=7"))
    assert wanted and shown == wanted  # case-insensitive, across every page
    shown = _filtered(browser, lambda: browser.find_element(By.ID, "f-clear").click())
    assert shown == [e.seq for e in data.entries][:200]
    assert browser.find_element(By.ID, "f-text").get_attribute("value") == ""


def test_show_refused_button_filters_the_timeline(
    browser: webdriver.Chrome, report_file: Path
) -> None:
    browser.get(report_file.as_uri())
    _ready(browser)
    shown = _filtered(browser, lambda: browser.find_element(By.ID, "show-refused").click())
    assert len(shown) == 1
    assert browser.find_element(By.ID, "f-refused").is_selected()
    # a link to an entry clears the filters and opens its page
    browser.get(report_file.as_uri() + "#e-0")
    entry = WebDriverWait(browser, 10).until(
        expected_conditions.visibility_of_element_located((By.ID, "e-0"))
    )
    assert "hit" in entry.get_attribute("class").split()


# --- issue 33 item 3: the slides --------------------------------------------------------------


@pytest.fixture(scope="module")
def deck_file(investigation: Investigation, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from registre.report.slides import render_slides

    path = tmp_path_factory.mktemp("deck") / "slides.html"
    data = gather(investigation.bundle, investigation.policy)
    path.write_text("".join(render_slides(data)), encoding="utf-8")
    return path


def test_slides_keyboard_navigation_and_every_slide_fits(
    browser: webdriver.Chrome, deck_file: Path, investigation: Investigation, artifacts: Path
) -> None:
    from selenium.webdriver.common.keys import Keys

    browser.set_window_size(1280, 720)
    try:
        browser.get(deck_file.as_uri())
        count = len(browser.find_elements(By.CSS_SELECTOR, "section.slide"))

        def at() -> int:
            return int(browser.execute_script("return +document.body.dataset.slide"))

        assert at() == 1
        verdict = browser.find_element(By.CSS_SELECTOR, "#s1 .verdict")
        report = gather(investigation.bundle, investigation.policy).verification
        assert verdict.text == report.verdict()
        browser.save_screenshot(str(artifacts / "slides-title.png"))
        body = browser.find_element(By.TAG_NAME, "body")
        for key, expected in (
            (Keys.END, count),
            (Keys.HOME, 1),
            (Keys.PAGE_DOWN, 2),
            (Keys.ARROW_RIGHT, 3),
            (Keys.ARROW_LEFT, 2),
            (Keys.PAGE_UP, 1),
            (Keys.SPACE, 2),
            (Keys.ARROW_DOWN, 3),
            (Keys.ARROW_UP, 2),
        ):
            body.send_keys(key)
            assert at() == expected, key
        assert browser.current_url.endswith("#s2")
        body.send_keys(Keys.HOME)
        for number in range(1, count + 1):
            assert at() == number
            overflow = browser.execute_script(
                "const s=document.querySelector('.slide.on');"
                "return [s.scrollHeight-s.clientHeight, s.scrollWidth-s.clientWidth]"
            )
            assert overflow[0] <= 1 and overflow[1] <= 1, (number, overflow)
            body.send_keys(Keys.ARROW_RIGHT)
        assert at() == count  # the last slide stays
    finally:
        browser.set_window_size(1400, 1000)
