"""Text fields of the real Claude Code fixture transcripts, as the envelope builder sees them.

Used by the redaction tests (what fires on real tool output) and by ``bench/redact_corpus.py``
(negatives and the 1 MiB timing sample). Each item is a :class:`Field`: source file name, line
number (1-based), envelope field (``content`` for prompts/assistant text/thinking,
``tool.input`` and ``tool.result`` for tool calls), the text, and whether the entropy rule
applies (tool fields only, docs/design.md §7). Tool input is rendered as compact JSON exactly as
``lib.envelope.to_text`` does; a tool result given as a list of content blocks is rendered the
same way, so the scanner sees what the builder would scrub.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from lib.envelope import to_text

TRANSCRIPTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                           "fixtures", "claude-transcripts")


@dataclass(frozen=True)
class Field:
    """One free-text value from a fixture transcript (see module docstring)."""

    file: str
    line: int
    field: str
    text: str
    is_tool: bool


def transcript_files() -> list[str]:
    """Sorted absolute paths of every ``*.jsonl`` fixture transcript."""
    return sorted(os.path.join(TRANSCRIPTS, n) for n in os.listdir(TRANSCRIPTS) if n.endswith(".jsonl"))


def iter_fields(paths=None):
    """Yield every :class:`Field` of the given transcripts (default: all fixtures), in file order.

    Lines that are not JSON objects or carry no ``message`` are skipped; empty texts are skipped.
    """
    for path in paths or transcript_files():
        name = os.path.basename(path)
        with open(path, encoding="utf-8") as fh:
            for no, line in enumerate(fh, 1):
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                msg = rec.get("message") if isinstance(rec, dict) else None
                if not isinstance(msg, dict):
                    continue
                content = msg.get("content")
                if isinstance(content, str):
                    if content:
                        yield Field(name, no, "content", content, False)
                    continue
                for block in content or []:
                    if not isinstance(block, dict):
                        continue
                    kind = block.get("type")
                    if kind == "text" and block.get("text"):
                        yield Field(name, no, "content", block["text"], False)
                    elif kind == "thinking" and block.get("thinking"):
                        yield Field(name, no, "content", block["thinking"], False)
                    elif kind == "tool_use" and block.get("input") is not None:
                        yield Field(name, no, "tool.input", to_text(block["input"]), True)
                    elif kind == "tool_result" and block.get("content") not in (None, "", []):
                        yield Field(name, no, "tool.result", to_text(block["content"]), True)


def tool_output_sample(limit_bytes: int = 1 << 20) -> str:
    """About ``limit_bytes`` of real tool input/output, newline-joined, cycling the fixtures.

    The 1 MiB redaction budget (docs/design.md §12) is measured on this text. The result is cut on a
    character boundary at ``limit_bytes`` UTF-8 bytes.
    """
    parts: list[str] = []
    size = 0
    tools = [f.text for f in iter_fields() if f.is_tool]
    if not tools:
        return ""
    while size < limit_bytes:
        for t in tools:
            parts.append(t)
            size += len(t.encode("utf-8")) + 1
            if size >= limit_bytes:
                break
    raw = "\n".join(parts).encode("utf-8")[:limit_bytes]
    return raw.decode("utf-8", "ignore")


JUDGED_HITS = {
    # (file, line, field): (rules expected, judgement). Each was inspected by eye.
    ("spotter__258c7280-ae70-4798-800f-63464d01a85d.jsonl", 1111, "tool.result"):
        (("high_entropy_run",), "Phoenix csrf-token meta tag (T1t_QhofQ146...) of a local dev server page the "
                                "agent fetched, in a test failure: a real secret class (issue #16 fixture); correct"),
    ("spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 66, "tool.result"):
        (("high_entropy_run",), "Claude thinking-block 'signature' (opaque base64 blob) inside a transcript the agent "
                                "read: not a credential, but opaque and useless in the lake; acceptable"),
    ("spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 78, "tool.result"):
        (("high_entropy_run",), "same: thinking-block signature; acceptable"),
    ("spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 1327, "tool.result"):
        (("high_entropy_run",), "Phoenix LiveView data-phx-session / data-phx-static signed tokens (SFMyNTY...): "
                                "signed session tokens, a real secret class; correct"),
    ("spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 1357, "tool.result"):
        (("high_entropy_run",), "Phoenix LiveView signed session tokens; correct"),
    ("spotter__8463c716-a2ea-4c14-9efa-87158ebd9f20.jsonl", 1392, "tool.result"):
        (("high_entropy_run",), "Phoenix LiveView signed session tokens; correct"),
}
"""Every field of the fixture transcripts on which a rule fires, with the judgement made after
reading the hit. The replaced CSRF-token fakes in spotter__8463c716 (``FffFFFFf0...``) use three
symbols (~1.5 bits/char) and do not fire: judged acceptable, because a real CSRF token (random
base64url) does fire — see ``test_real_csrf_token_in_meta_tag_is_redacted``."""
