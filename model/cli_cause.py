"""The command line's cause commands (model/cause/): generation replay, direct logit attribution, activation patching.

    python -m model generate "The capital of France is" --model smollm2-135m --max-new 20 --temperature 0 --out gen.npz
    python -m model attribute "The Eiffel Tower is located in the city of" --target " Paris" --foil " Rome" --out attr.npz
    python -m model patch --clean "The Eiffel Tower is located in the city of" \\
        --corrupt "The Colosseum is located in the city of" --target " Paris" --foil " Rome" --out patch.npz

Each writes an .npz (np.load(path, allow_pickle=False)); docs/cli.md lists every array. A target or foil stands for
its first token (a note on stderr when the string has more than one). Errors are one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

from .cause.attribution import attribute
from .cause.common import MAX_CAUSE_TOKENS, AnswerToken
from .cause.generation import MAX_NEW, Sampling, generate
from .cause.patching import patch
from .errors import HeadlightError
from .registry import get_spec, load_model
from .tokenizer import check_text

COMMANDS = ("generate", "attribute", "patch")
CAUSE_MODEL = "smollm2-135m"  # the default language model of these commands


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default=CAUSE_MODEL, help=f"a registered decoder-only model (default {CAUSE_MODEL})")
    p.add_argument("--model-dir", metavar="PATH", help="a local Hugging Face folder or GGUF file instead of --model")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None,
                   help="override the automatic choice (also: HEADLIGHT_DEVICE)")
    p.add_argument("--out", help="write the arrays to this .npz file")


def build_parser(command: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"python -m model {command}", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    if command == "generate":
        p.add_argument("text", help="the prompt")
        p.add_argument("--max-new", type=int, default=20, help=f"tokens to write (at most {MAX_NEW}; default 20)")
        p.add_argument("--temperature", type=float, default=0.0, help="0 (default): greedy; > 0: sample")
        p.add_argument("--top-k", type=int, default=0, help="sample among the k most probable tokens (0: all)")
        p.add_argument("--top-p", type=float, default=1.0, help="sample within this probability mass (1: all)")
        p.add_argument("--seed", type=int, default=0, help="the sampler's seed (the same seed, the same text)")
    elif command == "attribute":
        p.add_argument("text", help="the prompt; the logits are read at its last position")
        p.add_argument("--target", help="the answer (its first token); default: the model's own next token")
        p.add_argument("--foil", help="the alternative subtracted (its first token); default: none")
    else:
        p.add_argument("--clean", required=True, help="the clean prompt")
        p.add_argument("--corrupt", required=True, help="the corrupted prompt (as many tokens as the clean one)")
        p.add_argument("--target", required=True, help="the clean answer (its first token)")
        p.add_argument("--foil", required=True, help="the corrupted answer (its first token)")
        p.add_argument("--residual", action="store_true", help="also patch the residual stream per layer x position")
    _common(p)
    return p


def _note(a: AnswerToken | None) -> None:
    if a is not None and a.n_tokens > 1:
        print(f"note: {a.text!r} is {a.n_tokens} tokens; its first, {a.token!r} (id {a.id}), stands for it",
              file=sys.stderr)


def _save(path: str | None, arrays: dict) -> None:
    if path:
        np.savez(path, **arrays)
        print(f"wrote {path} ({', '.join(f'{k} {np.shape(v)}' for k, v in arrays.items() if np.ndim(v))})")


def run(command: str, argv: list[str]) -> int:
    args = build_parser(command).parse_args(argv)
    try:
        for text in (getattr(args, k, None) for k in ("text", "clean", "corrupt")):
            if text is not None:
                check_text(text)
        if args.out and Path(args.out).suffix.lower() != ".npz":
            raise HeadlightError(f"unknown output format {Path(args.out).suffix!r}: use .npz")
        if args.model_dir is not None:
            from .registry import register_local_models

            spec, = register_local_models([args.model_dir])
        else:
            spec = get_spec(args.model)
        if spec.kind != "decoder":
            raise HeadlightError(f"{command} is for decoder-only language models; {spec.name} is {spec.kind}")
        model = load_model(spec.name, args.device)
        if command == "generate":
            g = generate(model, args.text, args.max_new, Sampling(args.temperature, args.top_k, args.top_p, args.seed),
                         keep_kv=False)
            print(f"{model.tokenizer.decode(g.ids, skip_special_tokens=False)}")
            _save(args.out, dict(sequence_ids=np.array(g.ids, dtype=np.int64), prompt_len=len(g.prompt_ids),
                                 step_rows=g.step_rows(), tokens=np.array(g.tokens),
                                 step_probs=np.array([s.choice.prob for s in g.steps], dtype=np.float32),
                                 sink_mass=g.sink_mass(),
                                 cache_bytes=np.array([s.cache_bytes for s in g.steps], dtype=np.int64),
                                 macs_cached=np.array([s.macs_cached for s in g.steps], dtype=np.int64),
                                 macs_full=np.array([s.macs_full for s in g.steps], dtype=np.int64)))
        elif command == "attribute":
            a = attribute(model, args.text, args.target, args.foil)
            _note(a.target)
            _note(a.foil)
            what = repr(a.target.token) + (f" - {a.foil.token!r}" if a.foil else "")
            print(f"logit {what}: total {a.total:.4f} = heads {a.head.sum():.4f} + mlps {a.mlp.sum():.4f} "
                  f"+ embeddings {a.embed:.4f} + biases {a.attn_bias.sum() + a.bias:.4f} (error {a.error:.1e})")
            _save(args.out, dict(source_ids=np.array(a.ids, dtype=np.int64), tokens=np.array(a.tokens),
                                 head_dla=a.head, mlp_dla=a.mlp, embed_dla=np.float64(a.embed),
                                 attn_bias_dla=a.attn_bias, bias_dla=np.float64(a.bias), total=np.float64(a.total),
                                 scale=np.float64(a.scale), target_id=a.target.id,
                                 foil_id=-1 if a.foil is None else a.foil.id))
        else:
            p = patch(model, args.clean, args.corrupt, args.target, args.foil, residual=args.residual)
            _note(p.target)
            _note(p.foil)
            best = np.unravel_index(np.argmax(p.head), p.head.shape)
            print(f"clean {p.clean_diff:.4f}, corrupted {p.corrupt_diff:.4f}; best head: layer {best[0]} head "
                  f"{best[1]} {p.head[best]:.4f}")
            arrays = dict(head_patch=p.head, head_patch_normalised=p.normalised(p.head),
                          clean_ids=np.array(p.clean_ids, dtype=np.int64),
                          corrupt_ids=np.array(p.corrupt_ids, dtype=np.int64), clean_diff=np.float64(p.clean_diff),
                          corrupt_diff=np.float64(p.corrupt_diff), target_id=p.target.id, foil_id=p.foil.id)
            if p.residual is not None:
                arrays.update(residual_patch=p.residual, residual_patch_normalised=p.normalised(p.residual))
            _save(args.out, arrays)
        return 0
    except (HeadlightError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2


__all__ = ["COMMANDS", "MAX_CAUSE_TOKENS", "run"]
