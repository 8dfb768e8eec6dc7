#!/usr/bin/python3
"""tiny-embedder.py makes the tests' tiny sentence-embedding model.

A retrieval configuration's vector branch embeds passages and questions
with a sentence-embedding model (a BERT encoder, mean pooling over the
tokens, L2 normalisation, as all-MiniLM-L6-v2 does) run by transformers.js
(lab/embed.mjs). The tests have no network, so they embed with a model of
the same architecture and tokenizer type made here: a BertModel with 2
layers, hidden size 32, 4 heads, 128 positions (so a long passage is
truncated, as the real models truncate at theirs), seeded random weights,
and a WordPiece vocabulary of about 1,200 pieces: the specials, the ASCII
characters (and the ## form of each letter and digit, so any ASCII word
splits into known pieces), common English suffixes as ## pieces, and the
1,000 commonest words of the two bundled packs' passages (Python 3.11 and
SQLite 3.40 documentation), which cover about 86% of their words whole.
Its vectors mean nothing: the weights are random.

It writes, into the folder given:

  config.json, tokenizer.json, tokenizer_config.json,
  special_tokens_map.json, vocab.txt    the files transformers.js reads, in
                                        the real models' formats
  onnx/model.onnx                       the encoder, exported by torch.onnx
                                        with the names transformers.js's
                                        feature-extraction pipeline feeds
                                        (input_ids, attention_mask,
                                        token_type_ids -> last_hidden_state)
  ragagent-model.json                   the manifest (ragagent-model/1):
                                        model id, revision, licence, each
                                        file's sha256 and size, the weights
  expected.json                         what PyTorch computes for a few
                                        texts, each on its own (no padding):
                                        the token ids (truncated to 128) and
                                        the mean-pooled, L2-normalised
                                        sentence vector

The BERT layers and the tokenizer (BertNormalizer, BertPreTokenizer,
WordPiece, the tokenizer.json writer) are the tiny cross-encoder's
(scripts/tiny-cross-encoder.py, imported), so the two fixtures share one
reading of Hugging Face's arithmetic; only the head differs (none here:
the last hidden state is the output) and the vocabulary.

Run with Debian's python3-torch and python3-onnx (make tiny-embedder):
  /usr/bin/python3 scripts/tiny-embedder.py tests/fixtures/tiny-embedder
It is deterministic: the same torch and the same packs give the same files.
"""
import collections
import gzip
import importlib.util
import json
import os
import sqlite3
import sys
import tempfile

import onnx
import torch
from torch import nn
from torch.nn import functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_spec = importlib.util.spec_from_file_location("tiny_cross_encoder", os.path.join(ROOT, "scripts", "tiny-cross-encoder.py"))
tce = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tce)

SEED = 20261202
MODEL_ID = "ragagent-test/tiny-embedder"
REVISION = "fixture-1"
LICENSE = "CC0-1.0"
HIDDEN, LAYERS, HEADS, INTERMEDIATE = tce.HIDDEN, tce.LAYERS, tce.HEADS, tce.INTERMEDIATE  # tce.Layer reads these
POSITIONS = 128
WORDS = 1000
PACKS = ["python-3.11", "sqlite-3.40"]
SUFFIXES = ["s", "es", "ed", "ing", "er", "ers", "ly", "tion", "tions", "able", "ment", "ness", "ity", "al", "ize", "ise", "ful", "less", "ous", "ive", "est"]

# Texts whose vectors expected.json holds: ordinary documentation
# sentences, a question, the tokenizer's corners (capitals and accents,
# CJK, an emoji and a word no piece matches, control characters, a word
# over 100 characters), the empty string, and a passage longer than the
# model's 128 positions (truncated: only its first 126 pieces count).
TEXTS = [
    "Path.read_text(encoding=None, errors=None) opens a file, returns its text as a string and closes the file.",
    "How do I write a UTF-8 file with pathlib?",
    "json.dumps(obj, ensure_ascii=True) returns a JSON string.",
    "The sqlite3 module provides an SQL interface compliant with the DB-API 2.0 specification.",
    "CREATE INDEX creates a new index on the named table.",
    "Café naïve RÉSUMÉ: unknowable blorfing writability",
    "中文 text 🙂smile\u00a0and\ttabs\u200b",
    "A long word " + "a" * 101 + " here",
    "",
    " ".join(["Each call to the function returns a new list of the values in the table, sorted by key."] * 12),
]


def pack_texts():
    """Every passage's text of the bundled packs, in id order."""
    for pack in PACKS:
        with gzip.open(os.path.join(ROOT, "fixtures", "packs", pack, "passages.sqlite.gz")) as f:
            data = f.read()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "passages.sqlite")
            with open(path, "wb") as f:
                f.write(data)
            db = sqlite3.connect(path)
            try:
                for (text,) in db.execute("SELECT c1 FROM passages_content ORDER BY id"):
                    yield text
            finally:
                db.close()


