"""What the tests that need a web server or a browser share: a quiet HTTP server on the loopback interface and
headless Chromium (Debian's, driven by Playwright)."""
from __future__ import annotations

import contextlib
import http.server
import os
import shutil
import threading

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    "Serves a directory without logging every request to stderr."
    def log_message(self, *args): pass


@contextlib.contextmanager
def serve(directory, handler: type = QuietHandler):
    "Serve `directory` over HTTP on 127.0.0.1 (a free port) with `handler`; yields the base URL, stops on exit."
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a, **k: handler(*a, directory=str(directory), **k))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try: yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


@contextlib.contextmanager
def chromium():
    "Headless Chromium with no background network traffic; skips (fails on CI) where Chromium is not installed."
    if CHROMIUM is None:
        if os.environ.get("CI"): pytest.fail("chromium is not installed (.ci/run installs Debian's chromium)")
        pytest.skip("chromium not installed: apt-get install chromium")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run", "--disable-quic"])
        try: yield b
        finally: b.close()
