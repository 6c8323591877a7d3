"""Random configurations of the seven local-folder families against transformers: each one agrees to the parity
tolerances (attentions 1e-5, hidden states and logits 1e-4, greedy tokens equal) or is refused by name.

    .venv/bin/python tests/hf_random_configs.py 0 660      (seeds 0..659; one line per configuration)
    .venv/bin/python tests/hf_random_configs.py lm 0 200   (Qwen3 and Gemma 3, folders and GGUF files: lm_run)

tests/test_hf_random.py runs the first seeds in CI. Widths 2-126, 1-9 heads, 1-3 layers per stack, ten activations,
three epsilons, position tables of 12-64, tied or untied, decoders unlike their encoders; weights perturbed
(tests/hf_support.py) so attention is far from uniform.
"""
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import test_hf_parity as P  # noqa: E402
import torch  # noqa: E402
from hf_support import make_bart, make_encoder, make_gpt2, make_marian  # noqa: E402

from model import HeadlightError  # noqa: E402
from model.hf.load import load_local  # noqa: E402

CPU = torch.device("cpu")
ACTS = ["gelu", "relu", "gelu_new", "silu", "gelu_pytorch_tanh", "quick_gelu", "tanh", "swish", "gelu_fast", "mish"]

FAMILIES = ["bert", "roberta", "xlm-roberta", "distilbert", "gpt2", "bart", "marian"]


def dims(r: random.Random) -> tuple[int, int]:
    """(width, heads): 1-7 heads of 2-9 dimensions."""
    h = r.choice([1, 2, 3, 4, 5, 7])
    d = h * r.choice([2, 3, 4, 6, 8, 9])
    return d, h


def enc_check(mt, hf, path):
    P.hf_eager(hf)
    ours = load_local(CPU, path)
    for text, pair in ((P.TEXT, None), ("i am good", "you are here")):
        tr = ours.trace(text, pair=pair, intermediates=True)
        ids = torch.tensor([tr.source_ids])
        kw = {"input_ids": ids}
        if mt == "bert":
            kw["token_type_ids"] = torch.tensor([ours.tokenizer.encode(text, pair).type_ids])
        ref = P.hf_run(hf, **kw)
        P.close(tr.encoder_attention, torch.stack([a[0] for a in ref.attentions]), P.ATOL_ATT)
        P.close(tr.encoder_hidden_states, torch.stack([h[0] for h in ref.hidden_states]), P.ATOL_HID)


def gpt2_check(hf, path):
    P.hf_eager(hf)
    ours = load_local(CPU, path)
    tr = ours.trace(P.TEXT, intermediates=True)
    ids = torch.tensor([tr.source_ids])
    ref = P.hf_run(hf, input_ids=ids)
    n = len(ref.attentions)
    P.close(tr.decoder_self_attention, torch.stack([a[0] for a in ref.attentions]), P.ATOL_ATT)
    P.close(tr.decoder_hidden_states[:n], torch.stack([h[0] for h in ref.hidden_states[:n]]), P.ATOL_HID)
    with torch.no_grad():
        out = ours.module(ids)
    P.close(out.logits.numpy(), ref.logits, P.ATOL_HID)
    n_new = min(5, hf.config.n_positions - ids.shape[1])
    if n_new <= 0:
        return
    steps = ours.greedy_continue(P.TEXT, n_new=n_new)
    with torch.no_grad():
        gen = hf.generate(ids, max_new_tokens=n_new, do_sample=False, num_beams=1, pad_token_id=0,
                          attention_mask=torch.ones_like(ids))
    assert [s.choice.id for s in steps] == gen[0, ids.shape[1]:].tolist(), "greedy differs"


