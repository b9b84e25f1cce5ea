"""Chat messages in the OpenAI format: text, and images inlined as data URLs.

Its own module because stages build prompts without needing the HTTP client that sends them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from typing import Any


def image_part(data: bytes, mime: str = "image/png") -> dict[str, Any]:
    """An `image_url` content part carrying the image inline as a base64 data URL."""
    encoded = base64.b64encode(data).decode("ascii")
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{encoded}"}}


def _sniff_mime(data: bytes) -> str:
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    return "image/png"


def user_message(text: str, images: Sequence[bytes] = ()) -> dict[str, Any]:
    """A user message; with images, its content is a list of one text part and one part per image."""
    if not images:
        return {"role": "user", "content": text}
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}]
    parts.extend(image_part(img, _sniff_mime(img)) for img in images)
    return {"role": "user", "content": parts}


def system_message(text: str) -> dict[str, Any]:
    return {"role": "system", "content": text}


def text_parts(content: Any) -> list[str]:
    """The texts of a message's content: a string, or OpenAI's list of parts (the text parts)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(p.get("text", "")) for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
    return []


def message_text(content: Any) -> str:
    """A message's text in one string (its text parts joined)."""
    return " ".join(text_parts(content))
