"""A real OpenAI-compatible server for the tests: llama-cpp-python's own, on the 0.5B model.

`python -m llama_cpp.server` is what a user would run (README, "An LLM served elsewhere"). It
loads the weights in its own process, which the LLM load log does not see: tests that start one
are marked slow all the same.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from assistant.config import load_settings
from assistant.models import resolve

from .conftest import MODELS_DIR

SERVED_MODEL = "qwen2.5-coder-0.5b-instruct"


def model_file() -> str:
    settings = load_settings(user_file="/nonexistent", overrides={"paths": {"models_dir": MODELS_DIR}})
    return resolve(settings, "llm", SERVED_MODEL).source


def free_port() -> int:
    """A port nothing listens on now (the kernel's pick): a server to come, or an unreachable one."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LLMServer:
    port: int
    log: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, wait: float = 180) -> LLMServer:
        args = [sys.executable, "-m", "llama_cpp.server", "--model", model_file()]
        args += ["--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", "4096"]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the LLM server exited with {self.process.returncode}:\n{self.log.read_text()}")
            try:
                if httpx.get(f"{self.base_url}/models", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.3)
        raise AssertionError(f"the LLM server did not answer within {wait} s:\n{self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL: the server vanishes mid-whatever, as a crashed or OOM-killed one does."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def chat_requests(self) -> int:
        """Chat completions the server has accepted so far (uvicorn logs one line each)."""
        return sum('"POST /v1/chat/completions HTTP/1.1" 200' in line for line in self.log.read_text().splitlines())


@contextmanager
def llm_server(root: Path) -> Iterator[LLMServer]:
    root.mkdir(parents=True, exist_ok=True)
    server = LLMServer(free_port(), root / "llm-server.log")
    try:
        yield server.start()
    finally:
        server.kill()
