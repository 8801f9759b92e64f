"""Open a local HTML file in Debian's headless Chromium and report what it fetched, drew and looked like.

The browser is driven through the Chrome DevTools Protocol over ``--remote-debugging-pipe``: it reads commands
from its fd 3 and writes answers and events to its fd 4, each a JSON message ended by a NUL byte.  No TCP port is
opened and nothing beyond the standard library is needed.  One browser per :func:`open_page`, in its own process
group with a throwaway profile, killed (the whole group) whatever happens; every wait is bounded.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM = ("chromium", "chromium-browser")
FLAGS = ("--headless=new", "--no-sandbox", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run",
         "--no-default-browser-check", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--disable-extensions", "--disable-default-apps", "--mute-audio",
         "--hide-scrollbars", "--window-size=1280,900")

# each <svg>'s rendered box, and what could load something if the page held it
SVG_SIZES = """JSON.stringify({
  svgs: [...document.querySelectorAll('svg')].map(s => { const r = s.getBoundingClientRect();
                                                     return [r.width, r.height, s.querySelectorAll('*').length]; }),
  scripts: document.querySelectorAll('script').length,
  loaders: [...document.querySelectorAll('img, link, iframe, object, embed, video, audio, source')].length,
  tables: document.querySelectorAll('table').length,
  title: document.title,
  height: document.documentElement.scrollHeight,
})"""


def chromium() -> str | None:
    return next((p for name in CHROMIUM if (p := shutil.which(name))), None)


@dataclass
class PageReport:
    url: str
    requests: list[str] = field(default_factory=list)  # every URL the page asked for (Network.requestWillBeSent)
    log: list[dict[str, Any]] = field(default_factory=list)  # console and browser log entries (CSP reports too)
    dom: dict[str, Any] = field(default_factory=dict)  # SVG_SIZES's answer
    screenshot: Path | None = None
    measured: Any = None  # the JSON value of open_page's ``measure`` script


class _Pipe:
    """The CDP connection: numbered commands, their answers, and the events seen meanwhile."""

    def __init__(self, to_browser: int, from_browser: int, deadline: float) -> None:
        self.out, self.inp, self.deadline = to_browser, from_browser, deadline
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self.out, data):]
        while True:
            reply = self._message()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return dict(reply.get("result", {}))
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        for i, e in enumerate(self.events):
            if e.get("method") == method:
                return self.events.pop(i)
        while True:
            e = self._message()
            if e.get("method") == method:
                return e
            self.events.append(e)

    def _message(self) -> dict[str, Any]:
        while b"\0" not in self.buffer:
            left = self.deadline - time.monotonic()
            if left <= 0 or not select.select([self.inp], [], [], left)[0]:
                raise TimeoutError("the browser did not answer in time")
            chunk = os.read(self.inp, 1 << 20)
            if not chunk:
                raise EOFError("the browser closed its pipe")
            self.buffer += chunk
        raw, self.buffer = self.buffer.split(b"\0", 1)
        return dict(json.loads(raw))


def open_page(path: Path, profile: Path, screenshot: Path | None = None, timeout: float = 60.0,
              shot_height: int = 12000, width: int = 1280, measure: str | None = None,
              shot_scale: float = 0.5) -> PageReport:
    """Load ``path`` (file://) in a fresh headless Chromium with ``profile`` as its user-data-dir, its viewport
    ``width`` CSS pixels wide (below 600 as a phone's: a touch screen honouring the page's viewport meta): the
    requests it made, its log, the DOM's figures, the JSON value of the script ``measure`` (in ``measured``) and
    (when ``screenshot`` is given) a PNG of the page's top ``shot_height`` CSS pixels at ``shot_scale``."""
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("chromium is not installed")
    url = path.resolve().as_uri()
    cmd_r, cmd_w = os.pipe()
    res_r, res_w = os.pipe()
    # copies above 9 (the lowest free ones: nothing open is replaced), so the child's dup2 onto 3 and 4 cannot
    # overwrite one it still needs
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (cmd_r, res_w)]
    for fd in (cmd_r, res_w):
        os.close(fd)

    def child_fds() -> None:
        os.dup2(high[0], 3)
        os.dup2(high[1], 4)

    deadline = time.monotonic() + timeout
    proc = subprocess.Popen([exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(3, 4),
                            preexec_fn=child_fds, start_new_session=True)
    for fd in high:
        os.close(fd)
    report = PageReport(url)
    try:
        pipe = _Pipe(cmd_w, res_r, deadline)
        target = pipe.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = pipe.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Network", "Page", "Log", "Runtime"):
            pipe.send(f"{domain}.enable", session=session)
        pipe.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": 900, "deviceScaleFactor": 1,
                                                         "mobile": width < 600}, session)
        pipe.send("Page.navigate", {"url": url}, session)
        pipe.wait_event("Page.loadEventFired")
        answer = pipe.send("Runtime.evaluate", {"expression": SVG_SIZES, "returnByValue": True}, session)
        report.dom = json.loads(answer["result"]["value"])
        if measure is not None:
            answer = pipe.send("Runtime.evaluate", {"expression": f"JSON.stringify({measure})", "returnByValue": True},
                               session)
            if "exceptionDetails" in answer:
                raise RuntimeError(f"the measuring script failed: {answer['exceptionDetails']}")
            report.measured = json.loads(answer["result"]["value"])
        if screenshot is not None:
            height = min(int(report.dom["height"]), shot_height)
            shot = pipe.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                        "clip": {"x": 0, "y": 0, "width": width, "height": height,
                                                                 "scale": shot_scale}}, session)
            screenshot.write_bytes(base64.b64decode(shot["data"]))
            report.screenshot = screenshot
        for e in pipe.events:
            if e.get("method") == "Network.requestWillBeSent":
                report.requests.append(e["params"]["request"]["url"])
            elif e.get("method") == "Log.entryAdded":
                report.log.append(e["params"]["entry"])
            elif e.get("method") == "Runtime.consoleAPICalled":
                report.log.append({"level": e["params"]["type"], "text": str(e["params"]["args"])[:300]})
        return report
    finally:
        os.close(cmd_w)
        os.close(res_r)
        _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """The browser and every process it started (its own group), at once: nothing is left running."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(timeout=10)
