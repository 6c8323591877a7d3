"""Benchmark: a Gemma 3 of the 270M shape on our modules vs `transformers`' Gemma3ForCausalLM (issue 38; never run by
pytest). No Gemma file is shipped or downloadable here, so the model is random, built with transformers in the shape
of google/gemma-3-270m: d_model 640, 18 layers, 4 query heads on 1 key/value head of head_dim 256, d_ff 2048, a
vocabulary of 262,144, sliding window 512 on five layers in six, RoPE bases 10,000 / 1,000,000, tied embeddings.

It is written as a Hugging Face folder (float32 safetensors) and as a GGUF file the way llama.cpp's converter writes
one (tests/gguf_support.write_gguf: Q8_0 matrices, Gemma's norms plus 1, a SentencePiece vocabulary of 262,144
tokens in the metadata, whose merges our reader rebuilds as transformers does). Measured:

- load: our cold load of the GGUF file (`load_gguf`: parse, tokenizer, dequantise, build) and of the folder, each in a
  fresh process after `import torch`, median of --loads;
- memory: the RSS the GGUF load adds (and after one 128-token trace with every map), beside the file's dequantised
  size (float32: 4 bytes a parameter);
- speed: a forward with every attention map, ours (`module(ids)`) against transformers eager with
  output_attentions=True (the same work: both compute the logits of every position), both from the folder's float32
  weights, interleaved, one torch thread, median of --runs, at 12 and 128 tokens; and our whole trace (`trace`: the
  maps copied out, the next token's top 5, the logits of the last position only) beside it.

    .venv/bin/python bench/bench_gemma.py [--tokens 12 128] [--runs 9] [--loads 3] [--threads 1] [--dir /tmp/g270]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import torch  # noqa: E402

SHAPE = dict(hidden_size=640, num_hidden_layers=18, num_attention_heads=4, num_key_value_heads=1, head_dim=256,
             intermediate_size=2048, vocab_size=262144, sliding_window=512, sliding_window_pattern=6,
             query_pre_attn_scalar=256, rope_theta=1_000_000.0, rope_local_base_freq=10_000.0,
             max_position_embeddings=32768, rms_norm_eps=1e-6, tie_word_embeddings=True, bos_token_id=2,
             eos_token_id=1, pad_token_id=0)


def vocabulary(n: int) -> list[str]:
    """n distinct SentencePiece-style tokens: Gemma's specials and 256 byte pieces, then every lowercase letter and
    Hangul syllable with and without a leading "▁", then pairs of them, like a multilingual vocabulary."""
    out = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", *(f"<0x{b:02X}>" for b in range(256)), "▁"]
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [chr(c) for c in range(0xAC00, 0xD7A4)]
    out += [x for c in letters for x in (c, "▁" + c)]
    k = 0
    while len(out) < n:  # pairs (a, b), each once: k < len(letters)**2
        a, b = letters[k % len(letters)], letters[k // len(letters) % len(letters)]
        out += [a + b, "▁" + a + b]
        k += 1
    return out[:n]


class _Vocab:
    """What tests/gguf_support.write_gguf reads of a tokenizer (get_vocab) for the SentencePiece metadata."""

    def __init__(self, tokens: list[str]):
        self.tokens = tokens

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        return {t: i for i, t in enumerate(self.tokens)}


def build(folder: Path) -> Path:
    """The random Gemma 3 in `folder` (config.json, model.safetensors, tokenizer.json) and folder/gemma3-270m.gguf."""
    import transformers as tf
    from gguf_support import write_gguf
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers

    gguf = folder / "gemma3-270m.gguf"
    if gguf.exists() and (folder / "model.safetensors").exists():
        return gguf
    torch.manual_seed(0)
    model = tf.Gemma3ForCausalLM(tf.Gemma3TextConfig(**SHAPE)).eval()
    with torch.no_grad():  # norms away from their init (0: the identity), so (1 + γ) is exercised
        for name, p in model.named_parameters():
            if "norm" in name:
                p.normal_(0.0, 0.1)
    tokens = vocabulary(SHAPE["vocab_size"])
    tok = Tokenizer(models.BPE(vocab={t: i for i, t in enumerate(tokens)}, merges=[], byte_fallback=True,
                               unk_token="<unk>", fuse_unk=True))
    tok.normalizer = normalizers.Replace(" ", "▁")
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    model.save_pretrained(str(folder), safe_serialization=True)
    tok.save(str(folder / "tokenizer.json"))
    write_gguf(model, _Vocab(tokens), gguf, "gemma3", "Q8_0")
    return gguf


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def load_child(what: str, path: str) -> None:
    """In a fresh process: time one load after `import torch`, and the RSS it added (before and after a trace)."""
    torch.set_num_threads(1)
    before = rss_mb()
    t, cpu = time.perf_counter(), time.process_time()
    if what == "gguf":
        from model.gguf import load_gguf

        model = load_gguf(torch.device("cpu"), path)
    else:
        from model.hf.load import load_local

        model = load_local(torch.device("cpu"), path)
    seconds, cpu = time.perf_counter() - t, time.process_time() - cpu
    loaded = rss_mb()
    model.trace("a" + " a" * 126)  # 128 tokens
    print(json.dumps({"seconds": seconds, "cpu": cpu, "load": float(open("/proc/loadavg").read().split()[0]),
                      "added_mb": loaded - before, "after_trace_mb": rss_mb() - before,
                      "params": sum(p.numel() for p in model.module.parameters())}))


def cold_loads(what: str, path: Path, n: int) -> list[dict]:
    """n loads, each in a fresh process, with a cache folder of their own: the first finds it empty (the GGUF
    vocabulary's merges are rebuilt and kept), the others read them back."""
    import tempfile

    out = []
    with tempfile.TemporaryDirectory() as cache:
        for _ in range(n):
            r = subprocess.run([sys.executable, __file__, "--child", what, str(path)], capture_output=True, text=True,
                               env={**os.environ, "OMP_NUM_THREADS": "1", "HEADLIGHT_CACHE": cache}, check=True)
            out.append(json.loads(r.stdout.strip().splitlines()[-1]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, nargs="+", default=[12, 128])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--dir", default="/tmp/headlight-gemma3-270m")
    ap.add_argument("--child", nargs=2)
    args = ap.parse_args()
    if args.child:
        return load_child(*args.child)
    torch.set_num_threads(args.threads)
    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    t = time.perf_counter()
    gguf = build(folder)
    print(f"built the random Gemma 3 270M in {time.perf_counter() - t:.0f} s: {gguf} "
          f"({gguf.stat().st_size / 2**20:.0f} MiB), folder {(folder / 'model.safetensors').stat().st_size / 2**20:.0f} "
          "MiB of float32")
    print(f"uptime: {os.popen('uptime').read().strip()}")
    for what, path in (("gguf", gguf), ("folder", folder)):
        loads = cold_loads(what, path, args.loads)
        med = statistics.median(r["seconds"] for r in loads)
        size = loads[0]["params"] * 4 / 2**20
        print(f"our cold load of the {what}: median {med:.2f} s of {[round(r['seconds'], 2) for r in loads]} (the first "
              f"with an empty cache; CPU {[round(r['cpu'], 2) for r in loads]} s, all threads; 1-min load "
              f"{[r['load'] for r in loads]}); RSS "
              f"added {statistics.median(r['added_mb'] for r in loads):.0f} MiB, after a 128-token trace "
              f"{statistics.median(r['after_trace_mb'] for r in loads):.0f} MiB; dequantised size {size:.0f} MiB "
              f"({loads[0]['params']:,} parameters)")

    import transformers as tf
    from bench_gpt2 import interleaved_medians

    from model.hf.load import load_local

    # the same float32 weights on both sides (the folder's): the logits can be compared, the work is the same; and
    # the GGUF file as the lecturer brings it (its Linear weights kept row-major: model/loaded.py input_major)
    ours = load_local(torch.device("cpu"), folder)
    from model.gguf import load_gguf

    file = load_gguf(torch.device("cpu"), gguf)
    eager = tf.Gemma3ForCausalLM.from_pretrained(str(folder), dtype=torch.float32, attn_implementation="eager").eval()
    for n in args.tokens:
        ids = torch.randint(3, SHAPE["vocab_size"], (1, n), generator=torch.Generator().manual_seed(n))
        with torch.inference_mode():
            a, b = ours.module(ids).logits, eager(ids).logits
        print(f"{n} tokens: max |logits ours - transformers| = {float((a - b).abs().max()):.2e}")
        text = "a" + " a" * (n - 2)  # <bos> a ▁a ▁a ...: n tokens of the vocabulary above
        with torch.inference_mode():
            contenders = {"ours (every attention map)": lambda ids=ids: ours.module(ids),
                          "transformers (eager, output_attentions)": lambda ids=ids: eager(ids, output_attentions=True),
                          "ours from the GGUF file (every map)": lambda ids=ids: file.module(ids),
                          "ours: the app's trace (maps to numpy, top 5)": lambda text=text: ours.trace(text)}
            med = interleaved_medians(contenders, args.runs)
        print(f"Gemma 3 270M shape, {n} tokens, {args.threads} thread(s), median of {args.runs} interleaved runs")
        for k, v in med.items():
            print(f"  {k:48s} {v * 1000:8.1f} ms")
        names = list(med)
        print(f"  ratio ours / transformers: {med[names[0]] / med[names[1]]:.3f} (folder), "
              f"{med[names[2]] / med[names[1]]:.3f} (GGUF file)")
    print(f"uptime: {os.popen('uptime').read().strip()}")


if __name__ == "__main__":
    main()
