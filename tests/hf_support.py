"""Tiny random Hugging Face checkpoints, built at test time with `transformers` (tests only) and saved as
safetensors with a tokenizer.json made by the `tokenizers` library. Nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

WORDS = ("the cat sat on mat a dog ran to park it was tired because animal did not cross street "
         "i am good you are here we go home now le chat est sur tapis").split()
SENTENCES = ["The animal didn't cross the street because it was tired.", "The cat sat on the mat.",
             "A dog ran to the park, and it was happy.", "We go home now; you are here.",
             "Attention is all you need: queries, keys and values."]


def word_level(specials: list[str], unk: str, template: tuple[str, str] | None) -> Tokenizer:
    """WordLevel over specials + WORDS (ids in that order), lowercasing, whitespace split."""
    vocab = {t: i for i, t in enumerate([*specials, *WORDS])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token=unk))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.add_special_tokens(specials)
    if template:
        single, pair = template
        tok.post_processor = processors.TemplateProcessing(
            single=single, pair=pair, special_tokens=[(s, vocab[s]) for s in specials if s in single + pair])
    return tok


def byte_bpe(vocab_size: int) -> Tokenizer:
    """GPT-2 style byte-level BPE trained on SENTENCES; <|endoftext|> is id 0."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(SENTENCES * 4, trainer)
    return tok


KOREAN = ["철수는 영희에게 책을 빌려주었다.", "나는 학교에 간다. 동물은 길을 건너지 않았다.",
          "오늘 날씨가 좋아서 공원에 갔다."]


def sentencepiece_bpe(vocab_size: int) -> Tokenizer:
    """Gemma's kind of tokenizer (transformers' GemmaTokenizer): SentencePiece BPE over "▁"-for-space text with byte
    fallback, trained on SENTENCES and some Korean; ids 0-4 <pad> <eos> <bos> <unk> <mask>, then the 256 byte pieces
    <0x00>..<0xFF>, then at most 60 characters (rarer Hangul syllables fall back to their bytes), then merges."""
    specials = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", *(f"<0x{b:02X}>" for b in range(256))]
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    tok.normalizer = normalizers.Replace(" ", "\u2581")
    tok.pre_tokenizer = pre_tokenizers.Split("\u2581", behavior="merged_with_next")  # training: pieces within words
    tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size + len(specials), special_tokens=specials, limit_alphabet=60,
                                  show_progress=False)
    tok.train_from_iterator((SENTENCES + KOREAN) * 4, trainer)
    tok.pre_tokenizer = pre_tokenizers.Split(" ", behavior="merged_with_previous")  # GemmaTokenizer's (a no-op)
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A <bos> $B",
                                                       special_tokens=[("<bos>", 2)])
    return tok


