"""What the pool knows of its workers' sandbox: the layers reported, warnings, the required mode."""

from __future__ import annotations

import logging
from typing import Any

from render.pool import zygote
from render.sandbox.layers import ALL_LAYERS, Layer, names

log = logging.getLogger("vaultd.render")
MODES = ("auto", "required")


class SandboxUnavailable(Exception):
    """`render.sandbox = "required"` and a layer cannot be applied on this machine."""


class SandboxReport:
    def __init__(self, mode: str) -> None:
        if mode not in MODES:
            raise ValueError(f"render sandbox must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.layers: Layer | None = None  # as the latest ready worker reported them
        self._warned = Layer(0)

    def accept(self, layers: Layer) -> bool:
        """Record a worker's layers; False if it must not serve ("required", layers missing).
        Each missing layer is logged once, at WARNING."""
        self.layers = layers
        missing = ALL_LAYERS & ~layers
        if missing and self.mode == "required":
            log.error("render worker lacks sandbox layers %s; refused", ", ".join(names(missing)))
            return False
        for layer in Layer:
            if missing & layer and not self._warned & layer:
                self._warned |= layer
                log.warning("render sandbox layer missing: %s", (layer.name or "").lower())
        return True

    def state(self) -> dict[str, Any]:
        """Each layer active or missing (None: no worker has reported yet)."""
        layers: dict[str, bool] | None = None
        if self.layers is not None:
            layers = {(layer.name or "").lower(): bool(self.layers & layer) for layer in Layer}
            layers["server_not_dumpable"] = zygote.server_not_dumpable()
        complete = layers is not None and all(layers.values())
        return {"mode": self.mode, "layers": layers, "complete": complete}

    def check_required(self) -> None:
        if self.mode != "required":
            return
        if self.layers is None:
            raise SandboxUnavailable("render.sandbox is \"required\" but no worker started")
        missing = names(ALL_LAYERS & ~self.layers)
        if not zygote.server_not_dumpable():
            missing.append("server_not_dumpable")
        if missing:
            raise SandboxUnavailable(
                "render.sandbox is \"required\" but these layers are missing: "
                + ", ".join(missing))
