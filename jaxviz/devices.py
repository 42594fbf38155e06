"""The devices a program can run on: which there are, which one a spec names, placing
arrays there, and their memory.

- ``list_devices()`` / ``%jaxviz devices``: every device JAX can use, with its memory
  statistics where the backend reports them (GPUs and TPUs do, the CPU does not: then the
  live arrays on it are counted instead): a ``DeviceTable``, drawn by ``jaxviz.render.devices``.
- ``resolve_device("gpu:0" | "cpu" | "tpu:1" | Device | None)``: a device, or a
  ``DeviceNotFound`` whose message lists the devices there are.
- ``place(tree, device)``: the arrays of a pytree put on a device.

What a program cost there (run reports, ``profile``) is ``jaxviz.profiling``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import numpy as np

from .display import Displayed
from .text import fmt_bytes

PLATFORMS = ("gpu", "tpu", "cpu")  # probed in this order; the default backend comes first
ALIASES = {"cuda": "gpu", "rocm": "gpu", "nvidia": "gpu", "amd": "gpu"}


# ---------------------------------------------------------------------- devices
def _platform_devices(platform: str) -> list[Any]:
    try:
        return list(jax.devices(platform))
    except RuntimeError:  # "Unknown backend": no such platform here
        return []


def list_devices() -> list[Any]:
    """All devices JAX can use: the default backend's first, then the other platforms'."""
    seen: dict[Any, None] = {}
    for d in jax.devices():
        seen.setdefault(d)
    for p in PLATFORMS:
        for d in _platform_devices(p):
            seen.setdefault(d)
    return list(seen)


def default_device() -> Any:
    """The device ``jax.jit`` uses for uncommitted inputs."""
    configured = jax.config.jax_default_device  # pyright: ignore[reportAttributeAccessIssue]  (set by name)
    if configured is not None and not isinstance(configured, str):
        return configured
    if isinstance(configured, str):
        return _platform_devices(configured)[0]
    return jax.devices()[0]


def device_label(device: Any) -> str:
    """``gpu:0``: what ``--device`` accepts."""
    return f"{device.platform}:{device.id}"


def describe_device(device: Any) -> str:
    """``gpu:0 (NVIDIA H100)``."""
    return f"{device_label(device)} ({device.device_kind})"


def has_accelerator() -> bool:
    return any(d.platform != "cpu" for d in list_devices())


class DeviceNotFound(ValueError):
    """``--device`` / ``device=`` named a device that is not there. The message lists the
    devices there are, on one screen."""

    def __init__(self, spec: str, devices: Sequence[Any] | None = None, reason: str = "") -> None:
        devices = list_devices() if devices is None else list(devices)
        self.spec = spec
        self.devices = devices
        default = default_device() if devices else None
        lines = [f"no device {spec!r} here{': ' + reason if reason else ''}.", "Devices JAX can use:"]
        for d in devices:
            mark = "  (default)" if d == default else ""
            lines.append(f"  {device_label(d):8s} {d.device_kind}{mark}")
        platform = spec.split(":", 1)[0].lower()
        platform = ALIASES.get(platform, platform)
        if platform in ("gpu", "tpu") and not any(d.platform == platform for d in devices):
            lines.append(f"JAX found no {platform.upper()}: is the matching jax plugin installed "
                         f"(e.g. pip install 'jax[cuda12]') and is JAX_PLATFORMS unset?")
        if devices:
            lines.append(f"Pick one, e.g. --device {device_label(devices[0])}.")
        super().__init__("\n".join(lines))

    def _render_traceback_(self) -> list[str]:  # IPython: the message, not a traceback
        return [f"DeviceNotFound: {self.args[0]}"]


def resolve_device(spec: Any = None) -> Any:
    """``None``/"default" → the default device; "cpu", "gpu:1", "cuda:0", "tpu:0" or a
    ``jax.Device`` → that device. Raises ``DeviceNotFound`` listing the devices."""
    if spec is None or (isinstance(spec, str) and spec.strip().lower() in ("", "default")):
        return default_device()
    if not isinstance(spec, str):
        if hasattr(spec, "platform") and hasattr(spec, "id"):
            return spec
        raise TypeError(f"device must be a string like 'gpu:0' or a jax.Device, not {type(spec).__name__}")
    text = spec.strip().lower()
    platform, _, index = text.partition(":")
    platform = ALIASES.get(platform, platform)
    candidates = _platform_devices(platform)
    if not candidates:
        raise DeviceNotFound(spec, reason=f"no {platform!r} platform")
    if not index:
        return candidates[0]
    try:
        i = int(index)
    except ValueError:
        raise DeviceNotFound(spec, reason=f"{index!r} is not a device number") from None
    for d in candidates:
        if d.id == i:
            return d
    if 0 <= i < len(candidates):
        return candidates[i]
    raise DeviceNotFound(spec, reason=f"there are {len(candidates)} {platform} device(s)")


def place(tree: Any, device: Any) -> Any:
    """Put every array leaf of ``tree`` on ``device`` (Python values stay as they are)."""
    def put(leaf: Any) -> Any:
        if isinstance(leaf, (jax.Array, np.ndarray, np.generic)):
            return jax.device_put(leaf, device)
        return leaf

    return jax.tree_util.tree_map(put, tree)


def memory_stats(device: Any) -> dict[str, int] | None:
    try:
        stats = device.memory_stats()
    except Exception:  # some backends raise instead of returning None
        return None
    return dict(stats) if stats else None


def live_bytes() -> dict[Any, tuple[int, int]]:
    """Per device: (live arrays, bytes) from ``jax.live_arrays()``."""
    out: dict[Any, tuple[int, int]] = {}
    for arr in jax.live_arrays():
        try:
            devs = list(arr.devices())
            nbytes = int(arr.nbytes) // max(len(devs), 1)
        except Exception:  # deleted or donated meanwhile
            continue
        for d in devs:
            n, b = out.get(d, (0, 0))
            out[d] = (n + 1, b + nbytes)
    return out


@dataclass
class DeviceRow:
    label: str
    kind: str
    platform: str
    default: bool
    process: int
    stats: dict[str, int] | None
    live: tuple[int, int]

    def memory_text(self) -> str:
        s = self.stats
        live = f"{self.live[0]} live arrays, {fmt_bytes(self.live[1])}"
        if not s:
            return f"{live} (this backend reports no memory statistics)"
        parts = []
        if "bytes_in_use" in s:
            limit = f" of {fmt_bytes(s['bytes_limit'])}" if s.get("bytes_limit") else ""
            parts.append(f"in use {fmt_bytes(s['bytes_in_use'])}{limit}")
        if "peak_bytes_in_use" in s:
            parts.append(f"peak {fmt_bytes(s['peak_bytes_in_use'])}")
        if "largest_alloc_size" in s:
            parts.append(f"largest allocation {fmt_bytes(s['largest_alloc_size'])}")
        return " · ".join(parts + [live])


class DeviceTable(Displayed):
    """What ``%jaxviz devices`` shows (text, HTML and rich)."""

    def __init__(self, rows: list[DeviceRow]) -> None:
        self.rows = rows

    @classmethod
    def collect(cls, platform: str | None = None) -> DeviceTable:
        default = default_device()
        live = live_bytes()
        rows = []
        for d in list_devices():
            if platform and d.platform != ALIASES.get(platform, platform):
                continue
            rows.append(DeviceRow(device_label(d), d.device_kind, d.platform, d == default,
                                  d.process_index, memory_stats(d), live.get(d, (0, 0))))
        return cls(rows)

    def note(self) -> str:
        if any(r.platform != "cpu" for r in self.rows):
            return ""
        return "No accelerator found: %%jaxpr and jaxviz.profile run on the CPU."

    def __repr__(self) -> str:
        lines = [f"{'device':8s} {'kind':24s} memory"]
        for r in self.rows:
            mark = " *" if r.default else "  "
            lines.append(f"{r.label:8s} {r.kind[:24]:24s} {r.memory_text()}{mark}")
        lines.append("(* = default device; pick another with %%jaxpr --device LABEL)")
        if self.note():
            lines.append(self.note())
        return "\n".join(lines)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"device": r.label, "kind": r.kind, "platform": r.platform, "default": r.default,
                 "process": r.process, "memory_stats": r.stats, "live_arrays": r.live[0],
                 "live_bytes": r.live[1]} for r in self.rows]
