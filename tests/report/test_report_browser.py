"""The report in a real browser: Debian's headless Chromium driven by Selenium through
Debian's chromedriver (no network: the page is a local file).

The tests click a summary pointer and see its target entry highlighted, and open a model
call's context. Screenshots are saved under ``$REGISTRE_TEST_ARTIFACTS`` (default: the
test's temporary folder) as ``report-*.png``. Without Chromium the tests are skipped, unless
``REGISTRE_TEST_BROWSER=1`` says the browser must be there (``.ci/run`` sets it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

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
