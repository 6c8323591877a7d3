"""The Training page's recorded runs (assets/training-lab/): written by `python -m training lab --record DIR`, read
by the page (analysis/training.py). Nothing is pickled: JSON for the numbers, safetensors for the arrays.

Per task, three files, and one sha256.json for them all (checked on every read, as model/weights.py checks
seq2seq-tiny's files):

    <task>.json              {"format", "version", "settings", "model" (TransformerConfig), "vocab", "sentence",
                              "snapshots": [{"step", "loss", "lr", "alignment", "accuracy"}], "greedy": [[word..]..],
                              "wall_s", "cpu_s", "threads", "command"}
    <task>.maps.safetensors  "cross" (S, L, h, n, m) and "encoder" (S, L, h, m, m), float32: the fixed sentence's
                              cross-attention (teacher-forced) and encoder self-attention at each of the S snapshots
    <task>.model.safetensors the final weights (float32, model.weights.save_checkpoint: tied tensors once), loaded
                              strictly by model.weights.load_checkpoint

Regenerate (about a minute of CPU per task):

    python -m training lab --task copy --steps 400 --seed 0 --record assets/training-lab    (and reverse, swap)
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

from model.config import TransformerConfig
from model.errors import WeightsError
from model.transformer import Transformer
from model.weights import load_checkpoint, save_checkpoint, sha256_file, verify_file

from .lab import FIXED_SENTENCE, LAB_MODEL, VOCAB, LabRun, load_model

RECORD_DIR = Path(__file__).resolve().parents[1] / "assets" / "training-lab"
FORMAT, VERSION = "headlight-training-lab", 1
DIGESTS = "sha256.json"
FIX = "git checkout -- assets/training-lab"


def names(task: str) -> tuple[str, str, str]:
    return f"{task}.json", f"{task}.maps.safetensors", f"{task}.model.safetensors"


def write_record(run: LabRun, out: Path) -> list[Path]:
    """The run's three files in `out`, and its digests added to out/sha256.json."""
    s = run.settings
    out.mkdir(parents=True, exist_ok=True)
    meta_name, maps_name, model_name = names(s.task)
    meta = {"format": FORMAT, "version": VERSION, "task": s.task, "seed": s.seed,
            "settings": {"steps": s.steps, "warmup": s.warmup, "lr_factor": s.lr_factor,
                         "label_smoothing": s.label_smoothing, "batch_size": s.batch_size},
            "model": LAB_MODEL.to_dict(), "vocab": list(VOCAB), "sentence": FIXED_SENTENCE,
            "snapshots": [sn.summary() for sn in run.snapshots], "greedy": [list(sn.greedy) for sn in run.snapshots],
            "wall_s": round(run.wall_s, 1), "cpu_s": round(run.cpu_s, 1), "threads": run.to_json()["threads"],
            "command": f"python -m training lab --task {s.task} --steps {s.steps} --seed {s.seed} --record DIR"}
    (out / meta_name).write_text(json.dumps(meta, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    save_file({"cross": np.stack([sn.cross for sn in run.snapshots]).astype(np.float32),
               "encoder": np.stack([sn.encoder for sn in run.snapshots]).astype(np.float32)}, str(out / maps_name))
    save_checkpoint(load_model(run.state), out / model_name, {"task": s.task, "seed": s.seed, "step": s.steps})
    digests_path = out / DIGESTS
    digests = json.loads(digests_path.read_text()) if digests_path.is_file() else {}
    digests.update({n: sha256_file(out / n) for n in names(s.task)})
    digests_path.write_text(json.dumps(dict(sorted(digests.items())), indent=1) + "\n")
    return [out / n for n in names(s.task)]


@dataclass(frozen=True)
class Record:
    """One recorded run as read from its files (arrays read-only)."""
    task: str
    seed: int
    settings: dict
    sentence: str
    snapshots: list[dict]  # {"step", "loss", "lr", "alignment", "accuracy"}
    greedy: list[list[str]]
    cross: np.ndarray  # (S, L, h, n, m)
    encoder: np.ndarray  # (S, L, h, m, m)
    model_path: Path
    wall_s: float
    cpu_s: float


def _digests(folder: Path) -> dict:
    path = folder / DIGESTS
    if not path.is_file():
        raise WeightsError(f"{path} is missing. Fix: {FIX}", key="weights_missing", path=str(path), fix=FIX)
    return json.loads(path.read_text())


def read_record(task: str, folder: Path = RECORD_DIR) -> Record:
    """A task's recorded run, every file checked against sha256.json (WeightsError names the fix)."""
    digests = _digests(folder)
    for n in names(task):
        if n not in digests:
            raise WeightsError(f"{folder / n} is not listed in {DIGESTS}. Fix: {FIX}", key="weights_missing",
                               path=str(folder / n), fix=FIX)
        verify_file(folder / n, digests[n], FIX)
    meta_name, maps_name, model_name = names(task)
    meta = json.loads((folder / meta_name).read_text(encoding="utf-8"))
    if meta.get("format") != FORMAT or meta.get("version") != VERSION or meta.get("vocab") != list(VOCAB) \
            or TransformerConfig.from_dict(meta["model"]) != LAB_MODEL:
        raise WeightsError(f"{folder / meta_name} is not this lab's recorded run. Fix: {FIX}", key="weights_missing",
                           path=str(folder / meta_name), fix=FIX)
    maps = load_file(str(folder / maps_name))
    for a in maps.values():
        a.setflags(write=False)
    return Record(task, meta["seed"], meta["settings"], meta["sentence"], meta["snapshots"], meta["greedy"],
                  maps["cross"], maps["encoder"], folder / model_name, meta["wall_s"], meta["cpu_s"])


def read_model(record: Record) -> Transformer:
    """The recorded run's final weights in LAB_MODEL (strict: every key and shape), eval mode."""
    module = Transformer(LAB_MODEL)
    load_checkpoint(module, record.model_path, FIX)
    return module.eval()
