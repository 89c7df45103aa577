"""Runs `fleet-token-proxy serve` as a child process for the tests, the way an operator would."""
from __future__ import annotations

import os
import re
import resource
import signal
import subprocess
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
_ADDRESS = re.compile(r'address="?(127\.0\.0\.1:\d+)')


def find_binary() -> Path:
    """`FLEET_TOKEN_PROXY_BIN`, or the debug build in this repository."""
    configured = os.environ.get("FLEET_TOKEN_PROXY_BIN")
    return Path(configured) if configured else REPO_ROOT / ".build" / "debug" / "fleet-token-proxy"


class SidecarProcess:
    def __init__(self, binary: Path, *, upstream: str, provider_url: str, log_path: Path, extra_args: tuple[str, ...] = (),
                 descriptor_limit: int | None = None):
        self.binary = binary
        self.args = [str(binary), "serve", "--listen", "127.0.0.1:0", "--upstream", upstream,
                     "--provider-url", provider_url, "--log-level", "info", *extra_args]
        self.log_path = log_path
        # RLIMIT_NOFILE for the child (the soak's descriptor squeeze), else the caller's.
        self.descriptor_limit = descriptor_limit
        self.process: subprocess.Popen | None = None
        self.address = ""
        # Set when a test stops it (stop(), or SIGTERM through `terminate()`): its exit is expected.
        self.expected_exit = False

    def start(self, timeout: float = 15.0) -> "SidecarProcess":
        """Starts it and waits for the `address=…` line; RuntimeError with the log if it fails."""
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "wb") as log:
            # Only the flags given here: a FLEET_TOKEN_PROXY_* variable of the caller's must not
            # change what is under test.
            environment = {k: v for k, v in os.environ.items() if not k.startswith("FLEET_TOKEN_PROXY_")}
            limit = self.descriptor_limit

            def limit_descriptors() -> None:
                if limit is not None:
                    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

            self.process = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=environment,
                                            preexec_fn=limit_descriptors if limit is not None else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = _ADDRESS.search(self.log_path.read_text(errors="replace"))
            if match:
                self.address = match.group(1)
                return self
            if self.process.poll() is not None:
                break
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"the sidecar did not start ({' '.join(self.args)}):\n{self.log_tail()}")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self) -> int | None:
        """SIGTERM, then SIGKILL after 15 s; returns the exit status."""
        if self.process is None:
            return None
        self.expected_exit = True
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def terminate(self) -> None:
        """SIGTERM (a drain), without waiting."""
        self.expected_exit = True
        self.process.send_signal(signal.SIGTERM)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
