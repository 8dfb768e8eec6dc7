#!/usr/bin/python3
"""tiny-cross-encoder.py makes the tests' tiny cross-encoder.

The real cross-encoder (cross-encoder/ms-marco-MiniLM-L6-v2) is a BERT
sequence classifier with one label and a WordPiece tokenizer; the tests have
no network, so they score with a model of the same architecture and the same
tokenizer type made here: BertForSequenceClassification with 2 layers,
hidden size 32, 4 heads, random weights and a small vocabulary built from
the lab's own texts. It writes, into the folder given:

  config.json, tokenizer.json, tokenizer_config.json,
  special_tokens_map.json, vocab.txt    the files transformers.js reads, in
                                        the real model's formats
  onnx/model.onnx                       the model, exported by torch.onnx with
                                        the input and output names
                                        transformers.js feeds (input_ids,
                                        attention_mask, token_type_ids ->
                                        logits)
  onnx/model_int8.onnx                  the same graph with each MatMul
                                        weight stored as 8-bit integers and
                                        a scale (DequantizeLinear): quantized
                                        weights, whose logits differ
  ragagent-model.json                   the manifest (ragagent-model/1) a
                                        loopback test host serves: model id,
                                        revision, licence, each file's sha256
                                        and size, the two sets of weights
  expected.json                         what PyTorch computes: for each of
                                        the lab's 16 cross-encoder calls (in
                                        the bundled recording's order, each
                                        batched with padding as the seed
                                        does) and for a few fixed pairs that
                                        reach the tokenizer's corners, the
                                        token ids and the raw logits

There is no Python transformers package on these machines, so BERT is
written out in plain torch (the layout and arithmetic of Hugging Face's
BertForSequenceClassification in eval mode: embeddings + LayerNorm(1e-12),
post-norm attention blocks with the additive finfo.min mask, exact erf
GELU, tanh pooler over [CLS], a linear head), and the tokenizer
(BertNormalizer, BertPreTokenizer, WordPiece, the [CLS] A [SEP] B [SEP]
template) is written out below, in the order the tokenizers library
applies it. The tests check transformers.js against both: the token ids
must be equal and the logits within 1e-4.

Run with Debian's python3-torch and python3-onnx:
  /usr/bin/python3 scripts/tiny-cross-encoder.py tests/fixtures/tiny-cross-encoder
It is deterministic: the same torch gives the same files.
"""
import collections
import hashlib
import json
import math
import os
import sys
import unicodedata

import onnx
import onnx.numpy_helper
import torch
from torch import nn
from torch.nn import functional as F

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 20261130
MODEL_ID = "ragagent-test/tiny-cross-encoder"
REVISION = "fixture-1"
LICENSE = "CC0-1.0"
HIDDEN, LAYERS, HEADS, INTERMEDIATE, POSITIONS = 32, 2, 4, 64, 512
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_CHARS_PER_WORD = 100

# Pairs beyond the lab's that reach the tokenizer's corners: capitals and
# accents (stripped), CJK characters (split, one known, one not), control
# characters and odd spaces, punctuation runs, a word that is not in the
# vocabulary (WordPiece pieces), a character it cannot match (the whole word
# becomes [UNK]) and a word longer than 100 characters ([UNK]).
EXTRA_PAIRS = [
    ("Does Path.write_text OVERWRITE an existing file?", "Yes: an existing file is overwritten, and the method returns the number of characters written."),
    ("Café naïve résumé: does json.dumps keep accents?", "Setting ensure_ascii=False leaves non-ASCII characters like é in that string."),
    ("中文 text with 字 in pathlib?", "Path.read_text(encoding=None) opens a file\u00a0and\tcloses it.\u200b"),
    ("What about zzqxv and unknowable blorfing?", "Unrecognisable wordpieces: pathlibish writability 🙂smile."),
    ("A long word " + "a" * 101 + " here", "(((nested))) -- punctuation!!! ... \"quoted\" [brackets] {braces} <angles> $100 ^up ~tilde `tick` |pipe|"),
]


def is_whitespace(c):
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def is_control(c):
    if c in "\t\n\r":
        return False
    return unicodedata.category(c).startswith("C")


