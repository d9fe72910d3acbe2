"""Forensic leak tracing: an invisible, per-render mark in every served page (docs/leak-tracing.md).

`embed` adds the mark for one render id, `decode` reads it back from a leaked image (or says
there is none); `render.forensic_wire.trace_codes` turns a render id into the trace code
printed in the strip.
"""

from render.forensic.decode import Detection, decode, detect
from render.forensic.embed import STRENGTH, embed, embed_into

__all__ = ["STRENGTH", "Detection", "decode", "detect", "embed", "embed_into"]
