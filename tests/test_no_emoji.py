"""No emoji in the interface (issue 19): a machine without an emoji font shows them as empty boxes. Icons come from
the Material Symbols font that Streamlit ships with its frontend (`:material/name:`), offline on every client."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# pictographs, dingbats, arrows-as-emoji, variation selector 16 and keycaps; ✕ ✓ ⇄ → stay (plain text symbols)
EMOJI = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F\u20E3]")
ALLOWED = set("✕✓✔✗")


def _offenders(text: str) -> list[str]:
    return [c for c in EMOJI.findall(text) if c not in ALLOWED]


def test_no_emoji_in_catalogue_strings():
    bad = {}
    for path in sorted((ROOT / "i18n").glob("*.json")):
        for key, value in json.loads(path.read_text(encoding="utf-8")).items():
            if isinstance(value, str) and _offenders(value):
                bad[f"{path.name}:{key}"] = value
    assert bad == {}


def test_no_emoji_icons_or_labels_in_ui_code():
    bad = []
    for path in [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py"))]:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _offenders(line):
                bad.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert bad == []


def test_material_icons_are_used_for_notices():
    code = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "ui").glob("*.py"))
    assert code.count('icon=":material/') >= 10
