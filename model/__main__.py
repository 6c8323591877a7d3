"""Command line: write an attention trace, list models, or ask where a token attends.

    python -m model "The animal didn't cross the street because it was tired" --model minilm-l6 --out trace.npz
    python -m model "..." --from it
    python -m model --list
    python -m model "The cat sat" --model-dir ./my-gpt2 --out trace.npz      (a local Hugging Face-format folder)
    python -m model "UN Chief says" --model-dir ./my-bart --target "Le chef" --out trace.npz

and, on a decoder-only language model, three commands (model/cli_cause.py; `python -m model generate --help`):

    python -m model generate "The capital of France is" --max-new 20 --temperature 0 --out gen.npz
    python -m model attribute "The Eiffel Tower is located in the city of" --target " Paris" --foil " Rome" --out a.npz
    python -m model patch --clean "..." --corrupt "..." --target " Paris" --foil " Rome" --out patch.npz

A first word that names a command runs it (to trace the word "generate" itself, write `python -m model -- generate`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .cli_cause import COMMANDS
from .cli_cause import run as run_command
from .errors import HeadlightError
from .registry import DEFAULT_MODEL, REGISTRY, get_spec, load_model
from .tokenizer import check_text, piece_text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m model", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="?", help="the sentence to run")
    p.add_argument("--model", default=DEFAULT_MODEL, help=f"registered model (default {DEFAULT_MODEL})")
    p.add_argument("--list", action="store_true", help="print the registered model names and exit")
    p.add_argument("--out", help="write the trace to this .npz or .json file")
    p.add_argument("--from", dest="from_token", metavar="TOKEN",
                   help="print, per layer and head, the token TOKEN attends to most")
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default=None,
                   help="override the automatic choice (also: HEADLIGHT_DEVICE)")
    p.add_argument("--pair", help="second sentence (encoder models: a sentence pair)")
    p.add_argument("--task", help="task for task-conditioned models (seq2seq-tiny: copy, reverse, swap)")
    p.add_argument("--intermediates", action="store_true", help="also store per-layer hidden states")
    p.add_argument("--model-dir", metavar="PATH",
                   help="a local Hugging Face-format folder (config.json, model.safetensors, tokenizer.json) to run "
                        "instead of --model: bert, roberta, xlm-roberta, distilbert, gpt2, bart, marian")
    p.add_argument("--target", help="target text to teacher-force (encoder-decoder models) instead of decoding")
    return p


def from_token_report(trace, token: str) -> list[str]:
    """Lines 'layer L head H: <query> -> <key> weight' for the first token equal to `token`."""
    want = token.lower()
    block = trace.blocks[0]  # "encoder", or "decoder_self" for a decoder-only model
    q_tokens, k_tokens = trace.axis_tokens(block)
    # "그것은" finds the SentencePiece token "▁그것은" (and "it" finds "it")
    plain = [piece_text(t).lower() for t in q_tokens]  # piece_text drops ▁, and GPT-2's byte-level space mark Ġ
    if want not in plain:
        raise HeadlightError(f"token {token!r} is not among the tokens: {' '.join(q_tokens)}")
    qi = plain.index(want)
    att = trace.attention(block)  # (L, H, N, N)
    lines = [f"{block} attention from {q_tokens[qi]!r} (token {qi})"]
    for layer in range(att.shape[0]):
        for head in range(att.shape[1]):
            row = att[layer, head, qi]
            j = int(row.argmax())
            lines.append(f"layer {layer} head {head:2d}: {k_tokens[j]!r} (token {j}) {row[j]:.3f}")
    return lines


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in COMMANDS:
        return run_command(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    if args.list:
        print("\n".join(REGISTRY))
        return 0
    try:
        if args.text is None:
            raise HeadlightError("give a sentence to run, e.g. python -m model \"I am good\"")
        check_text(args.text)  # fail fast, before loading any weights
        if args.pair is not None:
            check_text(args.pair)
        if args.out and Path(args.out).suffix.lower() not in (".npz", ".json"):
            raise HeadlightError(f"unknown trace format {Path(args.out).suffix!r}: use .npz or .json")
        if args.target is not None:
            check_text(args.target)
        if args.model_dir is not None:
            from .registry import register_local_models

            spec, = register_local_models([args.model_dir])
        else:
            spec = get_spec(args.model)
        if args.target is not None and spec.kind != "encoder-decoder":
            raise HeadlightError(f"--target is for encoder-decoder models (teacher forcing); {spec.name} is {spec.kind}")
        if args.pair is not None and spec.kind != "encoder":
            raise HeadlightError(f"--pair is for encoder models (a sentence pair); {spec.name} is {spec.kind}")
        if args.task is not None and spec.kind != "encoder-decoder":
            raise HeadlightError(f"--task is for task-conditioned encoder-decoder models; {spec.name} has no tasks")
        model = load_model(spec.name, args.device)
        kw = {}
        if args.pair:
            kw["pair"] = args.pair
        if args.task:
            kw["task"] = args.task
        if args.target is not None:
            kw["target"] = args.target
        trace = model.trace(args.text, intermediates=args.intermediates, **kw)
        if trace.truncated:
            print(f"note: input truncated to {len(trace.source_tokens)} of {trace.n_tokens_untruncated} tokens",
                  file=sys.stderr)
        if args.out:
            path = trace.save(args.out)
            block = trace.blocks[0]
            name = "encoder_attention" if block == "encoder" else "decoder_self_attention"
            print(f"wrote {path} ({len(trace.source_tokens)} tokens, {name} {tuple(trace.attention(block).shape)})")
        if "output_text" in trace.meta:
            print(f"output: {trace.meta['output_text']}")
        if args.from_token:
            print("\n".join(from_token_report(trace, args.from_token)))
        if not (args.out or args.from_token):
            print(" ".join(trace.source_tokens))
        return 0
    except (HeadlightError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:  # e.g. --out into a folder that does not exist
        print(f"error: {e.strerror or e}: {e.filename or ''}".rstrip(": "), file=sys.stderr)
        return 2


if __name__ == "__main__":
    from .alloc import return_freed_memory

    return_freed_memory()  # large freed buffers back to the system, as `make run` has them (model/alloc.py)
    code = main()
    from .dequant_cache import join

    join()  # a first load's cache file finished, not cut off by the exit (a daemon writer killed inside safetensors'
    # native code can abort the process: exit -6 seen once in bench/cli_memory.py's cold runs)
    sys.exit(code)
