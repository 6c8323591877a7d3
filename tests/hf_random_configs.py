"""Random configurations of the seven local-folder families against transformers: each one agrees to the parity
tolerances (attentions 1e-5, hidden states and logits 1e-4, greedy tokens equal) or is refused by name.

    .venv/bin/python tests/hf_random_configs.py 0 660      (seeds 0..659; one line per configuration)

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


if __name__ == "__main__":
    for s in range(int(sys.argv[1]), int(sys.argv[2])):
        fam, ov, res = run(s)
        print(s, fam, res if res == "ok" else f"{res[:400]} {ov}", flush=True)