def configuration(seed: int) -> tuple[str, dict]:
    """(family, config.json overrides) of one seed. The draws' order is fixed: a seed always means one model."""
    r = random.Random(seed)
    fam = r.choice(FAMILIES)
    d, h = dims(r)
    n_layers, act = r.choice([1, 2, 3]), r.choice(ACTS)
    eps = r.choice([1e-12, 1e-5, 1e-6])
    positions = r.choice([None, None, 12, 20, 64])
    if fam == "bert":
        ov = dict(hidden_size=d, num_attention_heads=h, num_hidden_layers=n_layers, intermediate_size=r.randint(5, 70),
                  hidden_act=act, layer_norm_eps=eps, type_vocab_size=max(2, r.choice([1, 2, 3])))
    elif fam in ("roberta", "xlm-roberta"):
        ov = dict(hidden_size=d, num_attention_heads=h, num_hidden_layers=n_layers, intermediate_size=r.randint(5, 70),
                  hidden_act=act, layer_norm_eps=eps)
    elif fam == "distilbert":
        ov = dict(dim=d, n_heads=h, n_layers=n_layers, hidden_dim=r.randint(5, 70),
                  activation=r.choice(["gelu", "relu"]), sinusoidal_pos_embds=r.choice([True, False]))
        ov["sinusoidal_pos_embds"] = ov["sinusoidal_pos_embds"] and d % 2 == 0
    elif fam == "gpt2":
        ov = dict(n_embd=d, n_head=h, n_layer=n_layers, n_inner=r.choice([None, r.randint(5, 70)]),
                  activation_function=act, layer_norm_epsilon=eps, scale_attn_weights=r.choice([True, True, False]),
                  tie_word_embeddings=r.choice([True, False]))
    else:
        dec_heads = r.choice([x for x in range(1, 10) if d % x == 0])
        ov = dict(d_model=d, encoder_attention_heads=h, decoder_attention_heads=dec_heads, encoder_layers=n_layers,
                  decoder_layers=r.choice([1, 2, 3]), encoder_ffn_dim=r.randint(5, 70),
                  decoder_ffn_dim=r.randint(5, 70), activation_function=act, scale_embedding=r.choice([True, False]))
        if fam == "bart" and r.random() < 0.3:
            ov["tie_word_embeddings"] = False
        if fam == "marian" and d % 2 and (d * 2) % h == 0:  # Marian's sinusoid table needs an even width
            ov["d_model"] = d * 2
    if positions:
        key = "n_positions" if fam == "gpt2" else "max_position_embeddings"
        ov[key] = positions + 2 if fam in ("roberta", "xlm-roberta") else positions
    return fam, ov


MAKERS = {"gpt2": make_gpt2, "bart": make_bart, "marian": make_marian}


def run(seed: int, folder: Path | None = None) -> tuple[str, dict, str]:
    """(family, overrides, "ok" | "REFUSED: message" | "FAIL ...") for one seed; the checkpoint is written to
    `folder` (default: a new temporary folder)."""
    fam, ov = configuration(seed)
    out = folder or Path(tempfile.mkdtemp()) / "m"
    if fam == "marian" and ov["d_model"] % 2:
        return fam, ov, "skipped (odd Marian width)"
    hf, path = (MAKERS[fam](out, seed=seed, **ov) if fam in MAKERS else make_encoder(fam, out, seed=seed, **ov))
    try:
        if fam == "gpt2":
            gpt2_check(hf, path)
        elif fam in MAKERS:
            P.hf_eager(hf)
            P.seq2seq_check(hf, load_local(CPU, path), P.TEXT)
        else:
            enc_check(fam, hf, path)
        return fam, ov, "ok"
    except HeadlightError as e:
        return fam, ov, f"REFUSED: {e}"
    except Exception as e:  # noqa: BLE001 - a disagreement, reported
        return fam, ov, f"FAIL {type(e).__name__}: {e}"




# ---- the language models of issue 38: Qwen3 and Gemma 3, as folders and (where llama.cpp can say it) GGUF files ------
LM_FAMILIES = ["qwen3", "gemma3"]
LM_TEXTS = [P.TEXT, "영희는 공원에서 철수에게 책을 빌려주었다."]


