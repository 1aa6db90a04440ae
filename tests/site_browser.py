"""The built site as a reader sees it, in headless Chromium at 1280 px: which code blocks would need
horizontal scrolling, and what the site search finds. tests/test_docs.py runs it on the site it
builds (offline: served from localhost, the system's fonts); without Chromium and its chromedriver
(Debian: apt-get install chromium chromium-driver) that test skips.

As a script it keeps screenshots: `python tests/site_browser.py SITE_DIR OUT_DIR` (SITE_DIR from
`mkdocs build`).

chromedriver is driven through its W3C WebDriver HTTP API with urllib: no browser package to install.
"""

import base64
import contextlib
import functools
import http.server
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


WIDTH = 1280
PAGES = {"home": "", "tutorial": "tutorials/attention/", "tensor-reference": "reference/tensor/",
         "tensor-reference-gather": "reference/tensor/#tinyattn.Tensor.gather",
         "ops-gather": "reference/ops/#tinyattn.ops.Gather", "internals": "internals/"}
# Chromium without the network features a test machine must not use
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--window-size={WIDTH},1000"]

# code blocks whose content is wider than the block: the reader would have to scroll (the folded
# "Source code" blocks of the reference opened first)
OVERFLOWING = """
document.querySelectorAll('details').forEach(details => { details.open = true; });
return Array.from(document.querySelectorAll('pre > code'))
  .filter(code => code.scrollWidth > code.clientWidth + 1)
  .map(code => code.textContent.split('\\n').reduce((a, b) => a.length >= b.length ? a : b));
"""


def _chromium():
    for name in ("/usr/lib/chromium/chromium", shutil.which("chromium"), shutil.which("chromium-browser"),
                 shutil.which("google-chrome")):
        if name and os.path.exists(name):
            return name
    return None


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(folder):
    """The folder over HTTP on localhost, as `mkdocs serve` would show it."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


class Browser:
    """One headless Chromium session through chromedriver's WebDriver API."""

    def __init__(self, chromedriver, chromium, profile):
        self.port = _free_port()
        self.driver = subprocess.Popen([chromedriver, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while True:
            try:
                self._call("GET", "/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.driver.kill()
                    raise
                time.sleep(0.2)
        options = {"binary": chromium, "args": FLAGS + [f"--user-data-dir={profile}"]}
        # the console's messages kept, for console() to read
        session = self._call("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome", "goog:chromeOptions": options, "goog:loggingPrefs": {"browser": "ALL"}}}})
        self.session = f"/session/{session['sessionId']}"

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())["value"]

    def open(self, url):
        self._call("POST", f"{self.session}/url", {"url": url})

    def run(self, script, *args):
        return self._call("POST", f"{self.session}/execute/sync", {"script": script, "args": list(args)})

    def console(self):
        """The console's messages since the last call: [{"level": "SEVERE", "message": ...}, ...]."""
        return self._call("POST", f"{self.session}/se/log", {"type": "browser"})

    def set_window_size(self, width, height):
        self._call("POST", f"{self.session}/window/rect", {"width": width, "height": height})

    def screenshot(self, path):
        pathlib.Path(path).write_bytes(base64.b64decode(self._call("GET", f"{self.session}/screenshot")))

    def close(self):
        with contextlib.suppress(OSError):
            self._call("DELETE", self.session)
        self.driver.terminate()
        self.driver.wait(timeout=30)


def search(browser, base, query):
    """The titles of the site search's results for `query` (Material's search, run in the page)."""
    browser.open(base)
    browser.run("""
        const toggle = document.querySelector('#__search');  // the search panel open, as after a click
        if (toggle) { toggle.checked = true; toggle.dispatchEvent(new Event('change')); }
        const input = document.querySelector('input.md-search__input');
        input.focus(); input.value = arguments[0];
        input.dispatchEvent(new Event('input', {bubbles: true}));
        input.dispatchEvent(new KeyboardEvent('keyup', {bubbles: true, key: 'e'}));""", query)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the index loads in a web worker
        found = browser.run("return Array.from(document.querySelectorAll('.md-search-result__item'))"
                            ".map(item => item.textContent.trim().slice(0, 120));")
        if found:
            return found
        time.sleep(0.5)
    return []


def check_site(site, screenshots=None):
    """{page: the code lines that overflow} and the search results for cross_entropy; screenshots of
    PAGES into `screenshots` when given."""
    chromium, chromedriver = _chromium(), shutil.which("chromedriver")
    with serving(site) as base, tempfile.TemporaryDirectory(prefix="tinyattn-chromium-") as profile:
        browser = Browser(chromedriver, chromium, profile)
        try:
            overflowing, widths = {}, {}
            for name, path in PAGES.items():
                browser.open(base + path)
                widths[name] = browser.run("return window.innerWidth;")
                overflowing[name] = browser.run(OVERFLOWING)
                if screenshots is not None:
                    browser.screenshot(pathlib.Path(screenshots) / f"{name}.png")
            results = search(browser, base, "cross_entropy")
            if screenshots is not None:
                browser.screenshot(pathlib.Path(screenshots) / "search-cross_entropy.png")
        finally:
            browser.close()
    return overflowing, results, widths


@contextlib.contextmanager
def browser():
    """A headless Chromium session for a test (closed after), or a RuntimeError where there is none."""
    if not available():
        raise RuntimeError("no Chromium with chromedriver here (Debian: apt-get install chromium chromium-driver)")
    with tempfile.TemporaryDirectory(prefix="tinyattn-chromium-") as profile:
        session = Browser(shutil.which("chromedriver"), _chromium(), profile)
        try:
            yield session
        finally:
            session.close()


def available():
    """Whether Chromium and chromedriver are here to run the check."""
    return _chromium() is not None and shutil.which("chromedriver") is not None


if __name__ == "__main__":
    site_dir, out_dir = sys.argv[1:3]
    pathlib.Path(out_dir).mkdir(parents=True, exist_ok=True)
    overflowing, results, widths = check_site(site_dir, out_dir)
    print(json.dumps({"window widths": widths, "overflowing code lines": overflowing,
                      "search results for cross_entropy": results}, indent=2))