def build_vocab():
    """Specials, the printable ASCII characters, ## letters and digits, ##
    suffixes, then the commonest words of the packs (ties by word), up to
    WORDS of them."""
    counts = collections.Counter(w for t in pack_texts() for w in tce.words_of(t))
    chars = [chr(c) for c in range(33, 127) if not ("A" <= chr(c) <= "Z")]  # the normalizer lowercases
    vocab = list(tce.SPECIALS) + chars + ["##" + c for c in chars if c.isalnum()] + ["##" + s for s in SUFFIXES]
    common = sorted((w for w in counts if len(w) > 1 and w.isascii() and len(w) <= 30), key=lambda w: (-counts[w], w))
    vocab += common[:WORDS]
    seen, out = set(), []
    for t in vocab:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return {t: i for i, t in enumerate(out)}


def encode(text, vocab):
    """The feature-extraction pipeline's tokenizer call for one text: [CLS] pieces [SEP], truncated to POSITIONS."""
    pieces = [vocab[p] for w in tce.words_of(text) for p in tce.wordpiece(w, vocab)]
    return [vocab["[CLS]"]] + pieces[: POSITIONS - 2] + [vocab["[SEP]"]]


class Encoder(nn.Module):
    """BertModel without its pooler: embeddings + LayerNorm(1e-12), the
    cross-encoder's post-norm layers, the last hidden state out."""

    def __init__(self, vocab_size):
        super().__init__()
        self.words, self.positions, self.types = nn.Embedding(vocab_size, HIDDEN), nn.Embedding(POSITIONS, HIDDEN), nn.Embedding(2, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(tce.Layer() for _ in range(LAYERS))

    def forward(self, input_ids, attention_mask, token_type_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.words(input_ids) + self.types(token_type_ids) + self.positions(positions))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return x


def init(model):
    """Seeded random weights, large enough that different texts get clearly different vectors."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g) if name.endswith("weight") else 0.1 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.25 * torch.randn(p.shape, generator=g))


def sentence_vector(model, ids):
    """sentence-transformers' mean pooling (sum over the mask / max(count, 1e-9)), then F.normalize (L2, eps 1e-12)."""
    input_ids = torch.tensor([ids])
    mask = torch.ones_like(input_ids)
    with torch.inference_mode():
        h = model(input_ids, mask, torch.zeros_like(input_ids))
        m = mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)[0].tolist()


def main(out):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    vocab = build_vocab()
    model = Encoder(len(vocab)).eval()
    init(model)

    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    tce.write_json(os.path.join(out, "config.json"), {
        "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
        "hidden_size": HIDDEN, "initializer_range": 0.02, "intermediate_size": INTERMEDIATE, "layer_norm_eps": 1e-12,
        "max_position_embeddings": POSITIONS, "model_type": "bert", "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "pad_token_id": vocab["[PAD]"], "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": len(vocab),
    })
    tce.write_json(os.path.join(out, "tokenizer_config.json"), {
        "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "do_basic_tokenize": True, "do_lower_case": True,
        "mask_token": "[MASK]", "model_max_length": POSITIONS, "never_split": None, "pad_token": "[PAD]", "sep_token": "[SEP]",
        "strip_accents": None, "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]",
    })
    tce.write_json(os.path.join(out, "special_tokens_map.json"), {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]", "unk_token": "[UNK]"})
    tce.write_json(os.path.join(out, "tokenizer.json"), tce.tokenizer_json(vocab))
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in vocab))

    example = [torch.tensor([encode(TEXTS[0], vocab)])]
    example += [torch.ones_like(example[0]), torch.zeros_like(example[0])]
    path = os.path.join(out, "onnx", "model.onnx")
    axes = {0: "batch_size", 1: "sequence_length"}
    torch.onnx.export(model, tuple(example), path, input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": axes, "attention_mask": axes, "token_type_ids": axes, "last_hidden_state": axes},
                      opset_version=14, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))

    expected = {"model": MODEL_ID, "revision": REVISION, "torch": torch.__version__, "onnx": onnx.__version__,
                "dimensions": HIDDEN, "max_tokens": POSITIONS, "pooling": "mean", "normalize": True,
                "note": "What PyTorch computes for each text on its own (no padding): the token ids, truncated to max_tokens, and the mean-pooled, L2-normalised last hidden state.",
                "texts": []}
    for text in TEXTS:
        ids = encode(text, vocab)
        expected["texts"].append({"text": text, "input_ids": ids, "vector": sentence_vector(model, ids)})
    tce.write_json(os.path.join(out, "expected.json"), expected)

    def pinned(f):
        return {"path": f, "sha256": tce.sha256(os.path.join(out, f)), "bytes": os.path.getsize(os.path.join(out, f)), "approximate": False}

    tce.write_json(os.path.join(out, "ragagent-model.json"), {
        "format": "ragagent-model/1", "model": MODEL_ID, "revision": REVISION, "license": LICENSE,
        "description": "A tiny BERT sentence encoder (mean pooling, L2-normalised) with random weights, for tests: its vectors mean nothing.",
        "files": [pinned(f) for f in ["config.json", "tokenizer.json", "tokenizer_config.json"]],
        "weights": [{"id": "fp32", "label": "full precision (fp32)", **pinned("onnx/model.onnx")}],
    })
    print(f"{out}: vocabulary {len(vocab)}, onnx {os.path.getsize(path)} bytes, {len(TEXTS)} texts embedded")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny-embedder.py OUTPUT_DIR")
    main(sys.argv[1])
