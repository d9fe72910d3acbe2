"""`Content-Disposition: attachment` for downloads, with a file name that is safe to save.

The stored name is the uploader's (any printable text up to 200 characters). A browser or a
client library may save the download under it, so the name in this header has no path
separators (`../../etc/passwd`), no control characters (a CR/LF would also split the header)
and no bidi or other format characters (U+202E turns `invoice_fdp.exe` into `invoice_exe.pdf`
on screen). It is sent twice (RFC 6266): `filename*=UTF-8''...` (RFC 8187 percent-encoding)
for clients that read it, and an ASCII `filename="..."` for the rest.
"""

from __future__ import annotations

import unicodedata
from urllib.parse import quote

FALLBACK_NAME = "document"  # also the upload's default name
MAX_NAME = 200  # characters, as at upload
# RFC 8187 attr-char besides letters and digits: everything else is percent-encoded.
_ATTR_CHAR_PUNCTUATION = "!#$&+-.^_`|~"
# Left out of the ASCII form: quoting characters, `%`, which some clients decode there, and the
# separators compatibility decomposition can bring back (fullwidth U+FF0F becomes `/`).
_NOT_IN_ASCII_FORM = frozenset('"\\;%/')


def safe_file_name(name: str) -> str:
    """`name` without path separators, control, format (bidi) or separator characters, and
    without leading or trailing dots and spaces; FALLBACK_NAME when nothing is left."""
    kept = []
    for ch in name:
        if ch in "/\\":
            kept.append("_")
        elif unicodedata.category(ch) == "Zs":
            kept.append(" ")  # no-break and other spaces: a plain one
        elif ch.isprintable():  # False for Cc, Cf (bidi, zero-width), Zl, Zp, Cs, Co, Cn
            kept.append(ch)
    # Leading dots hide a file on Unix; trailing dots and spaces are dropped by Windows.
    cleaned = "".join(kept).strip(" .")[:MAX_NAME].strip(" .")
    return cleaned or FALLBACK_NAME


def ascii_file_name(safe_name: str) -> str:
    """The ASCII form of a safe name: accents dropped (é to e), anything else non-ASCII and
    quoting characters replaced by `_`."""
    decomposed = unicodedata.normalize("NFKD", safe_name)
    letters = [ch for ch in decomposed if not unicodedata.combining(ch)]
    ascii_name = "".join(
        ch if " " <= ch <= "~" and ch not in _NOT_IN_ASCII_FORM else "_" for ch in letters)
    return ascii_name[:MAX_NAME].strip(" .") or FALLBACK_NAME


def content_disposition(name: str) -> str:
    safe_name = safe_file_name(name)
    encoded = quote(safe_name, safe=_ATTR_CHAR_PUNCTUATION, encoding="utf-8")
    return f"attachment; filename=\"{ascii_file_name(safe_name)}\"; filename*=UTF-8''{encoded}"
