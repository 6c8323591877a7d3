"""A loaded model: the one Transformer + tokenizer + device, with one method that matters, `trace(text)`, returning
an AttentionTrace. Holds no per-request state, so the app can cache one instance per process and share it across
sessions. One class per kind of model, because each kind's trace says something else:

- EncoderModel (BERT family): the encoder's self-attention of the text.
- DecoderOnlyModel (GPT-2): the causal self-attention of the prompt, the next-token distribution and the greedy
  continuation, step by step.
- Seq2SeqModel (the paper's model, BART, Marian): greedy decoding (or teacher forcing), then every attention of the
  decoder input in one pass.

Notation: b batch, h heads, n/N source length, T target length, L layers, d d_model, V vocabulary.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import torch
from torch import nn

from .abilities import Abilities, declared, of_config
from .blocks import Block
from .config import TransformerConfig
from .errors import InputError
from .run import Record, Run, plans_for
from .token_ops import TokenOps
from .tokenizer import Encoded, TextTokenizer, check_text
from .trace import AttentionTrace
from .transformer import Output, Transformer
from .words import unknown_ids, unknown_words


def _np(x: torch.Tensor) -> np.ndarray:
    return x.detach().float().cpu().numpy()


def _stack(per_layer: list[torch.Tensor], row: int = 0, n: int | None = None, *, release: bool = False) -> np.ndarray:
    """L x (b, h, n, m) -> (L, h, n, m) float32 numpy of one batch row (its first n queries and keys when n is
    given), copied layer by layer into one array. release: each layer's tensor is dropped from `per_layer` once
    copied (the caller's forward output is not read again), so the maps are never held twice: a 512-token MiniLM
    trace peaked at 72 MiB of per-layer maps plus their 72 MiB stacked copy."""
    if per_layer[0].device.type != "cpu":
        return _stack_on_device(per_layer, row, n, release=release)
    shape = per_layer[0].shape[1:] if n is None else (per_layer[0].shape[1], n, n)
    out = np.empty((len(per_layer), *shape), dtype=np.float32)
    for i in range(len(per_layer)):
        a = per_layer[i][row] if n is None else per_layer[i][row, :, :n, :n]
        if release:
            per_layer[i] = None
        out[i] = a.detach().float().cpu().numpy()
        del a
    return out


def _stack_on_device(per_layer: list[torch.Tensor], row: int = 0, n: int | None = None, *,
                     release: bool = False) -> np.ndarray:
    """`_stack` for maps on an accelerator: the rows stacked there (one kernel, float32 there), then moved to the
    host in one copy with one sync, straight into the array returned (no second host copy), instead of one blocking
    copy per layer into a temporary that is copied again (issue 39: SmolLM2's 30 x 9 x 512 x 512 maps, 283 MB).
    Not into page-locked memory: PyTorch rounds a pinned block up to a power of two (512 MB for those maps) and the
    returned array would keep it alive in the result cache. Same values as `_stack` (a copy, no arithmetic;
    tests/test_trace_many.py runs it on CPU tensors). Unmeasured on a GPU so far."""
    parts = [t[row] if n is None else t[row, :, :n, :n] for t in per_layer]
    if release:
        for i in range(len(per_layer)):
            per_layer[i] = None
    stacked = torch.stack(parts).float()  # (L, h, n, m) on the device
    del parts
    return stacked.cpu().numpy()


def input_major_linears(module: nn.Module) -> int:
    """Store each nn.Linear weight (out, in) in input-major memory order: same shape,
    values and state_dict keys, strides (1, out). F.linear multiplies by W^T, which is
    then a contiguous (in, out) matrix, and MKL's CPU GEMM is markedly faster on it for
    the few-row inputs of the app (a 12-token sentence; one row per greedy step) and no
    slower at 512 rows. Weights shared with an embedding (the tied generator) are left
    as they are, so token lookups stay row-contiguous. Returns how many were changed."""
    tied = {id(m.weight) for m in module.modules() if isinstance(m, nn.Embedding)}
    changed = 0
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear) and id(m.weight) not in tied and m.weight.is_contiguous():
                m.weight.data = m.weight.data.t().contiguous().t()  # (out, in) view of an (in, out) buffer
                changed += 1
    return changed


class LoadedModel(TokenOps):
    main_block: Block = "encoder"  # the self-attention block a page shows first (a decoder-only model: "decoder_self")

    def __init__(self, name: str, module: Transformer, tokenizer: TextTokenizer, device: torch.device,
                 *, trained: bool, description: str = "", input_major: bool = True):
        """input_major: store the Linear weights input-major on CPU (a layout change only: 6-12 % faster for
        MiniLM's short inputs; SmolLM2's wider matrices were 5-20 % slower with it, and the copy of its 540 MB
        took 0.7 s of its load: model/gguf.py passes False)."""
        self.name = name
        self.module = module.to(device).eval()
        if device.type == "cpu" and input_major:
            input_major_linears(self.module)
        self.config: TransformerConfig = module.config
        self.tokenizer = tokenizer
        self.device = device
        self.trained = trained
        self.description = description

    @property
    def abilities(self) -> Abilities:
        """What this model can do (model/abilities.py): its registry entry's declaration, its kind its config's."""
        return of_config(self.config, declared(self.name))

    @property
    def kind(self) -> str:
        """"encoder" | "decoder" (decoder-only) | "encoder-decoder": its config's."""
        return self.config.kind

    def unknown_words(self, text: str) -> list[str]:
        """The words of `text` its vocabulary lacks, as typed (model/words.py), for a model declared to name them
        (abilities.names_unknown: seq2seq-tiny, a translator); [] for any other (a page measures its trace's
        readability instead: analysis.readability)."""
        if not self.abilities.names_unknown:
            return []
        return unknown_words(text, self.encode_source(text), unknown_ids(self.tokenizer))

    @property
    def activation(self) -> str:
        """The Feed Forward's non-linearity by its config name ("gelu", "relu", "gelu_new", "swish", ...)."""
        return self.config.activation

    @property
    def source_embedding(self):
        """The embedding module whose `parts` give X, PE and X + PE (the first stack's)."""
        return self.module.main_embed

    def encode_source(self, text: str, **kw) -> Encoded:
        return self.tokenizer.encode(text)

    def pad_sources(self, texts: list[str]) -> tuple[list[list[str]], np.ndarray]:
        """Encode each text as a source and pad to the longest: (tokens (b x n, the pad token filling short
        rows), ids (b, n))."""
        encs = [self.encode_source(t) for t in texts]
        n = max(len(e) for e in encs)
        pad_id = self.config.pad_id
        pad_tok = self.tokenizer.id_to_token(pad_id) or "[PAD]"
        ids = np.full((len(encs), n), pad_id, dtype=np.int64)
        for i, e in enumerate(encs):
            ids[i, : len(e)] = e.ids
        return [e.tokens + [pad_tok] * (n - len(e)) for e in encs], ids

    def n_layers(self, block: Block = "encoder") -> int:
        """Layers of a block: the encoder's, or the decoder's for "decoder_self" / "cross"."""
        cfg = self.config
        return cfg.n_encoder_layers if block == "encoder" else cfg.n_decoder_layers

    def n_heads(self, block: Block = "encoder") -> int:
        """Heads of a block (an encoder-decoder's decoder may have its own count)."""
        return self.config.block_heads(block)

    def layer_modules(self, block: Block = "encoder"):
        """The block's layer modules (each with .self_attn, .ffn, .norm1, ...)."""
        return self.module.encoder.layers if block == "encoder" else self.module.decoder.layers

    def _ids(self, ids: list[int]) -> torch.Tensor:
        return torch.tensor([ids], dtype=torch.long, device=self.device)  # (1, n)

    def position_table(self, n: int) -> np.ndarray | None:
        """(n, d): learned position embeddings or the sinusoidal table, as the model adds them (None: it adds
        none)."""
        with torch.inference_mode():
            table = self.source_embedding.position_table(min(n, self.config.max_positions))
        return None if table is None else _np(table)

    def embedding_parts(self, text: str, **kw) -> tuple[Encoded, dict[str, np.ndarray]]:
        """X (token embeddings, scaled as the model scales them), PE rows and their sum, each (n, d)."""
        enc = self.encode_source(text, **kw)
        with torch.inference_mode():
            parts = self.source_embedding.parts(self._ids(enc.ids), self._ids(enc.type_ids)
                                                if self.config.type_vocab_size else None)
        return enc, {k: _np(v[0]) for k, v in parts.items()}

    def trace(self, text: str, **kw) -> AttentionTrace:
        raise NotImplementedError

    def run(self, request: Run) -> Record:
        """One run request on this model (model/run.py: the ids, the edits inside the forward, what to keep), without
        autograd."""
        with torch.inference_mode():
            return self.module.run(request)

    def _meta(self) -> dict:
        return {"device": str(self.device), "trained": self.trained, "kind": self.kind,
                "d_model": self.config.d_model, "n_heads": self.config.n_heads, "d_k": self.config.d_k,
                "scheme": getattr(self.tokenizer, "scheme", None)}  # how its tokens mark pieces (bytes: "bytelevel")

    def _source_fields(self, text: str, enc: Encoded) -> dict:
        return dict(model=self.name, text=text, source_tokens=enc.tokens, source_ids=enc.ids,
                    source_special=enc.special, source_word_ids=enc.word_ids, source_offsets=enc.offsets,
                    source_type_ids=enc.type_ids,
                    truncated=enc.truncated, n_tokens_untruncated=enc.n_tokens_untruncated)


class EncoderModel(LoadedModel):
    """BERT-family encoder (MiniLM, multilingual-e5-small, local folders)."""


    def trace(self, text: str, *, pair: str | None = None, intermediates: bool = False,
              edits: tuple = ()) -> AttentionTrace:
        """edits: a run request's edits (model/run.py, e.g. run.ablate's head surgery) inside the forward."""
        check_text(text)
        enc = self.tokenizer.encode(text, pair)
        with torch.inference_mode():
            out = self.module.encode(self._ids(enc.ids), self._ids(enc.type_ids), hidden=intermediates,
                                     plan=plans_for(self.module, edits)["encoder"] if edits else None)
        return self._trace_row(text, enc, out, 0, intermediates, pair, release=True)

    def trace_many(self, texts: list[str], *, intermediates: bool = False) -> list[AttentionTrace]:
        """The traces of several texts from one padded forward (b, n_max): each text's rows and key columns are
        its own, the padding keys masked out, so every trace equals `trace(text)` up to float rounding (the
        products run in other block shapes; tests/test_trace_many.py). One forward for many short texts costs
        less than one each: 8 sentences of 19 tokens take ~3 ms each instead of ~6."""
        for text in texts:
            check_text(text)
        encs = [self.tokenizer.encode(text) for text in texts]
        n = max(len(e.ids) for e in encs)
        ids = torch.full((len(encs), n), self.config.pad_id, dtype=torch.long)
        type_ids = torch.zeros((len(encs), n), dtype=torch.long)
        keep = torch.zeros((len(encs), n), dtype=torch.bool)
        for i, e in enumerate(encs):
            ids[i, : len(e.ids)] = torch.tensor(e.ids)
            type_ids[i, : len(e.ids)] = torch.tensor(e.type_ids)
            keep[i, : len(e.ids)] = True
        with torch.inference_mode():
            out = self.module.encode(ids.to(self.device), type_ids.to(self.device),
                                     None if bool(keep.all()) else keep.to(self.device), hidden=intermediates)
        return [self._trace_row(text, e, out, i, intermediates) for i, (text, e) in enumerate(zip(texts, encs))]

    def _trace_row(self, text: str, enc: Encoded, out, row: int, intermediates: bool,
                   pair: str | None = None, *, release: bool = False) -> AttentionTrace:
        """Row `row` of a (possibly padded) forward as the trace of `text`: its n tokens, n x n of each map.
        release: `out`'s maps are dropped as they are copied (a forward of one text, not read again)."""
        n = len(enc.ids)
        return AttentionTrace(
            **self._source_fields(text, enc),
            encoder_attention=_stack(out.self_attention, row, n, release=release),  # (L, h, n, n)
            masks={"source_padding": np.ones(n, dtype=bool)},
            encoder_hidden_states=_np(torch.stack([h[row, :n] for h in out.hidden_states])) if intermediates else None,
            meta={**self._meta(), **({"pair": pair} if pair else {})},
        )


@dataclass(frozen=True)
class TokenChoice:
    token: str
    id: int
    prob: float


@dataclass(frozen=True)
class Step:
    """One greedy step: the chosen token (argmax), its probability and the top alternatives."""

    position: int  # index of the new token in the whole sequence
    choice: TokenChoice
    top: list[TokenChoice]


class DecoderOnlyModel(LoadedModel):
    """A decoder-only language model (GPT-2): its one causal stack stands where the pages show the encoder."""

    main_block: Block = "decoder_self"

    def n_layers(self, block: Block = "decoder_self") -> int:
        return self.config.n_decoder_layers

    def layer_modules(self, block: Block = "decoder_self"):
        return self.module.decoder.layers

    def encode_prompt(self, text: str) -> Encoded:
        """The prompt's Encoded (tokens, ids, words); an InputError when the text is empty or has no tokens."""
        check_text(text)
        enc = self.tokenizer.encode(text)
        if not enc.ids:
            raise InputError("The text has no tokens (only spaces or control characters): type a sentence.",
                             key="no_tokens")
        return enc

    def forward_ids(self, ids: list[int], **kw) -> Output:
        with torch.inference_mode():
            return self.module(self._ids(ids), **kw)

    def _top(self, logits: torch.Tensor, k: int) -> list[TokenChoice]:
        """logits (V,) -> the k most probable next tokens."""
        probs = logits.float().softmax(-1)
        p, i = probs.topk(max(1, min(k, probs.shape[0])))
        return [TokenChoice(self.tokenizer.id_to_token(int(j)) or f"[{int(j)}]", int(j), float(q))
                for q, j in zip(p, i)]

    def next_token_distribution(self, text: str, top_k: int = 10) -> list[TokenChoice]:
        """The top_k most probable tokens after `text`, with their probabilities."""
        out = self.forward_ids(self.encode_prompt(text).ids, last_only=True)
        return self._top(out.logits[0, -1], top_k)

    def greedy_continue(self, text: str, n_new: int = 8, top_k: int = 5, *,
                        edits: tuple = (), prefix: tuple[int, ...] = ()) -> list[Step]:
        """Append the argmax token n_new times (never past the model's positions); each step lists its top_k.
        edits: a run request's edits (model/run.py), applied inside every step's forward. prefix: token ids
        already chosen after the text (earlier steps), so that a continuation can grow one step at a time."""
        ids = [*self.encode_prompt(text).ids, *prefix]
        steps = []
        for _ in range(max(0, min(n_new, self.config.max_positions - len(ids)))):
            top = self._top(self.forward_ids(ids, last_only=True, edits=edits).logits[0, -1], top_k)
            steps.append(Step(len(ids), top[0], top))
            ids = [*ids, top[0].id]
        return steps

    def trace(self, text: str, *, intermediates: bool = False, edits: tuple = (),
              top_k: int = 5, **kw) -> AttentionTrace:
        """edits: a run request's edits (model/run.py), applied inside the forward."""
        enc = self.encode_prompt(text)
        out = self.forward_ids(enc.ids, hidden=intermediates, edits=edits, last_only=True)
        n = len(enc.ids)
        nxt = self._top(out.logits[0, -1], top_k)
        dec = out.decoder
        masks = {"decoder_self": np.tril(np.ones((n, n), dtype=bool))}
        if dec.local_mask is not None:  # the sliding-window layers' band (only where it blocks something: n > window)
            masks["decoder_self_local"] = _np(dec.local_mask.expand(1, 1, n, n)[0, 0]).astype(bool)  # (N, N)
        c = self.config
        window = {"local_layers": list(c.local_layers), "sliding_window": c.sliding_window} if c.local_layers else {}
        return AttentionTrace(
            **self._source_fields(text, enc),
            encoder_attention=None,
            decoder_self_attention=_stack(dec.self_attention, release=True),  # (L, H, N, N), causal
            masks=masks,
            decoder_hidden_states=_np(torch.stack([h[0] for h in dec.hidden_states])) if intermediates else None,
            meta={**self._meta(), **kw, **window, "next_tokens": [c.token for c in nxt],
                  "next_probs": [c.prob for c in nxt]},
        )


class Seq2SeqModel(LoadedModel):
    """Encoder-decoder (the paper's architecture). Decoding starts from `bos_id` (BART: </s>, Marian: <pad>) and
    ends at `eos_id`. Subclasses may override `encode_source` (e.g. to prepend a task token)."""


    def __init__(self, *args, bos_id: int, eos_id: int, max_new_tokens: int = 64, **kw):
        super().__init__(*args, **kw)
        self.bos_id, self.eos_id, self.max_new_tokens = bos_id, eos_id, max_new_tokens

    @staticmethod
    def token_id(tokenizer: TextTokenizer, token: str) -> int:
        """The id of a special token the model needs (a ValueError when the tokenizer lacks it)."""
        i = tokenizer.token_to_id(token)
        if i is None:
            raise ValueError(f"tokenizer lacks {token!r}")
        return i

    @cached_property
    def generator_t(self) -> torch.Tensor:
        """(d, V): the output matrix transposed once for the greedy loop's one-row products (Transformer.next_logits),
        kept here, not on the module: a loaded model's weights never change (a trained one's may: the module makes
        its own copy per call)."""
        return self.module.generator_t()

    def step_limit(self, src_ids: list[int], max_new_tokens: int | None = None) -> int:
        """How many tokens greedy decoding may emit: never past the model's positions, whatever the caller (a URL
        parameter, say) asked for."""
        return min(max_new_tokens or self.max_new_tokens, self.config.max_positions - 1)

    def output_text(self, ids: list[int]) -> str:
        """Output ids (y_1 .. y_T, maybe ending with <eos>) as text: <eos> dropped, then detokenized."""
        return self.tokenizer.decode(ids[:-1] if ids[-1:] == [self.eos_id] else ids)

    def decode_ids(self, src_ids: list[int], max_new_tokens: int | None = None, *,
                   edits: tuple = (), draft: list[int] | None = None) -> list[int]:
        """Greedy decoding: [bos, y1, ..., (eos)]. draft: a guess of the output that can only make it faster
        (Transformer.greedy_decode)."""
        limit = self.step_limit(src_ids, max_new_tokens)
        with torch.inference_mode():
            ys = self.module.greedy_decode(self._ids(src_ids), self.bos_id, self.eos_id, limit, edits=edits,
                                           draft=draft, generator_t=self.generator_t)
        return ys[0].tolist()

    def trace(self, text: str, *, intermediates: bool = False, target: str | None = None,
              max_new_tokens: int | None = None, edits: tuple = (), full_vocab: bool = False,
              **kw) -> AttentionTrace:
        """Greedy-decode the text (or teacher-force `target`), then record every
        attention of the decoder input sequence [<bos>, y1, ..., y_{T-1}] in one
        pass. Because of the look-ahead mask, row t is exactly what decoding step t saw.
        full_vocab: a model that decodes within a shortlist decodes over the whole vocabulary instead."""
        check_text(text)
        enc = self.encode_source(text, **kw)
        if target is not None:
            tgt = self.tokenizer.encode(target, add_special_tokens=False)
            ys = [self.bos_id, *tgt.ids, self.eos_id][: self.config.max_positions]
        else:
            ys = self.decode_ids(enc.ids, max_new_tokens, edits=edits,
                                 **({"full_vocab": True} if full_vocab else {}))
        generated = ys[1:]
        dec_in = ys[:-1] if ys[-1] == self.eos_id and len(ys) > 1 else ys  # decoder inputs (T,)
        with torch.inference_mode():
            out = self.module(self._ids(enc.ids), self._ids(dec_in), hidden=intermediates, edits=edits)
            logits = out.logits[0].float().log_softmax(-1)  # (T, V)
        tok = self.tokenizer.id_to_token
        specials = {self.bos_id, self.eos_id, self.config.pad_id}
        T = len(dec_in)
        return AttentionTrace(
            **self._source_fields(text, enc),
            encoder_attention=_stack(out.encoder.self_attention, release=True),
            target_tokens=[tok(i) for i in dec_in], target_ids=dec_in,
            target_special=[i in specials for i in dec_in],
            # an SSRU decoder has no self-attention: its forget gates instead
            decoder_self_attention=_stack(out.decoder.self_attention, release=True)
            if out.decoder.self_attention else None,
            cross_attention=_stack(out.decoder.cross_attention, release=True),
            decoder_forget_gates=_np(torch.stack([f[0] for f in out.decoder.forget_gates]))
            if out.decoder.forget_gates else None,  # (L, T, d)
            # the masks the module applied: a typed pad token (id pad_id) is blocked like padding
            masks={"source_padding": _np(out.src_mask[0, 0, 0]).astype(bool) if out.src_mask is not None
                   else np.ones(len(enc.ids), dtype=bool),  # (N,)
                   "decoder_self": _np(out.tgt_mask[0, 0].expand(T, T)).astype(bool)},  # (T, T): look-ahead AND pad
            encoder_hidden_states=_np(torch.stack([h[0] for h in out.encoder.hidden_states])) if intermediates else None,
            decoder_hidden_states=_np(torch.stack([h[0] for h in out.decoder.hidden_states])) if intermediates else None,
            meta={**self._meta(), **kw,
                  "generated_tokens": [tok(i) for i in generated],
                  "output_text": self.output_text(generated),
                  "teacher_forced": target is not None,
                  "step_logprobs_of_generated": [float(logits[i, y]) for i, y in enumerate(generated[: len(dec_in)])]},
        )
