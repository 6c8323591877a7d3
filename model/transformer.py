"""The one Transformer: every model here, from the paper's encoder-decoder to BERT and GPT-2, is this module with
its own config (model/config.py) and weight table (model/hf/families.py). Built as the Annotated Transformer's
`make_model` builds Vaswani et al. 2017, but with attention returned rather than stored.

    encoder-only (BERT family):  src_embed -> encoder
    decoder-only (GPT-2):        tgt_embed -> decoder (causal, no cross-attention) -> generator
    encoder-decoder (paper):     src_embed -> encoder;  tgt_embed -> decoder (causal, cross-attends) -> generator

Notation: b batch, n target length, m source length, d d_model, V vocab.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .config import TransformerConfig
from .embeddings import Embedding
from .layers import Stack, StackOutput
from .masks import causal_mask, padding_mask
from .run import Record, Run, execute, plans_for


@dataclass
class Output:
    logits: torch.Tensor | None  # (b, n, V) (or (b, 1, V) with last_only); None without a decoder or with upto
    encoder: StackOutput | None
    decoder: StackOutput | None

    @property
    def src_mask(self) -> torch.Tensor | None:
        """(b, 1, 1, m) True = may attend: the encoder's keys (and the cross-attention's)."""
        return self.encoder.mask if self.encoder is not None else None

    @property
    def tgt_mask(self) -> torch.Tensor | None:
        """(b, 1, n, n): the decoder's self-attention mask, look-ahead AND padding."""
        return self.decoder.mask if self.decoder is not None else None


class DecodeCache:
    """The state of an incremental decode: one dict per decoder layer ({"self": keys and values so far, or an SSRU's
    memory c; "cross": the keys and values of the encoder output}) and how many positions were fed."""

    def __init__(self, n_layers: int):
        self.layers: list[dict] = [{} for _ in range(n_layers)]
        self.start = 0


