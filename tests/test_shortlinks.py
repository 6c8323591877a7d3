"""ui/shortlinks.py: content-addressed short links on disk, shared by every app process."""

from __future__ import annotations

import multiprocessing

import pytest

from ui import shortlinks


@pytest.fixture(autouse=True)
def _state(tmp_path, monkeypatch):
    monkeypatch.setenv("HEADLIGHT_STATE_DIR", str(tmp_path))


def test_round_trip_korean_payload():
    payload = "/steps?text=" + "철수는 영희에게 책을 빌려주었는데, 그녀는 그것을 아직 돌려주지 않았다." + "&lang=ko&layer=2"
    sid = shortlinks.put("view", payload)
    assert shortlinks.is_id(sid) and len(sid) == shortlinks.ID_CHARS
    assert shortlinks.get("view", sid) == payload
    assert shortlinks.put("view", payload) == sid  # idempotent, same id
    assert shortlinks.get("deck", sid) is None  # kinds are separate


def test_distinct_payloads_distinct_ids():
    ids = {shortlinks.put("view", f"/?text=sentence {i}") for i in range(200)}
    assert len(ids) == 200


@pytest.mark.parametrize("bad", ["", "../../etc/pw", "ABCDEFGHIJ", "abc", "a" * 11, "abcdefghi1", None, 5])
def test_malformed_ids_are_never_looked_up(bad):
    assert shortlinks.get("view", bad) is None


def test_tampered_file_is_not_served(tmp_path):
    sid = shortlinks.put("view", "/?text=a")
    (tmp_path / "links" / "view" / sid).write_text("/?text=b")
    assert shortlinks.get("view", sid) is None


def test_limits_and_unknown_kind():
    with pytest.raises(ValueError):
        shortlinks.put("view", "x" * (shortlinks.MAX_PAYLOAD_BYTES + 1))
    with pytest.raises(ValueError):
        shortlinks.put("secret", "x")


def _put_in_child(payload, out):
    out.put(shortlinks.put("view", payload))


def test_another_process_reads_what_one_wrote():
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    proc = ctx.Process(target=_put_in_child, args=("/heads?text=트로피가 가방에", out))
    proc.start()
    sid = out.get(timeout=60)
    proc.join(60)
    assert shortlinks.get("view", sid) == "/heads?text=트로피가 가방에"