def is_punctuation(c):
    o = ord(c)
    if 33 <= o <= 47 or 58 <= o <= 64 or 91 <= o <= 96 or 123 <= o <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def is_chinese(c):
    o = ord(c)
    return (0x4E00 <= o <= 0x9FFF or 0x3400 <= o <= 0x4DBF or 0x20000 <= o <= 0x2A6DF or 0x2A700 <= o <= 0x2B73F
            or 0x2B740 <= o <= 0x2B81F or 0x2B920 <= o <= 0x2CEAF or 0xF900 <= o <= 0xFAFF or 0x2F800 <= o <= 0x2FA1F)


def normalize(text):
    """BertNormalizer(clean_text, handle_chinese_chars, strip_accents=None -> lowercase, lowercase)."""
    out = []
    for c in text:
        if c == "\0" or c == "\ufffd" or is_control(c):
            continue
        out.append(" " if is_whitespace(c) else c)
    text = "".join(f" {c} " if is_chinese(c) else c for c in out)
    text = "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")
    return text.lower()


def pre_tokenize(text):
    """BertPreTokenizer: split on whitespace, each punctuation character its own word."""
    words, cur = [], []
    for c in text:
        if c.isspace():
            if cur:
                words.append("".join(cur))
                cur = []
        elif is_punctuation(c):
            if cur:
                words.append("".join(cur))
                cur = []
            words.append(c)
        else:
            cur.append(c)
    if cur:
        words.append("".join(cur))
    return words


def wordpiece(word, vocab):
    if len(word) > MAX_CHARS_PER_WORD:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end, found = len(word), None
        while start < end:
            sub = word[start:end] if start == 0 else "##" + word[start:end]
            if sub in vocab:
                found = sub
                break
            end -= 1
        if found is None:
            return ["[UNK]"]
        pieces.append(found)
        start = end
    return pieces


def words_of(text):
    return pre_tokenize(normalize(text))


