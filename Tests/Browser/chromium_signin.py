#!/usr/bin/env python3
"""Signs in through the Starline sign-in page in headless Chromium: the $BROWSER of the end-to-end test.

    chromium_signin.py --user NAME --password PASS [--deny] --result FILE URL

sl-login --browser starts it with the URL it hands to a browser (a private file:// page that forwards
to the authorize URL). It drives Debian's chromium through chromedriver over the W3C WebDriver protocol,
the protocol Selenium speaks, with the standard library only (no Selenium install needed): open the URL,
fill in the form, press Approve (or Deny), and wait for the loopback listener's page. It writes what it
saw as JSON to --result (the test reads it) and exits 0 only when the listener's page was reached.
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C WebDriver element reference key


class WebDriver:
    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"
        self.session = None

    def call(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        # No proxy: chromedriver is on loopback, whatever http_proxy says.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=timeout) as response:
                return json.load(response).get("value")
        except urllib.error.HTTPError as error:
            raise RuntimeError(f"{method} {path}: {error.code} {error.read().decode(errors='replace')[:500]}")

    def session_call(self, method, path, body=None):
        return self.call(method, f"/session/{self.session}{path}", body)

    def find(self, css, wait=15.0):
        deadline = time.monotonic() + wait
        while True:
            try:
                return self.session_call("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no element {css!r} on {self.url()}")
                time.sleep(0.1)

    def url(self):
        return self.session_call("GET", "/url")

    def text(self):
        return self.session_call("POST", "/execute/sync", {"script": "return document.body ? document.body.innerText : ''", "args": []})


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--user", required=True)
    parser.add_argument("--password", required=True)
    parser.add_argument("--deny", action="store_true")
    parser.add_argument("--result", required=True)
    parser.add_argument("url")
    args = parser.parse_args()

    result = {"startURL": args.url}
    scratch = tempfile.mkdtemp(prefix="chromium-signin-")
    port = free_port()
    log = open(os.path.join(scratch, "chromedriver.log"), "w")
    driver_process = subprocess.Popen([CHROMEDRIVER, f"--port={port}"], stdout=log, stderr=subprocess.STDOUT)
    driver = WebDriver(port)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if driver.call("GET", "/status", timeout=2).get("ready"):
                    break
            except (OSError, RuntimeError):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("chromedriver did not become ready")
            time.sleep(0.1)
        created = driver.call("POST", "/session", {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-proxy-server",
                "--no-first-run", f"--user-data-dir={os.path.join(scratch, 'profile')}"]},
        }}}, timeout=60)
        driver.session = created["sessionId"]
        result["browserVersion"] = created.get("capabilities", {}).get("browserVersion")
        driver.session_call("POST", "/url", {"url": args.url})
        # The forwarding page replaces itself with the authorize URL; the form appears there.
        driver.session_call("POST", f"/element/{driver.find('#username')}/value", {"text": args.user})
        driver.session_call("POST", f"/element/{driver.find('#password')}/value", {"text": args.password})
        result["formURL"] = driver.url()
        button = driver.find("button[value=deny]" if args.deny else "button[value=approve]")
        driver.session_call("POST", f"/element/{button}/click", {})
        deadline = time.monotonic() + 15
        while True:
            url = driver.url()
            if "/callback?" in url and url.startswith("http://127.0.0.1:"):
                result["finalURL"] = url.split("?", 1)[0]
                result["finalText"] = driver.text()
                break
            if time.monotonic() > deadline:
                result["stuckAt"] = url
                result["stuckText"] = driver.text()[:2000]
                raise RuntimeError(f"the browser never reached the loopback callback (at {url})")
            time.sleep(0.1)
        result["ok"] = True
    except Exception as error:  # what went wrong goes to the result file and stderr, for the test's message
        result["ok"] = False
        result["error"] = str(error)
        print(f"chromium_signin: {error}", file=sys.stderr)
    finally:
        if driver.session:
            try:
                driver.session_call("DELETE", "")
            except Exception:
                pass
        driver_process.terminate()
        try:
            driver_process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            driver_process.kill()
        log.close()
        shutil.rmtree(scratch, ignore_errors=True)
        with open(args.result, "w") as out:
            json.dump(result, out)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
