"""ui/view.py `resolve`: from the sidebar's controls, the model and the link's values to the View, and `read_link`:
a first run's link values checked, without Streamlit's runtime (a fake model and trace; session state and the link's pending values as plain dicts)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

from ui.view import K_BLOCK, K_HEAD, K_LAYER, K_TOKEN, SESSION_ID, TRACE_KEY, Controls, read_link, resolve

ROOT = Path(__file__).resolve().parents[1]
ROWS = ["[CLS]", "the", "animal", "was", "tired", "because", "it", "was", "[SEP]"]
IT = ROWS.index("it")


class Model:
    """n_layers / n_heads per block, as model.loaded.LoadedModel answers them; a config with attention decoders."""

    def __init__(self, layers: dict[str, int], heads: dict[str, int]):
        self.layers, self.heads = layers, heads
        self.config = SimpleNamespace(decoder_mixer="attention")

    def n_layers(self, block: str) -> int:
        return self.layers[block]

    def n_heads(self, block: str) -> int:
        return self.heads[block]


class Trace:
    """The parts of model.trace.AttentionTrace the sidebar reads."""

    def __init__(self, rows: dict[str, list[str]], truncated: bool = False, n_untruncated: int = 0):
        self.rows = rows
        self.blocks = list(rows)
        self.source_tokens = rows[self.blocks[0]]
        self.truncated, self.n_tokens_untruncated = truncated, n_untruncated

    def axis_tokens(self, block: str) -> tuple[list[str], list[str]]:
        return self.rows[block], self.rows[block]


MINILM = Model({"encoder": 6}, {"encoder": 12})
ENC_DEC = Model({"encoder": 2, "decoder_self": 3, "cross": 3}, {"encoder": 4, "decoder_self": 8, "cross": 8})
TEXT = "the animal was tired because it was"


def encoder_trace(**kw) -> Trace:
    return Trace({"encoder": ROWS}, **kw)


def enc_dec_trace() -> Trace:
    return Trace({"encoder": ROWS, "decoder_self": ["<bos>", "a", "b"], "cross": ["<bos>", "a", "b"]})


def run(session=None, pending=None, *, model=MINILM, trace=None, kind="encoder", lang="en", text=TEXT, **kw):
    session = {} if session is None else session
    pending = {} if pending is None else pending
    trace = encoder_trace() if trace is None and model is MINILM else trace
    return resolve(Controls(text=text, model_name="minilm-l6", device="cpu", lang=lang), model, trace, kind=kind,
                   session=session, pending=pending, **kw)


def test_a_first_run_picks_the_defaults_and_the_token_it():
    res = run()
    v = res.view
    assert (v.block, v.layer, v.head, v.token) == ("encoder", 0, 0, IT)
    assert res.writes == {K_LAYER: 0, K_HEAD: 0, TRACE_KEY: ("minilm-l6", TEXT, "encoder"), K_TOKEN: IT}
    assert res.blocks == ["encoder"] and res.used == [] and res.url_notices == [] and v.notices == []
    assert (v.text, v.model_name, v.device, v.lang, v.model) == (TEXT, "minilm-l6", "cpu", "en", MINILM)


def test_the_link_opens_its_exact_view():
    res = run(pending={K_LAYER: "3", K_HEAD: "1", K_TOKEN: "2"})
    assert (res.view.layer, res.view.head, res.view.token) == (3, 1, 2)
    assert sorted(res.used) == [K_HEAD, K_LAYER, K_TOKEN] and res.url_notices == []
    assert res.writes[K_LAYER] == 3 and res.writes[K_HEAD] == 1 and res.writes[K_TOKEN] == 2


def test_bad_link_values_fall_back_with_notices_in_the_session_language():
    res = run(pending={K_LAYER: "99", K_HEAD: "two", K_TOKEN: "-1"})
    assert (res.view.layer, res.view.head, res.view.token) == (0, 0, IT)  # a bad token falls back to the default one
    layer, head, token = res.url_notices
    assert "Layer 99" in layer and "0-5" in layer
    assert "head" in head and "not a whole number" in head
    assert "Token -1" in token
    ko = run(pending={K_LAYER: "99"}, lang="ko")
    assert "레이어" in ko.url_notices[0]


def test_session_values_are_clamped_to_the_model_without_a_notice():
    res = run({K_LAYER: 9, K_HEAD: -3, K_TOKEN: 40, TRACE_KEY: ("minilm-l6", TEXT, "encoder")})
    assert (res.view.layer, res.view.head, res.view.token) == (5, 0, len(ROWS) - 1)
    assert res.url_notices == [] and res.view.notices == []
    assert run({K_LAYER: "x"}).view.layer == 0  # not an int: the default


def test_valid_session_values_are_kept_and_not_written_again():
    session = {K_LAYER: 2, K_HEAD: 3, K_TOKEN: 4, TRACE_KEY: ("minilm-l6", TEXT, "encoder")}
    res = run(session)
    assert (res.view.layer, res.view.head, res.view.token) == (2, 3, 4)
    assert res.writes == {TRACE_KEY: ("minilm-l6", TEXT, "encoder")}


def test_a_new_sentence_selects_its_default_token_again():
    session = {K_LAYER: 2, K_HEAD: 3, K_TOKEN: 1, TRACE_KEY: ("minilm-l6", "another sentence", "encoder")}
    res = run(session)
    assert res.view.token == IT and res.writes[K_TOKEN] == IT
    assert res.writes[TRACE_KEY] == ("minilm-l6", TEXT, "encoder")
    assert (res.view.layer, res.view.head) == (2, 3)  # layer and head stay


def test_a_block_the_model_lacks_falls_back_with_a_notice():
    res = run(pending={K_BLOCK: "cross"})
    assert res.view.block == "encoder" and res.writes[K_BLOCK] == "encoder" and K_BLOCK in res.used
    assert "does not exist for minilm-l6" in res.url_notices[0]


def test_encoder_decoder_blocks_clamp_to_the_chosen_block():
    res = run({K_BLOCK: "cross", K_LAYER: 2, K_HEAD: 7}, model=ENC_DEC, trace=enc_dec_trace(), kind="encoder-decoder")
    assert res.blocks == ["encoder", "decoder_self", "cross"]
    assert (res.view.block, res.view.layer, res.view.head, res.view.token) == ("cross", 2, 7, 1)
    enc = run({K_BLOCK: "elsewhere", K_LAYER: 2, K_HEAD: 7}, model=ENC_DEC, trace=enc_dec_trace(),
              kind="encoder-decoder")
    assert enc.writes[K_BLOCK] == "encoder"  # an unknown session block: the encoder, its ranges
    assert (enc.view.block, enc.view.layer, enc.view.head) == ("encoder", 1, 3)
    linked = run(pending={K_BLOCK: "decoder_self"}, model=ENC_DEC, trace=enc_dec_trace(), kind="encoder-decoder")
    assert linked.view.block == "decoder_self" and linked.url_notices == []


def test_without_a_trace_the_blocks_come_from_the_kind_and_the_token_waits():
    res = run({K_TOKEN: 3}, {K_TOKEN: "5", K_BLOCK: "cross"}, model=ENC_DEC, trace=None, kind="encoder-decoder",
              text="")
    assert res.blocks == ["encoder", "decoder_self", "cross"] and res.view.block == "cross"
    assert res.view.token == 3 and K_TOKEN not in res.used  # read once a trace exists
    assert TRACE_KEY not in res.writes and res.view.trace is None
    assert run({K_TOKEN: "x"}, model=Model({"decoder_self": 2}, {"decoder_self": 2}), trace=None,
               kind="decoder").view.token == 0


def test_notices_in_order_kept_then_link_then_this_run():
    res = run(pending={K_LAYER: "99"}, trace=encoder_trace(truncated=True, n_untruncated=700),
              kept=["an earlier link notice"], notices=["the device"])
    kept, link, device, truncated = res.view.notices
    assert kept == "an earlier link notice" and "Layer 99" in link and device == "the device"
    assert "700" in truncated and f"{len(ROWS)}" in truncated
    assert res.url_notices == [link]  # only the new one: the shell adds it to the kept list


def test_resolve_changes_none_of_its_inputs():
    session = {K_LAYER: 9, TRACE_KEY: ("minilm-l6", "old", "encoder")}
    pending = {K_LAYER: "1", K_BLOCK: "cross", K_TOKEN: "2"}
    kept = ["kept"]
    before = copy.deepcopy((session, pending, kept))
    run(session, pending, kept=kept)
    assert (session, pending, kept) == before


def test_view_imports_without_streamlit():
    code = ("import sys, ui.view; heavy = sorted({k.split('.')[0] for k in sys.modules} & {'streamlit', 'plotly'}); "
            "assert not heavy, heavy")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr


MODELS, DEVICES = ["minilm-l6", "smollm2-135m"], ["auto", "cpu"]


def test_read_link_keeps_good_values_and_leaves_layer_head_token_block_pending():
    sid = "a" * 22
    q = {"text": "I am sam", "model": "smollm2-135m", "device": "cpu", "lang": "ko", "lecture": " Yes ",
         "room": "ROOM42", "sid": sid, "layer": "3", "head": "x", "token": "-1", "block": "cross", "other": "1"}
    link = read_link(q, MODELS, DEVICES, 100)
    assert link.writes == {"text": "I am sam", "model": "smollm2-135m", "device": "cpu", "lang": "ko", "lecture": True,
                           "room": "ROOM42", SESSION_ID: sid}
    assert link.pending == {"layer": "3", "head": "x", "token": "-1", "block": "cross"}
    assert link.notices == []
    assert read_link({"lecture": "0", "room": "ROOM42", "sid": "bad id"}, MODELS, DEVICES, 100).writes == {
        "lecture": False, "room": "ROOM42"}  # no session id: the caller gives the new student one
    assert read_link({}, MODELS, DEVICES, 100) == read_link({"other": "x"}, MODELS, DEVICES, 100)
    assert read_link({}, MODELS, DEVICES, 100).writes == {}


def test_read_link_replaces_each_bad_value_by_its_default_with_a_notice_in_the_links_language():
    q = {"text": "x" * 101, "model": "<b>gpt</b>", "device": "tpu", "lang": "ko", "room": "a b"}
    link = read_link(q, MODELS, DEVICES, 100)
    assert link.writes == {"text": "The animal didn't cross the street because it was tired", "model": "minilm-l6",
                           "device": "auto", "lang": "ko"}
    assert link.notices == ["링크의 텍스트는 101자입니다(한도는 100자). 대신 기본 문장을 보여 줍니다.",
                            "링크의 모델 '\\<b\\>gpt\\</b\\>'를 알 수 없습니다. minilm-l6를 씁니다. "
                            "모델: minilm-l6, smollm2-135m.",
                            "장치 'tpu'는 여기서 쓸 수 없습니다. 자동(auto)을 씁니다.",
                            "링크의 수업 코드 'a b'는 올바르지 않아 수업에 참여하지 않았습니다."]
    bad_lang = read_link({"lang": "fr"}, MODELS, DEVICES, 100)
    assert bad_lang.writes == {"lang": "en"}
    assert bad_lang.notices == ["Language 'fr' is not available; using English. Languages: en, ko."]