def perturb(model: torch.nn.Module, std: float = 0.15, skip: tuple[str, ...] = ()) -> None:
    """Larger random weights than HF's init (std 0.02), so attention is far from uniform."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if not any(s in name for s in skip):
                p.add_(torch.randn_like(p) * std)
        for name, b in model.named_buffers():
            if name.endswith("final_logits_bias"):
                b.add_(torch.randn_like(b) * std)


def save(model, tok: Tokenizer, out: Path) -> Path:
    model.eval()
    model.save_pretrained(str(out), safe_serialization=True)
    tok.save(str(out / "tokenizer.json"))
    return out


BERT_TEMPLATE = ("[CLS] $A [SEP]", "[CLS] $A [SEP] $B:1 [SEP]:1")
ROBERTA_TEMPLATE = ("<s> $A </s>", "<s> $A </s> </s> $B </s>")


def make_encoder(model_type: str, out: Path, seed: int = 0, **overrides) -> tuple[torch.nn.Module, Path]:
    """A random bert / roberta / xlm-roberta / distilbert in `out`; returns (the HF model, out)."""
    import transformers as tf

    torch.manual_seed(seed)
    if model_type == "bert":
        tok = word_level(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "[UNK]", BERT_TEMPLATE)
        kw = dict(hidden_size=30, num_attention_heads=5, num_hidden_layers=2, intermediate_size=37,
                  vocab_size=tok.get_vocab_size() + 3, max_position_embeddings=40, type_vocab_size=2, pad_token_id=0)
        cfg, cls = tf.BertConfig(**{**kw, **overrides}), tf.BertModel
    elif model_type in ("roberta", "xlm-roberta"):
        tok = word_level(["<s>", "<pad>", "</s>", "<unk>"], "<unk>", ROBERTA_TEMPLATE)
        kw = dict(hidden_size=21, num_attention_heads=3, num_hidden_layers=2, intermediate_size=29,
                  vocab_size=tok.get_vocab_size(), max_position_embeddings=42, type_vocab_size=1, pad_token_id=1,
                  bos_token_id=0, eos_token_id=2, hidden_act="gelu_new")
        Cfg, cls = ((tf.RobertaConfig, tf.RobertaModel) if model_type == "roberta"
                    else (tf.XLMRobertaConfig, tf.XLMRobertaModel))
        cfg = Cfg(**{**kw, **overrides})
    else:
        tok = word_level(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "[UNK]", BERT_TEMPLATE)
        kw = dict(dim=30, n_heads=5, n_layers=2, hidden_dim=41, vocab_size=tok.get_vocab_size(),
                  max_position_embeddings=40, sinusoidal_pos_embds=True, activation="gelu")
        cfg, cls = tf.DistilBertConfig(**{**kw, **overrides}), tf.DistilBertModel
    model = cls(cfg, add_pooling_layer=False) if model_type != "distilbert" else cls(cfg)
    perturb(model, skip=("position_embeddings",) if model_type == "distilbert" else ())
    return model.eval(), save(model, tok, out)


def make_gpt2(out: Path, seed: int = 0, **overrides) -> tuple[torch.nn.Module, Path]:
    import transformers as tf

    torch.manual_seed(seed)
    tok = byte_bpe(300)
    kw = dict(n_embd=30, n_head=5, n_layer=3, n_positions=48, vocab_size=tok.get_vocab_size() + 4, n_inner=None,
              bos_token_id=0, eos_token_id=0)
    model = tf.GPT2LMHeadModel(tf.GPT2Config(**{**kw, **overrides}))
    perturb(model)
    return model.eval(), save(model, tok, out)


def make_bart(out: Path, seed: int = 0, **overrides) -> tuple[torch.nn.Module, Path]:
    import transformers as tf

    torch.manual_seed(seed)
    tok = word_level(["<s>", "<pad>", "</s>", "<unk>"], "<unk>", ("<s> $A </s>", "<s> $A </s> </s> $B </s>"))
    kw = dict(d_model=21, encoder_attention_heads=3, decoder_attention_heads=3, encoder_layers=2, decoder_layers=2,
              encoder_ffn_dim=33, decoder_ffn_dim=33, vocab_size=tok.get_vocab_size(), max_position_embeddings=40,
              pad_token_id=1, bos_token_id=0, eos_token_id=2, decoder_start_token_id=2, scale_embedding=True,
              forced_bos_token_id=None, forced_eos_token_id=None)
    model = tf.BartForConditionalGeneration(tf.BartConfig(**{**kw, **overrides}))
    perturb(model, std=0.3)
    with torch.no_grad():
        model.final_logits_bias[0, 2] -= 3.0  # </s> less likely first: greedy decoding runs a few steps
    return model.eval(), save(model, tok, out)


def make_marian(out: Path, seed: int = 0, **overrides) -> tuple[torch.nn.Module, Path]:
    import transformers as tf

    torch.manual_seed(seed)
    tok = word_level(["</s>", "<unk>", "<pad>"], "<unk>", ("$A </s>", "$A </s> $B </s>"))
    kw = dict(d_model=30, encoder_attention_heads=5, decoder_attention_heads=5, encoder_layers=2, decoder_layers=2,
              encoder_ffn_dim=27, decoder_ffn_dim=27, vocab_size=tok.get_vocab_size(), max_position_embeddings=40,
              pad_token_id=2, eos_token_id=0, decoder_start_token_id=2, activation_function="swish",
              scale_embedding=True, forced_eos_token_id=None)
    model = tf.MarianMTModel(tf.MarianConfig(**{**kw, **overrides}))
    perturb(model, std=0.3, skip=("embed_positions",))
    return model.eval(), save(model, tok, out)