def build_vocab(texts):
    """Specials, then every character seen (and its ## form for letters and
    digits), then words seen at least twice, then for longer words seen
    once a head and a ## tail, so WordPiece has pieces to choose from. Left
    out on purpose: one CJK character and the emoji (words holding them
    become [UNK])."""
    counts = collections.Counter(w for t in texts for w in words_of(t))
    chars = sorted({c for w in counts for c in w} - {"文", "🙂"})
    vocab = list(SPECIALS)
    vocab += chars
    vocab += ["##" + c for c in chars if c.isalnum() and c != "字"]
    vocab += sorted(w for w, n in counts.items() if n >= 2 and len(w) > 1 and len(w) <= MAX_CHARS_PER_WORD and "🙂" not in w and "文" not in w)
    for w, n in sorted(counts.items()):
        if n == 1 and 5 <= len(w) <= 30 and w.isalpha() and w.isascii():
            vocab += [w[: len(w) // 2], "##" + w[len(w) // 2:]]
    seen, out = set(), []
    for t in vocab:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return {t: i for i, t in enumerate(out)}


def encode_pair(question, passage, vocab):
    a = [vocab[p] for w in words_of(question) for p in wordpiece(w, vocab)]
    b = [vocab[p] for w in words_of(passage) for p in wordpiece(w, vocab)]
    ids = [vocab["[CLS]"]] + a + [vocab["[SEP]"]] + b + [vocab["[SEP]"]]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, types


def batch(pairs, vocab):
    """The seed's tokenizer call: padding=True (to the longest, right, [PAD]), no truncation."""
    enc = [encode_pair(q, p, vocab) for q, p in pairs]
    n = max(len(ids) for ids, _ in enc)
    if n > POSITIONS:
        raise ValueError("pair_exceeds_model_context")
    ids = [e[0] + [vocab["[PAD]"]] * (n - len(e[0])) for e in enc]
    types = [e[1] + [0] * (n - len(e[1])) for e in enc]
    mask = [[1] * len(e[0]) + [0] * (n - len(e[0])) for e in enc]
    return torch.tensor(ids), torch.tensor(mask), torch.tensor(types)


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.query, self.key, self.value = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, HIDDEN)
        self.attn_out, self.attn_norm = nn.Linear(HIDDEN, HIDDEN), nn.LayerNorm(HIDDEN, eps=1e-12)
        self.intermediate, self.out, self.out_norm = nn.Linear(HIDDEN, INTERMEDIATE), nn.Linear(INTERMEDIATE, HIDDEN), nn.LayerNorm(HIDDEN, eps=1e-12)

    def forward(self, x, mask):
        head = HIDDEN // HEADS

        def heads(t):
            return t.reshape(t.shape[0], t.shape[1], HEADS, head).transpose(1, 2)

        q, k, v = heads(self.query(x)), heads(self.key(x)), heads(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(head) + mask
        ctx = torch.matmul(scores.softmax(-1), v).transpose(1, 2)
        ctx = ctx.reshape(ctx.shape[0], ctx.shape[1], HIDDEN)
        x = self.attn_norm(self.attn_out(ctx) + x)
        return self.out_norm(self.out(F.gelu(self.intermediate(x))) + x)


class Bert(nn.Module):
    def __init__(self, vocab_size):
        super().__init__()
        self.words, self.positions, self.types = nn.Embedding(vocab_size, HIDDEN), nn.Embedding(POSITIONS, HIDDEN), nn.Embedding(2, HIDDEN)
        self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
        self.layers = nn.ModuleList(Layer() for _ in range(LAYERS))
        self.pooler, self.classifier = nn.Linear(HIDDEN, HIDDEN), nn.Linear(HIDDEN, 1)

    def forward(self, input_ids, attention_mask, token_type_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.norm(self.words(input_ids) + self.types(token_type_ids) + self.positions(positions))
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        for layer in self.layers:
            x = layer(x, mask)
        return self.classifier(torch.tanh(self.pooler(x[:, 0])))


def init(model):
    """Random weights large enough that logits spread over several units, so
    a 1e-4 tolerance and the orders they give mean something."""
    g = torch.Generator().manual_seed(SEED)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g) if name.endswith("weight") else 0.1 * torch.randn(p.shape, generator=g))
            elif name.startswith("classifier"):
                p.copy_(1.5 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.25 * torch.randn(p.shape, generator=g))


def quantize_weights(src, dst):
    """Stores every 2-D float MatMul weight as int8 with one scale
    (symmetric, per tensor), dequantized in the graph before its MatMul."""
    m = onnx.load(src)
    g = m.graph
    inits = {t.name: t for t in g.initializer}
    weights = sorted({n.input[1] for n in g.node if n.op_type == "MatMul" and n.input[1] in inits and len(inits[n.input[1]].dims) == 2})
    nodes = []
    for name in weights:
        w = onnx.numpy_helper.to_array(inits[name])
        scale = float(abs(w).max()) / 127.0
        q = (w / scale).round().clip(-127, 127).astype("int8")
        g.initializer.remove(inits[name])
        g.initializer.extend([onnx.numpy_helper.from_array(q, name + "_int8"),
                              onnx.helper.make_tensor(name + "_scale", onnx.TensorProto.FLOAT, [], [scale]),
                              onnx.helper.make_tensor(name + "_zero", onnx.TensorProto.INT8, [], [0])])
        nodes.append(onnx.helper.make_node("DequantizeLinear", [name + "_int8", name + "_scale", name + "_zero"], [name]))
    rest = list(g.node)
    del g.node[:]
    g.node.extend(nodes + rest)
    onnx.checker.check_model(m)
    onnx.save(m, dst)


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def write_json(path, value):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, indent=2, ensure_ascii=False)
        f.write("\n")


def tokenizer_json(vocab):
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False, "normalized": False, "special": True} for t in SPECIALS]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
            "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [vocab["[CLS]"]], "tokens": ["[CLS]"]}, "[SEP]": {"id": "[SEP]", "ids": [vocab["[SEP]"]], "tokens": ["[SEP]"]}},
        },
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": MAX_CHARS_PER_WORD, "vocab": vocab},
    }


