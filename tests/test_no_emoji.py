"""No emoji in the interface (issue 19): a machine without an emoji font shows them as empty boxes. Icons come from
the Material Symbols font that Streamlit ships with its frontend (`:material/name:`), offline on every client."""

from __future__ import annotations

import ast
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


NOTICES = {"warning", "error", "info", "success", "toast", "exception"}
MATERIAL = re.compile(r"^:material/[a-z0-9_]+:$")
MATERIAL_IN_TEXT = re.compile(r":material/([^:\s]*)(:?)")


def _interface_files() -> list[Path]:
    return [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")), *sorted((ROOT / "app_pages").glob("*.py"))]


def _notice_kind(call: ast.Call) -> str | None:
    """"warning" for st.warning(...), sidebar.warning(...), (st.success if ok else st.warning)(...); else None."""
    funcs = [call.func.body, call.func.orelse] if isinstance(call.func, ast.IfExp) else [call.func]
    kinds = {f.attr for f in funcs if isinstance(f, ast.Attribute) and f.attr in NOTICES}
    return "/".join(sorted(kinds)) or None


def _notices_with_icons() -> list[tuple[str, str, ast.expr]]:
    """(file:line, kind, icon expression) of every notice call with an icon= in app.py, ui/ and app_pages/."""
    out = []
    for path in _interface_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (kind := _notice_kind(node)):
                out += [(f"{path.relative_to(ROOT)}:{node.lineno}", kind, k.value) for k in node.keywords
                        if k.arg == "icon"]
    return out


def test_notice_icons_are_material_symbols():
    """Every st.warning / error / info / success / toast / exception with an icon= uses a literal `:material/name:`
    of a symbol in the font Streamlit ships (an emoji or a computed icon could not be checked here)."""
    from streamlit.material_icon_names import ALL_MATERIAL_ICONS

    found = _notices_with_icons()
    assert len(found) >= 10, found  # the scanner sees the app's notices
    assert {"warning", "error", "info", "success"} <= {k for _, k, _ in found}
    bad = []
    for where, kind, icon in found:
        value = icon.value if isinstance(icon, ast.Constant) else None
        if not isinstance(value, str) or not MATERIAL.match(value):
            bad.append(f"{where}: st.{kind} icon={ast.unparse(icon)} is not a literal :material/name:")
        elif value[len(":material/"):-1] not in ALL_MATERIAL_ICONS:
            bad.append(f"{where}: st.{kind} icon={value}: no such Material Symbol")
    assert bad == [], "\n".join(bad)


def test_every_material_icon_named_in_the_interface_exists():
    """Every `:material/...` in the interface's strings (icon=, page tables, markdown text) and in the catalogue is
    written `:material/name:` and names a symbol of the Material Symbols font Streamlit ships."""
    from streamlit.material_icon_names import ALL_MATERIAL_ICONS

    texts = []  # (where, string)
    for path in _interface_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append((f"{path.relative_to(ROOT)}:{node.lineno}", node.value))
    for path in sorted((ROOT / "i18n").glob("*.json")):
        texts += [(f"{path.name}:{key}", value) for key, value in json.loads(path.read_text(encoding="utf-8")).items()
                  if isinstance(value, str)]
    used, bad = set(), []
    for where, text in texts:
        for name, colon in MATERIAL_IN_TEXT.findall(text):
            if not colon or not re.fullmatch(r"[a-z0-9_]+", name):
                bad.append(f"{where}: malformed :material/{name}{colon} (want :material/name:)")
            elif name not in ALL_MATERIAL_ICONS:
                bad.append(f"{where}: :material/{name}: is no Material Symbol")
            used.add(name)
    assert len(used) >= 10, used  # the scanner sees the icons
    assert bad == [], "\n".join(bad)
