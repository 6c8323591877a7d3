"""`python -m training <command>`: the Training page's lab from the command line.

    python -m training lab --task reverse --steps 400 --seed 3 --json OUT.json
    python -m training lab --task copy --record assets/training-lab      (the page's recorded run: training/lab_files.py)

seq2seq-tiny's own commands stay where they were: `python -m training.train`, `python -m training.evaluate`,
`python -m training.data`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

from model.data import TASKS

from .lab import LabSettings, train


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m training", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    lab = sub.add_parser("lab", help="train the Training page's small encoder-decoder and write its snapshots")
    d = LabSettings()
    lab.add_argument("--task", choices=TASKS, default=d.task)
    lab.add_argument("--steps", type=int, default=d.steps, help=f"optimizer updates (default {d.steps})")
    lab.add_argument("--seed", type=int, default=d.seed)
    lab.add_argument("--warmup", type=int, default=d.warmup, help=f"warm-up steps (default {d.warmup})")
    lab.add_argument("--lr-factor", type=float, default=d.lr_factor, help="factor in front of the schedule")
    lab.add_argument("--label-smoothing", type=float, default=d.label_smoothing, help="eps (default 0.1)")
    lab.add_argument("--batch-size", type=int, default=d.batch_size, help=f"sequences per update ({d.batch_size})")
    lab.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    lab.add_argument("--json", metavar="OUT.json", help="write the run's summary (snapshots, the smoothing check)")
    lab.add_argument("--record", metavar="DIR", help="write the page's recorded run of this task into DIR")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.steps < 1 or args.warmup < 1 or args.batch_size < 1 or args.threads < 1:
        print("error: --steps, --warmup, --batch-size and --threads must be at least 1", file=sys.stderr)
        return 2
    torch.set_num_threads(args.threads)
    settings = LabSettings(task=args.task, steps=args.steps, seed=args.seed, warmup=args.warmup,
                           lr_factor=args.lr_factor, label_smoothing=args.label_smoothing, batch_size=args.batch_size)
    run = train(settings)
    first, last = run.snapshots[0], run.snapshots[-1]
    print(f"lab {settings.task}, seed {settings.seed}: {settings.steps} steps in {run.wall_s:.1f} s "
          f"({run.cpu_s:.1f} s CPU, {torch.get_num_threads()} thread(s)); loss {first.loss:.3f} -> {last.loss:.3f}, "
          f"alignment {first.alignment:.3f} -> {last.alignment:.3f}, greedy: {' '.join(last.greedy)}")
    if args.json:
        Path(args.json).write_text(json.dumps(run.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if args.record:
        from .lab_files import write_record

        paths = write_record(run, Path(args.record))
        print("wrote " + ", ".join(str(p) for p in paths))
    return 0


if __name__ == "__main__":
    sys.exit(main())