def main(out):
    torch.manual_seed(SEED)
    torch.set_num_threads(1)
    with open(os.path.join(ROOT, "recordings", "rerank-cross-encoder.json"), encoding="utf-8") as f:
        recording = json.load(f)
    calls = [{"id": t["id"], "question": t["question"], "texts": [c["text"] for c in t["exchanges"][0]["request"]["candidates"]]}
             for t in recording["trials"]]
    texts = [c["question"] for c in calls] + [t for c in calls for t in c["texts"]] + [x for p in EXTRA_PAIRS for x in p]
    vocab = build_vocab(texts)
    model = Bert(len(vocab)).eval()
    init(model)

    os.makedirs(os.path.join(out, "onnx"), exist_ok=True)
    write_json(os.path.join(out, "config.json"), {
        "architectures": ["BertForSequenceClassification"], "attention_probs_dropout_prob": 0.1, "classifier_dropout": None,
        "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": HIDDEN, "id2label": {"0": "LABEL_0"},
        "initializer_range": 0.02, "intermediate_size": INTERMEDIATE, "label2id": {"LABEL_0": 0}, "layer_norm_eps": 1e-12,
        "max_position_embeddings": POSITIONS, "model_type": "bert", "num_attention_heads": HEADS, "num_hidden_layers": LAYERS,
        "pad_token_id": vocab["[PAD]"], "position_embedding_type": "absolute", "type_vocab_size": 2, "vocab_size": len(vocab),
    })
    write_json(os.path.join(out, "tokenizer_config.json"), {
        "clean_up_tokenization_spaces": True, "cls_token": "[CLS]", "do_basic_tokenize": True, "do_lower_case": True,
        "mask_token": "[MASK]", "model_max_length": POSITIONS, "never_split": None, "pad_token": "[PAD]", "sep_token": "[SEP]",
        "strip_accents": None, "tokenize_chinese_chars": True, "tokenizer_class": "BertTokenizer", "unk_token": "[UNK]",
    })
    write_json(os.path.join(out, "special_tokens_map.json"), {"cls_token": "[CLS]", "mask_token": "[MASK]", "pad_token": "[PAD]", "sep_token": "[SEP]", "unk_token": "[UNK]"})
    write_json(os.path.join(out, "tokenizer.json"), tokenizer_json(vocab))
    with open(os.path.join(out, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in vocab))

    example = batch(EXTRA_PAIRS[:2], vocab)
    path = os.path.join(out, "onnx", "model.onnx")
    torch.onnx.export(model, example, path, input_names=["input_ids", "attention_mask", "token_type_ids"], output_names=["logits"],
                      dynamic_axes={"input_ids": {0: "batch_size", 1: "sequence_length"}, "attention_mask": {0: "batch_size", 1: "sequence_length"},
                                    "token_type_ids": {0: "batch_size", 1: "sequence_length"}, "logits": {0: "batch_size"}},
                      opset_version=14, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    quantize_weights(path, os.path.join(out, "onnx", "model_int8.onnx"))

    def score(pairs):
        ids, mask, types = batch(pairs, vocab)
        with torch.inference_mode():
            logits = model(ids, mask, types).reshape(-1).tolist()
        return ids.tolist(), types.tolist(), logits

    expected = {"model": MODEL_ID, "revision": REVISION, "torch": torch.__version__, "onnx": onnx.__version__,
                "note": "Raw logits PyTorch computes for the lab's 16 cross-encoder calls (each batched with padding, as the seed does) and for fixed pairs one at a time.",
                "calls": [], "pairs": []}
    for c in calls:
        ids, types, logits = score([(c["question"], t) for t in c["texts"]])
        expected["calls"].append({"id": c["id"], "input_ids": ids, "token_type_ids": types, "logits": logits})
    for q, p in EXTRA_PAIRS:
        ids, types, logits = score([(q, p)])
        expected["pairs"].append({"question": q, "passage": p, "input_ids": ids[0], "token_type_ids": types[0], "logit": logits[0]})
    write_json(os.path.join(out, "expected.json"), expected)

    def pinned(f):
        return {"path": f, "sha256": sha256(os.path.join(out, f)), "bytes": os.path.getsize(os.path.join(out, f)), "approximate": False}

    write_json(os.path.join(out, "ragagent-model.json"), {
        "format": "ragagent-model/1", "model": MODEL_ID, "revision": REVISION, "license": LICENSE,
        "description": "A tiny BertForSequenceClassification with random weights, for tests: its scores mean nothing.",
        "files": [pinned(f) for f in ["config.json", "tokenizer.json", "tokenizer_config.json"]],
        "weights": [{"id": "fp32", "label": "full precision (fp32)", **pinned("onnx/model.onnx")},
                    {"id": "int8", "label": "8-bit quantized weights (the logits change)", **pinned("onnx/model_int8.onnx")}],
    })
    print(f"{out}: vocabulary {len(vocab)}, onnx {os.path.getsize(path)} bytes, {len(calls)} calls and {len(EXTRA_PAIRS)} pairs scored")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny-cross-encoder.py OUTPUT_DIR")
    main(sys.argv[1])
