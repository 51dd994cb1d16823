"""The Python example's shop (shop.py), paid in Chromium with Selenium and Debian's chromedriver
(apt install chromium chromium-driver; pip install selenium walletctl).

walletctl's pytest plugin gives the sandbox (wallet_sandbox); the test adds the sandbox's
test driver to every page through the DevTools protocol and passes each call a one-time token
from the sandbox (wallet_sandbox.driver_token()).
"""

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from shop import Shop, serve
from walletctl.testing.browser import driver_script

CALL = """const done = arguments[arguments.length - 1];
WalletPayTesting[arguments[0]](...arguments[1]).then(
  (value) => done({ok: true, value}), (e) => done({ok: false, error: e.message}));"""


@pytest.fixture
def shop(wallet_sandbox):
    server = serve(Shop(wallet_sandbox.base_url, wallet_sandbox.api_key,
                        wallet_sandbox.service_secret))
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def browser(wallet_sandbox):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu"):
        options.add_argument(arg)
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    driver.set_script_timeout(30)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument",
                           {"source": driver_script(wallet_sandbox.base_url)})
    yield driver
    driver.quit()


def wallet(browser, name, *args):
    answer = browser.execute_async_script(CALL, name, list(args))
    assert answer["ok"], answer["error"]
    return answer["value"]


def result(browser, text):
    WebDriverWait(browser, 20).until(
        lambda b: b.find_element(By.ID, "result").text == text)


def sales(wallet_sandbox):
    return [(t["kind"], t["amount"], t["state"]) for t in wallet_sandbox.ledger()]


def test_device_token(shop, browser, wallet_sandbox):
    browser.get(shop + "/checkout")
    detail = wallet(browser, "pay", {"token": wallet_sandbox.driver_token(),
                                     "card": "mc-token"})
    assert detail["cryptogram"] and detail["eciIndicator"] == "02"
    result(browser, "Payment Approved")
    assert sales(wallet_sandbox) == [("sale", "12.34", "Approved")]


def test_pan_only_card_through_3ds(shop, browser, wallet_sandbox):
    browser.get(shop + "/checkout")
    wallet(browser, "pay", {"token": wallet_sandbox.driver_token(), "card": "visa-pan"})
    WebDriverWait(browser, 20).until(lambda b: "/pay/3ds/" in b.current_url)
    assert wallet(browser, "challenge", "pass")["amount"] == "12.34 EUR"
    result(browser, "Payment Approved")
    assert sales(wallet_sandbox) == [("sale", "12.34", "Approved")]


def test_cancel(shop, browser, wallet_sandbox):
    browser.get(shop + "/checkout")
    WebDriverWait(browser, 20).until(
        lambda b: b.find_element(By.CSS_SELECTOR, "#merchant-wallet-button button")
        .is_displayed())
    browser.find_element(By.CSS_SELECTOR, "#merchant-wallet-button button").click()
    message = wallet(browser, "cancel", {"token": wallet_sandbox.driver_token()})
    assert message.startswith("CANCELED: ")
    assert sales(wallet_sandbox) == []
