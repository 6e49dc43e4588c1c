"""A published figure is a picture, never a program: SVG through a
strict allow-list.

The site serves a snippet's SVG as ``figures/<id>.svg``, where a browser
opening it would run scripts. ``sanitise`` keeps drawing elements and
attributes (what matplotlib writes) and drops event handlers, links but
to ``#id``, images but PNG or JPEG data and processing instructions; it
refuses entity declarations (an entity bomb). An SVG with nothing to
remove comes back byte for byte.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

SVG = "http://www.w3.org/2000/svg"
XLINK = "http://www.w3.org/1999/xlink"
XML = "http://www.w3.org/XML/1998/namespace"
#: Drawing elements (local names in the SVG namespace).
ELEMENTS = {
    "svg", "g", "defs", "style", "path", "rect", "circle", "ellipse",
    "line", "polyline", "polygon", "text", "tspan", "use", "clipPath",
    "title", "desc", "linearGradient", "radialGradient", "stop",
    "pattern", "mask", "marker", "symbol", "image",
}  # fmt: skip
#: Whole subtrees dropped without a word: matplotlib's metadata (RDF).
QUIET = {"metadata"}
_IMAGE_DATA = re.compile(r"^data:image/(png|jpeg);base64,[A-Za-z0-9+/=\s]*$")
_BAD_CSS = re.compile(
    r"@import|url\(\s*['\"]?\s*(?!#)|expression\(|javascript:", re.I
)
_NAME = re.compile(r"^\{([^}]*)\}(.*)$")
#: A processing instruction other than the XML declaration: ElementTree
#: skips it, and ``<?xml-stylesheet href=...?>`` loaded CSS from any
#: origin when the figure was opened.
_INSTRUCTION = re.compile(r"<\?(?!xml[\s?])", re.I)


class UnsafeSvg(ValueError):
    """An SVG that cannot be read safely (not XML, an entity declaration)."""


def _split(tag: str) -> tuple[str, str]:
    m = _NAME.match(tag)
    return (m[1], m[2]) if m else ("", tag)


def sanitise(svg: str) -> tuple[str, list[str]]:
    """(the SVG to publish, what was removed). Raises ``UnsafeSvg``."""
    if "<!ENTITY" in svg.upper():
        raise UnsafeSvg("it declares an XML entity")
    try:
        root = ET.fromstring(svg)
    except ET.ParseError as exc:
        raise UnsafeSvg(f"it is not well-formed XML ({exc})") from None
    if _split(root.tag) != (SVG, "svg"):
        raise UnsafeSvg("its root element is not <svg> (SVG namespace)")
    removed: list[str] = []
    if _INSTRUCTION.search(svg):
        removed.append("a processing instruction (<?...?>)")
    _clean(root, removed)
    if not removed:
        return svg, []
    ET.register_namespace("", SVG)
    ET.register_namespace("xlink", XLINK)
    return ET.tostring(root, encoding="unicode"), removed


def _clean(element, removed: list[str]) -> None:
    for child in list(element):
        ns, name = _split(child.tag)  # (fromstring keeps no comment, no PI)
        if ns == SVG and name in QUIET:
            element.remove(child)
        elif ns != SVG or name not in ELEMENTS:
            element.remove(child)
            removed.append(f"<{name}>")
        else:
            _clean(child, removed)
    _, name = _split(element.tag)
    for attr, value in list(element.attrib.items()):
        ans, aname = _split(attr)
        low = value.strip().lower()
        bad = (
            aname.lower().startswith("on")
            or "javascript:" in low.replace(" ", "")
            or (ans not in ("", XLINK, XML))
            or (aname == "style" and _BAD_CSS.search(value))
        )
        if aname == "href":
            ok_image = name == "image" and _IMAGE_DATA.match(value.strip())
            bad = bad or not (value.startswith("#") or ok_image)
        if bad:
            del element.attrib[attr]
            removed.append(f"{aname}={value[:40]!r}")
    if name == "style" and element.text and _BAD_CSS.search(element.text):
        element.text = _BAD_CSS.sub("invalid(", element.text)
        removed.append("a CSS import or url()")
