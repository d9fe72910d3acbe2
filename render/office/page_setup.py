"""A spreadsheet's print setup, edited as bytes: "fit every sheet to one page wide".

LibreOffice prints a sheet wider than the paper as further pages of columns, so a reader of
page 1 sees a slice of the table. A sheet whose author chose no scale and no fit is asked to fit
its columns to the page width, as many pages tall as it needs; a sheet with the author's own
scale or fit is left alone, and a print area stays what is printed (LibreOffice fits the area).

The parts are untrusted and never parsed as XML here (no parser, no entity, no tree): a tag is
found by its name (in well-formed XML a raw '<' is only ever markup), an attribute is added or
replaced, and anything unexpected leaves the part unchanged.
"""

from __future__ import annotations

import re

_FIT_XLSX_SETUP = b' fitToWidth="1" fitToHeight="0"'
# Elements a worksheet may hold after <pageSetup> (ECMA-376's order): a new one goes before them.
_AFTER_PAGE_SETUP = (b"headerFooter", b"rowBreaks", b"colBreaks", b"customProperties",
                     b"cellWatches", b"ignoredErrors", b"smartTags", b"drawing",
                     b"legacyDrawing", b"legacyDrawingHF", b"drawingHF", b"picture",
                     b"oleObjects", b"controls", b"webPublishItems", b"tableParts", b"extLst")
_ROOT = re.compile(rb"<(?:([A-Za-z_][\w.-]*):)?worksheet(?=[\s/>])")
_LAYOUT = re.compile(rb"<([A-Za-z_][\w.-]*):page-layout(?=[\s/>])[^>]*>")


def _tag(xml: bytes, name: bytes, start: int = 0) -> re.Match[bytes] | None:
    return re.compile(rb"<" + re.escape(name) + rb"(?=[\s/>])[^>]*>").search(xml, start)


def _attribute(tag: bytes, name: bytes) -> bytes | None:
    found = re.search(rb"\s" + name + rb"""\s*=\s*["']([^"']*)["']""", tag)
    return found.group(1) if found else None


def _without(tag: bytes, *names: bytes) -> bytes:
    for name in names:
        tag = re.sub(rb"\s" + name + rb"""\s*=\s*["'][^"']*["']""", b"", tag)
    return tag


def _with_attributes(tag: bytes, name: bytes, attributes: bytes) -> bytes:
    """The start tag `<name ...>` with `attributes` added right after its name."""
    return tag[:len(name) + 1] + attributes + tag[len(name) + 1:]


def fit_worksheet(xml: bytes) -> bytes:
    """An OOXML worksheet part asking to fit one page wide, or the part unchanged when its
    author set a scale (other than 100 %) or a fit of their own."""
    root = _ROOT.search(xml)
    if root is None:
        return xml
    prefix = root.group(1) + b":" if root.group(1) else b""
    setup = _tag(xml, prefix + b"pageSetup")
    fit = _tag(xml, prefix + b"pageSetUpPr")
    if fit is not None and _attribute(fit.group(0), b"fitToPage") in (b"1", b"true"):
        return xml
    if setup is not None and _attribute(setup.group(0), b"scale") not in (None, b"100"):
        return xml
    fitted = _with_page_setup(xml, prefix, setup)
    return _with_fit_to_page(fitted, prefix, root.end()) if fitted is not None else xml


def _with_page_setup(xml: bytes, prefix: bytes, setup: re.Match[bytes] | None) -> bytes | None:
    name = prefix + b"pageSetup"
    if setup is not None:
        tag = _with_attributes(_without(setup.group(0), b"fitToWidth", b"fitToHeight"), name,
                               _FIT_XLSX_SETUP)
        return xml[:setup.start()] + tag + xml[setup.end():]
    element = b"<" + name + _FIT_XLSX_SETUP + b"/>"
    margins = _tag(xml, prefix + b"pageMargins")
    if margins is not None and margins.group(0).endswith(b"/>"):
        return xml[:margins.end()] + element + xml[margins.end():]
    later = [found.start() for found in (_tag(xml, prefix + n) for n in _AFTER_PAGE_SETUP)
             if found is not None]
    end = xml.rfind(b"</" + prefix + b"worksheet>")
    at = min(later) if later else end
    return xml[:at] + element + xml[at:] if at >= 0 else None


def _with_fit_to_page(xml: bytes, prefix: bytes, after_root: int) -> bytes:
    element = b"<" + prefix + b'pageSetUpPr fitToPage="1"/>'
    fit = _tag(xml, prefix + b"pageSetUpPr")
    if fit is not None:
        tag = _with_attributes(_without(fit.group(0), b"fitToPage"), prefix + b"pageSetUpPr",
                               b' fitToPage="1"')
        return xml[:fit.start()] + tag + xml[fit.end():]
    properties = _tag(xml, prefix + b"sheetPr")
    if properties is not None and properties.group(0).endswith(b"/>"):
        opened = properties.group(0)[:-2].rstrip() + b">"
        return (xml[:properties.start()] + opened + element + b"</" + prefix + b"sheetPr>"
                + xml[properties.end():])
    if properties is not None:
        close = xml.find(b"</" + prefix + b"sheetPr>", properties.end())
        return xml[:close] + element + xml[close:] if close >= 0 else xml
    root_end = xml.find(b">", after_root)  # the first child's place: <sheetPr> comes first
    if root_end < 0 or xml[root_end - 1:root_end] == b"/":
        return xml
    sheet_properties = b"<" + prefix + b"sheetPr>" + element + b"</" + prefix + b"sheetPr>"
    return xml[:root_end + 1] + sheet_properties + xml[root_end + 1:]


def fit_page_layouts(xml: bytes) -> bytes:
    """An OpenDocument styles part whose every page layout without a scale of its own fits
    the page width (`style:scale-to-X="1"`, any number of pages tall)."""
    pieces, done = [], 0
    for layout in _LAYOUT.finditer(xml):
        prefix = layout.group(1)
        scale = b" " + prefix + b':scale-to-X="1" ' + prefix + b':scale-to-Y="0"'
        properties_name = prefix + b":page-layout-properties"
        new_properties = b"<" + properties_name + scale + b"/>"
        start_tag = layout.group(0)
        if start_tag.endswith(b"/>"):
            pieces += [xml[done:layout.start()], start_tag[:-2].rstrip() + b">", new_properties,
                       b"</" + prefix + b":page-layout>"]
            done = layout.end()
            continue
        close = xml.find(b"</" + prefix + b":page-layout>", layout.end())
        if close < 0:
            continue  # not well-formed: left to LibreOffice as it is
        properties = _tag(xml[:close], properties_name, layout.end())
        if properties is None:
            pieces += [xml[done:layout.end()], new_properties]
            done = layout.end()
        elif b"scale-to" not in properties.group(0):  # scale-to, -pages, -X, -Y: the author's
            pieces += [xml[done:properties.start()],
                       _with_attributes(properties.group(0), properties_name, scale)]
            done = properties.end()
    return b"".join([*pieces, xml[done:]])