class Transformer(nn.Module):

    def __init__(self, config: TransformerConfig, token_embedding: nn.Module | None = None):
        """token_embedding: a ready lookup module for the source tokens (e.g. a quantised table)."""
        super().__init__()
        self.config = c = config
        self.src_embed = Embedding(c, token_embedding) if c.n_encoder_layers else None
        self.tgt_embed = Embedding(c, zero_first=c.decoder_start == "zeros") if c.n_decoder_layers else None
        self.encoder = Stack(c, c.n_encoder_layers) if c.n_encoder_layers else None
        self.decoder = Stack(c.decoder_config(), c.n_decoder_layers, cross=bool(c.n_encoder_layers),
                             mixer=c.decoder_mixer) if c.n_decoder_layers else None
        # the output projection to the vocabulary
        self.generator = nn.Linear(c.d_model, c.vocab_size, bias=c.output_bias) if c.n_decoder_layers else None
        self.tie_weights()
        if c.is_encoder_decoder:
            self.reset_parameters()

    def tie_weights(self) -> None:
        """Paper 3.4: one matrix for both embeddings and the pre-softmax linear (as the config says)."""
        c = self.config
        if self.src_embed is not None and self.tgt_embed is not None and c.share_embeddings:
            self.tgt_embed.token.weight = self.src_embed.token.weight
        if self.generator is not None and c.tie_embeddings:
            self.generator.weight = self.tgt_embed.token.weight

    def reset_parameters(self) -> None:
        """The paper's model's initialisation (training and paper-base; loaders overwrite every parameter)."""
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        # with sqrt(d_model) scaling, a unit-variance embedding would swamp PE
        nn.init.normal_(self.src_embed.token.weight, std=self.config.d_model**-0.5)

    @property
    def main_embed(self) -> Embedding:
        """The embedding of the input the first stack reads (the encoder's, or a decoder-only model's)."""
        return self.src_embed if self.src_embed is not None else self.tgt_embed

    # ---- the stacks -------------------------------------------------------------------------------------------
    def encode(self, src: torch.Tensor, type_ids: torch.Tensor | None = None, keep: torch.Tensor | None = None, *,
               record: bool | set[int] = False, hidden: bool = False, upto: int | None = None,
               plan=None) -> StackOutput:
        """src (b, m) -> StackOutput with hidden (b, m, d) and mask (b, 1, 1, m) (None: nothing blocked).
        keep (b, m): which tokens are real (a padded batch); by default every pad id is padding when the config
        says so (mask_pad).
        plan: a run request's edits of this stack (model/run.py; `run` makes it)."""
        if keep is not None:
            mask = keep.bool()[:, None, None, :]
        elif self.config.mask_pad in ("both", "source"):
            mask = padding_mask(src, self.config.pad_id)
        else:
            mask = None
        return self.encoder(self._stack_input(plan, lambda: self.src_embed(src, type_ids)), mask, record=record,
                            hidden=hidden, upto=upto, plan=plan)

    @staticmethod
    def _stack_input(plan, embed):
        """What a stack reads first: the embeddings, or a Resume's residual stream (no embedding is made then)."""
        return embed() if plan is None or plan.resume is None else plan.resume.hidden

    def decode(self, tgt: torch.Tensor, memory: StackOutput | None = None, keep: torch.Tensor | None = None, *,
               record: bool | set[int] = False, hidden: bool = False, upto: int | None = None,
               cache: DecodeCache | None = None, plan=None) -> StackOutput:
        """tgt (b, n), memory: the encoder's output (with its mask) -> StackOutput with hidden (b, n, d) and mask
        (b or 1, 1, n, n). keep (b, n): which target keys are real (a padded batch); by default every pad id is
        padding when the config says so (mask_pad "both", the paper's model). cache: incremental decoding, `tgt` holds only the new tokens, which follow
        the cache's (every earlier step's keys and values, or memory, are kept there; padding is not masked).
        plan: a run request's edits of this stack (model/run.py; `run` makes it)."""
        n = tgt.shape[1]
        if cache is not None:
            start = cache.start
            # (1, 1, n, start + n): new row i sees keys 0..start + i
            mask = torch.ones(n, start + n, dtype=torch.bool, device=tgt.device).tril(start)[None, None]
            mem, mem_mask = (memory.hidden, memory.mask) if memory is not None else (None, None)
            out = self.decoder(self._stack_input(plan, lambda: self.tgt_embed(tgt, start=start)), mask, mem,
                               mem_mask, record=record, hidden=hidden, upto=upto, cache=cache.layers, plan=plan)
            cache.start += n
            return out
        look_ahead = causal_mask(n, tgt.device)[None, None]  # (1, 1, n, n)
        if keep is None and self.config.mask_pad == "both":
            keep = tgt != self.config.pad_id
        mask = look_ahead if keep is None else keep.bool()[:, None, None, :] & look_ahead
        mem, mem_mask = (memory.hidden, memory.mask) if memory is not None else (None, None)
        return self.decoder(self._stack_input(plan, lambda: self.tgt_embed(tgt)), mask, mem, mem_mask,
                            record=record, hidden=hidden, upto=upto, plan=plan)

    def main_stack(self, ids: torch.Tensor, type_ids: torch.Tensor | None = None, keep: torch.Tensor | None = None,
                   **kw) -> StackOutput:
        """The first stack on `ids`: the encoder, or a decoder-only model's decoder (kw: encode / decode's)."""
        if self.encoder is not None:
            return self.encode(ids, type_ids, keep, **kw)
        return self.decode(ids, None, keep, **kw)

    def forward(self, ids: torch.Tensor, target: torch.Tensor | None = None, *, type_ids: torch.Tensor | None = None,
                keep: torch.Tensor | None = None, target_keep: torch.Tensor | None = None,
                record: bool | set[int] = False, hidden: bool = False, edits: tuple = (),
                last_only: bool = False) -> Output:
        """ids (b, m): the source (encoder models) or the prompt (decoder-only). target (b, n): an encoder-decoder's
        shifted target (teacher forcing: starts with <bos>, all positions in one pass). last_only: logits of the last
        position only, (b, 1, V) (the next token needs one row; the output matrix is a third of GPT-2's work).
        edits: a run request's edits (model/run.py), e.g. run.ablate(...)'s head surgery, inside this forward."""
        kw = dict(record=record, hidden=hidden)
        plans = plans_for(self, edits) if edits else {}
        enc = dec = None
        if self.encoder is not None:
            enc = self.encode(ids, type_ids, keep, plan=plans.get("encoder"), **kw)
            if self.decoder is not None and target is not None:
                dec = self.decode(target, enc, target_keep, plan=plans.get("decoder"), **kw)
        else:
            dec = self.decode(ids, None, keep, plan=plans.get("decoder"), **kw)
        logits = None
        if dec is not None:
            logits = self.generator(dec.final[:, -1:] if last_only else dec.final)
        return Output(logits, enc, dec)

    def run(self, request: Run) -> Record:
        """One run request (model/run.py): the tokens, the edits inside this forward, what to keep."""
        return execute(self, request)

    # ---- the output --------------------------------------------------------------------------------------------
    def output(self, h: torch.Tensor) -> torch.Tensor:
        """The logits of decoder states h (..., d) read at the top of the stack: through the final norm (pre-LN)
        and the output projection (the logit lens reads every layer's output this way)."""
        norm = self.decoder.final_norm
        return self.generator(h if norm is None else norm(h))

    # ---- greedy decoding ---------------------------------------------------------------------------------------
    def generator_t(self) -> torch.Tensor:
        """(d, V): a contiguous copy of the generator's weight as it is now (no copy where it is stored input-major).
        Made by the caller and kept there (model/loaded.py Seq2SeqModel.generator_t; greedy_decode once per call
        otherwise), never on this module, whose weights training may change."""
        return self.generator.weight.detach().t().contiguous()

    def next_logits(self, h: torch.Tensor, weight_t: torch.Tensor | None = None) -> torch.Tensor:
        """The generator on one position per row: h (b, d) -> logits (b, V), the same product as self.generator(h)
        (to float rounding), from weight_t (d, V), a contiguous copy of its weight (generator_t(); made here when
        None). For one row, (1, d) x (d, V) reads the matrix in one pass: 0.8 ms instead of 3.5 ms for seq2seq-tiny's
        51,576 x 128 on one core, where the greedy loop's projections were 60 % of the Encoder-decoder page's server
        CPU under a lecture hall."""
        t = self.generator_t() if weight_t is None else weight_t
        bias = self.generator.bias
        return torch.addmm(bias, h, t) if bias is not None else h @ t

    def _chooser(self, allowed: torch.Tensor | None, device, weight_t: torch.Tensor | None = None):
        """h (b, d) -> the argmax token ids (b,) over the whole vocabulary, or over the `allowed` ones (V,) bool only:
        then the logits of those rows alone, from their rows of the output matrix gathered once (a shortlist of ~1,000
        of 32,000 pieces: the engine's way). Ties go to the lowest id either way. weight_t: the caller's
        generator_t() (None: made here, once for this chooser)."""
        if allowed is None:
            t = self.generator_t() if weight_t is None else weight_t
            return lambda h: self.next_logits(h, t).argmax(-1)
        ids = allowed.to(device).nonzero().flatten()  # (k,) ascending
        w = self.generator.weight.detach()[ids].t().contiguous()  # (d, k)
        b = self.generator.bias.detach()[ids] if self.generator.bias is not None else None
        return lambda h: ids[(torch.addmm(b, h, w) if b is not None else h @ w).argmax(-1)]

    @torch.no_grad()
    def greedy_decode(self, src: torch.Tensor, bos_id: int, eos_id: int, max_len: int, *,
                      edits: tuple = (), draft: list[int] | None = None,
                      allowed: torch.Tensor | None = None, generator_t: torch.Tensor | None = None) -> torch.Tensor:
        """The paper's inference: feed each output back in, one token at a time (batched).

        src (b, m) -> (b, <= max_len + 1), starting with <bos>; rows that emitted <eos> are padded; stops when
        every row has emitted <eos>.

        draft (one source row only): a guess of the output, e.g. a copy task's known answer. It changes how fast the
        answer comes, never what it is: one decoder pass over [<bos>, draft...] gives, at every row t, the argmax
        greedy step t would take after the prefix [<bos>, draft_1 .. draft_t] (the look-ahead mask hides the rest).
        The longest prefix of the draft that the model itself would have emitted is kept, plus the model's own
        token where it first disagrees; the plain loop goes on from there. A draft the model agrees with costs one
        pass instead of one per token.

        allowed (V,) bool: the only tokens it may choose (a lexical shortlist, as Marian's engines decode); None: any.
        generator_t: the caller's copy of the output matrix, generator_t() (None: made once for this call).
        edits: a run request's edits (model/run.py) inside every step's forward."""
        choose = self._chooser(allowed, src.device, generator_t)
        plans = plans_for(self, edits) if edits else {}
        enc = self.encode(src, plan=plans.get("encoder"))
        b = src.shape[0]
        ys = torch.full((b, 1), bos_id, dtype=torch.long, device=src.device)
        done = torch.zeros(b, dtype=torch.bool, device=src.device)
        if draft and b == 1 and max_len > 0:
            ys, done = self._verify_draft(ys, enc, draft[:max_len], eos_id, plans.get("decoder"), choose)
        # each step feeds only the tokens not yet fed; the cache keeps every earlier position's keys and values (or
        # an SSRU's memory) and the cross-attention's projections of the encoder output
        cache = DecodeCache(len(self.decoder.layers))
        for _ in range(max_len - (ys.shape[1] - 1)):
            if done.all():
                break
            dec = self.decode(ys[:, cache.start:], enc, cache=cache, plan=plans.get("decoder"))
            nxt = choose(dec.final[:, -1])  # (b,)
            nxt = nxt.masked_fill(done, self.config.pad_id)
            ys = torch.cat([ys, nxt[:, None]], dim=1)
            done |= nxt == eos_id
        return ys

    def _verify_draft(self, ys: torch.Tensor, memory: StackOutput, draft: list[int], eos_id: int,
                      plan=None, choose=None) -> tuple[torch.Tensor, torch.Tensor]:
        """ys (1, 1) = [[bos]], draft (k,) -> (ys (1, 1 + j), done (1,)): the greedy tokens one pass can prove."""
        d = torch.tensor([draft], dtype=torch.long, device=ys.device)  # (1, k)
        x = torch.cat([ys, d[:, :-1]], dim=1)  # (1, k) = [bos, draft_1 .. draft_{k-1}]
        dec = self.decode(x, memory, plan=plan)
        pred = (choose or self._chooser(None, ys.device))(dec.final[0])  # (k,): the greedy choice after each prefix
        miss = (pred != d[0]).nonzero()
        n = int(miss[0]) + 1 if len(miss) else len(draft)  # draft[:n-1] agreed; pred[n-1] is greedy's step n
        out = pred[:n]  # == draft up to the first disagreement, then the model's own token
        eos = (out == eos_id).nonzero()
        if len(eos):
            out = out[: int(eos[0]) + 1]
        done = torch.tensor([bool(len(eos))], device=ys.device)
        return torch.cat([ys, out[None]], dim=1), done
