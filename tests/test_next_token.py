"""The next-token chart of a decoder-only model (issue 34): its tokens as text a reader sees (a byte-level piece
decoded, "ĊĠĠĠ" as "↵␣␣␣", never the byte stand-ins), and its texts at the theme's sizes, lecture mode included."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from apptest_support import assert_ok
from streamlit.testing.v1 import AppTest

from model.tokenizer import BYTE_OF, shown_piece
from viz.next_token import next_token_figure
from viz.theme import FONTS

APP = str(Path(__file__).resolve().parents[1] / "app.py")


@pytest.mark.parametrize("token, shown", [
    ("ĊĠĠĠĠĠ", "↵␣␣␣␣␣"), ("Ġthe", "␣the"), ("Ċ", "↵"), ("ĉ", "⇥"), ("Ġ", "␣"), ("the", "the"),
    ("âĢĻ", "’"),  # U+2019 in its three bytes: one whole character
    ("ìĿ", "<0xEC><0x9D>"), ("Ġë", "␣<0xEB>"),  # parts of a Hangul syllable: the bytes, not Latin letters
    ("ê", "<0xEA>"), ("ĠëıĻ", "␣동"), ("ĀĊ", "<0x00>↵"), ("<|endoftext|>", "<|endoftext|>"), ("[CLS]", "[CLS]"),
])
def test_a_byte_level_piece_is_shown_as_its_text(token, shown):
    assert shown_piece(token, "bytelevel") == shown


def test_other_tokenizers_are_shown_as_they_are():
    assert shown_piece("ê", "wordpiece") == "ê" and shown_piece("▁동물", "sentencepiece") == "▁동물"
    assert shown_piece("Ġthe", None) == "Ġthe"


def test_every_byte_has_its_stand_in_and_a_fallback_piece_is_shown_too():
    assert sorted(BYTE_OF.values()) == list(range(256))
    assert shown_piece("<0x0A>", "sentencepiece") == "↵" and shown_piece("<0xEB>", "sentencepiece") == "<0xEB>"
    assert shown_piece("▁the", "sentencepiece") == "▁the"  # a SentencePiece word piece stays as it is


@pytest.mark.parametrize("lecture", [False, True])
def test_next_token_figure_takes_the_theme_sizes(lecture):
    f = FONTS[lecture]
    fig = next_token_figure(["↵␣␣␣", "↵␣", "␣too"], [0.5, 0.3, 0.1], lecture=lecture, lang="ko").to_plotly_json()
    lay, (bar,) = fig["layout"], fig["data"]
    assert lay["yaxis"]["tickfont"]["size"] == f["tick"] and lay["xaxis"]["tickfont"]["size"] == f["tick"]
    assert lay["title"]["font"]["size"] == f["title"] and bar["textfont"]["size"] == f["bar_text"]
    assert list(bar["y"]) == ["↵␣␣␣\u2009#1", "↵␣\u2009#2", "␣too\u2009#3"] and list(bar["text"]) == ["0.500", "0.300",
                                                                                                   "0.100"]
    assert lay["title"]["text"] == "가장 확률이 높은 다음 토큰 3개"


def test_smollm2_explorer_shows_next_tokens_as_text_in_lecture_mode():
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in {"model": "smollm2-135m", "text": "def f(x):", "lecture": "1", "lang": "ko"}.items():
        at.query_params[k] = v
    at.run()
    assert_ok(at)
    (spec,) = [json.loads(c.proto.spec) for c in at.get("plotly_chart") if "ex_next" in c.proto.id]
    labels = spec["data"][0]["y"]
    assert labels[0] == "↵␣␣␣\u2009#1" and all("Ċ" not in x and "Ġ" not in x for x in labels)
    assert spec["layout"]["yaxis"]["tickfont"]["size"] == FONTS[True]["tick"]
    at.button(key="ex_next_one").click().run()
    assert_ok(at)
    assert at.table[-1].value.iloc[0, 1] == "↵␣␣␣"  # the continuation's table, lecture mode: st.table