def lm_configuration(seed: int) -> tuple[str, dict]:
    """(family, config overrides of tests/gguf_support.make_llama) of one seed: 1-4 key/value heads shared by 1-3 query
    heads each, a head width of 2-18 that is rarely d_model / heads, 1-7 layers, tied or untied, RoPE bases from 100
    to 10^6; Gemma: a sliding window of 2-9 (the texts are longer), a layer pattern of 2, 3 or 6 or a random list of
    layer types, a local RoPE base, query_pre_attn_scalar, linear RoPE scaling (or, 40 % of them, what llama.cpp reads
    from a GGUF file: pattern 6, local base 10,000, query_pre_attn_scalar = head_dim); Qwen3: sliding windows above
    max_window_layers."""
    r = random.Random(f"lm-{seed}")
    fam = r.choice(LM_FAMILIES)
    kv, group = r.choice([1, 2, 3, 4]), r.choice([1, 2, 3])
    h, k = kv * group, r.choice([2, 4, 6, 8, 10, 14, 16, 18])
    n = r.choice([1, 2, 3, 4, 5, 7])
    ov = dict(num_attention_heads=h, num_key_value_heads=kv, head_dim=k, num_hidden_layers=n,
              hidden_size=r.choice([h * k, 4 * r.randint(3, 16)]), intermediate_size=r.randint(8, 80),
              rms_norm_eps=r.choice([1e-6, 1e-5]), tie_word_embeddings=r.choice([True, False]),
              rope_theta=r.choice([100.0, 5000.0, 10000.0, 1e6]))
    if fam == "gemma3":  # Gemma3TextConfig asks for a width that the heads divide, whatever head_dim says
        ov["hidden_size"] = h * max(1, ov["hidden_size"] // h)
        ov.update(sliding_window=r.choice([2, 3, 4, 6, 9]), sliding_window_pattern=r.choice([2, 3, 6]),
                  rope_local_base_freq=r.choice([10.0, 300.0, 10000.0]), query_pre_attn_scalar=r.choice([k, 7, 13, 256]))
        if r.random() < 0.3:
            ov["rope_scaling"] = {"rope_type": "linear", "factor": r.choice([2.0, 8.0])}
        if r.random() < 0.3:
            ov["layer_types"] = [r.choice(["sliding_attention", "full_attention"]) for _ in range(n)]
        if r.random() < 0.4:  # what a GGUF file can say (lm_gguf_readable): llama.cpp's pattern, local base, scalar
            ov.pop("layer_types", None)
            ov.update(sliding_window_pattern=6, rope_local_base_freq=10000.0, query_pre_attn_scalar=k)
    elif r.random() < 0.4:
        ov.update(use_sliding_window=True, sliding_window=r.choice([2, 3, 5]), max_window_layers=r.randint(0, n))
    return fam, ov


def lm_gguf_readable(fam: str, ov: dict) -> bool:
    """Whether a GGUF file can say this configuration as llama.cpp reads it (Gemma 3: layer pattern 6, local RoPE base
    10,000 and query_pre_attn_scalar = head_dim are implied; Qwen3: no sliding window)."""
    if fam == "qwen3":
        return not ov.get("use_sliding_window")
    return (ov["sliding_window_pattern"] == 6 and "layer_types" not in ov and ov["rope_local_base_freq"] == 10000.0
            and ov["query_pre_attn_scalar"] == ov["head_dim"])


def lm_run(seed: int, folder: Path | None = None) -> tuple[str, dict, str]:
    """(family, overrides, "ok" | "REFUSED: message" | "FAIL ...") for one seed: the folder, and an F32 GGUF file of
    the same weights where lm_gguf_readable, against transformers on the folder."""
    from gguf_support import make_llama, write_gguf
    from test_llama import parity

    from model.gguf import load_gguf

    fam, ov = lm_configuration(seed)
    out = folder or Path(tempfile.mkdtemp()) / "m"
    try:
        ref, path, tok = make_llama(out, fam, seed=seed, **ov)
        P.hf_eager(ref)
        models = [load_local(CPU, path)]
        if lm_gguf_readable(fam, ov):
            models.append(load_gguf(CPU, write_gguf(ref, tok, out.parent / f"{out.name}.gguf", fam, "F32")))
        for ours in models:
            for text in LM_TEXTS:
                parity(ours, ref, text, n_new=3)
        return fam, ov, "ok"
    except HeadlightError as e:
        return fam, ov, f"REFUSED: {e}"
    except Exception as e:  # noqa: BLE001 - a disagreement, reported
        return fam, ov, f"FAIL {type(e).__name__}: {e}"


if __name__ == "__main__":  # python tests/hf_random_configs.py [lm] FIRST LAST
    lm = sys.argv[1] == "lm"
    first, last = map(int, sys.argv[2:4] if lm else sys.argv[1:3])
    for s in range(first, last):
        fam, ov, res = (lm_run if lm else run)(s)
        print(s, fam, res if res == "ok" else f"{res[:400]} {ov}", flush=True)
