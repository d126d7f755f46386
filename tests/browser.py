"""Headless Chromium driven over the DevTools protocol, for the tests and perf scripts that
check the results site in a real browser. Debian's `chromium` (installed by `make browser`)
is started with `--remote-debugging-pipe`: commands and events are JSON messages, each
ended by a NUL byte, on the child's file descriptors 3 (to the browser) and 4 (from it),
so no websocket library, no port and no downloaded browser are needed.

    with Chromium() as browser:
        page = browser.page(width=1280, height=900)
        page.goto("file:///.../index.html")
        page.wait_for("document.documentElement.dataset.readyMs")
        print(page.evaluate("document.title"))
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> Optional[str]:
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserError(RuntimeError):
    pass


class Chromium:
    """One headless browser process; `page()` opens tabs in it."""

    def __init__(self, executable: Optional[str] = None, timeout: float = 60.0) -> None:
        self.executable = executable or find_chromium()
        if not self.executable:
            raise BrowserError("no chromium on PATH; run `make browser` (apt-get install chromium)")
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="lifebench-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def child_fds() -> None:  # the protocol's fds are 3 (commands) and 4 (replies)
            high_r = os.dup(to_browser_r) if to_browser_r in (3, 4) else to_browser_r
            high_w = os.dup(from_browser_w) if from_browser_w in (3, 4) else from_browser_w
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        args = [self.executable, "--headless", "--remote-debugging-pipe", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--disable-background-networking", "--disable-sync", "--mute-audio",
                "--allow-file-access-from-files", "--hide-scrollbars",
                f"--user-data-dir={self._profile.name}"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.append("--no-sandbox")  # Chromium refuses to sandbox as root
        self.process = subprocess.Popen(args + ["about:blank"], stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        preexec_fn=child_fds, pass_fds=(3, 4))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, queue.Queue] = {}
        self.events: dict[str, list[dict]] = {}  # by session id
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()

    def _drain_stderr(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            pass

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_browser, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                for waiting in list(self._replies.values()):
                    waiting.put({"error": {"message": "the browser closed the pipe"}})
                return
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                message = json.loads(raw)
                if "id" in message:
                    waiting = self._replies.pop(message["id"], None)
                    if waiting is not None:
                        waiting.put(message)
                else:
                    self.events.setdefault(message.get("sessionId", ""), []).append(message)

    def send(self, method: str, params: Optional[dict] = None, session: Optional[str] = None,
             timeout: Optional[float] = None) -> dict:
        with self._lock:
            self._next_id += 1
            number = self._next_id
            waiting: queue.Queue = queue.Queue()
            self._replies[number] = waiting
            message = {"id": number, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        try:
            reply = waiting.get(timeout=timeout or self.timeout)
        except queue.Empty:
            raise BrowserError(f"{method}: no reply in {timeout or self.timeout} s") from None
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def page(self, width: int = 1280, height: int = 900) -> "Page":
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session, target)
        page.call("Page.enable")
        page.call("Runtime.enable")
        page.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False})
        return page

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                self.send("Browser.close", timeout=10)
        except BrowserError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            try:
                os.close(fd)
            except OSError:
                pass
        self._profile.cleanup()

    def __enter__(self) -> "Chromium":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Page:
    """One tab: navigate, evaluate JavaScript, wait for a condition, take screenshots."""

    def __init__(self, browser: Chromium, session: str, target: str) -> None:
        self.browser = browser
        self.session = session
        self.target = target

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})

    def call(self, method: str, params: Optional[dict] = None) -> dict:
        return self.browser.send(method, params, session=self.session)

    def goto(self, url: str) -> None:
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression: str, await_promise: bool = False) -> Any:
        """The value of a JavaScript expression (a thrown error is a BrowserError)."""
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": await_promise})
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{expression[:80]}...: {text}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        """Evaluate until the value is truthy; returns it (a DOM node comes back as {}, which
        is falsy: wait for `!!node`)."""
        end = time.monotonic() + timeout
        while True:
            try:
                value = self.evaluate(expression)
            except BrowserError:
                value = None  # e.g. during a navigation
            if value:
                return value
            if time.monotonic() > end:
                raise BrowserError(f"timed out after {timeout} s waiting for {expression}")
            time.sleep(0.05)

    def errors(self) -> list[str]:
        """Uncaught exceptions and console errors of the page so far."""
        out = []
        for event in self.browser.events.get(self.session, []):
            if event["method"] == "Runtime.exceptionThrown":
                details = event["params"]["exceptionDetails"]
                out.append(details.get("exception", {}).get("description") or details.get("text", ""))
            elif event["method"] == "Runtime.consoleAPICalled" and event["params"]["type"] == "error":
                out.append(" ".join(str(a.get("value", a.get("description", "")))
                                    for a in event["params"]["args"]))
        return out

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": min(size[1], 4000), "scale": 1}
        data = self.call("Page.captureScreenshot", params)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
