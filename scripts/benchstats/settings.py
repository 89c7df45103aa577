"""The settings of one bench run, as scripts/bench saved them (settings.env: NAME=value lines)."""
from __future__ import annotations

from pathlib import Path


class Settings:
    def __init__(self, values: dict[str, str]):
        self._values = values

    @classmethod
    def read(cls, path: Path) -> "Settings":
        values = {}
        for line in path.read_text().splitlines():
            name, separator, value = line.partition("=")
            if separator:
                values[name] = value
        return cls(values)

    def get(self, name: str, default: str = "") -> str:
        return self._values.get(name, default)

    def number(self, name: str) -> float | None:
        """A numeric setting; None when empty or absent."""
        try:
            return float(self._values[name])
        except (KeyError, ValueError):
            return None

    def integer(self, name: str) -> int | None:
        value = self.number(name)
        return None if value is None else int(value)

    def flag(self, name: str) -> bool:
        """A 0/1 switch such as SKIP_H2: on only when it is 1, as the script reads them."""
        return self._values.get(name) == "1"

    def credential_line(self) -> str:
        """What nginx and HAProxy attach to every call (scripts/bench's PROXY_CREDENTIAL)."""
        kind, size = self.get("PROXY_CREDENTIAL"), self.get("CREDENTIAL_BYTES")
        if kind == "jwt":
            return (f"nginx and HAProxy set Authorization to a stand-in provider's JWT ({size} bytes with `Bearer `), "
                    "as long as the sidecar's")
        if kind == "static":
            return f"nginx and HAProxy set Authorization: Bearer static ({size} bytes; PROXY_CREDENTIAL=static)"
        return "nginx and HAProxy set Authorization: Bearer static (13 bytes; a run from before PROXY_CREDENTIAL)"
