#!/usr/bin/python3
"""Writes tiny-qwen3.gguf: a one-layer model whose greedy replies are scripted, for pincer's tests.

Usage: PYTHONPATH=<llama.cpp>/gguf-py write-tiny-model.py <llama.cpp source dir> <out.gguf>

It has Qwen2's real vocabulary (models/ggml-vocab-qwen2.gguf, with Qwen3's <tool_call>, <think> and
<tool_response> tokens put in the padding slots where Qwen3 has them) and Qwen3-0.6B's real chat
template, so llama-server's own template handling, tool-call parsing and reasoning extraction run.

How it decides: the logits depend on the current token (a bigram table: every scripted reply is a
chain of token ids, each id used once, so greedy decoding follows it; the cut call alone shares
the read call's ids and turns off at its path's quote) plus which trigger tokens
occur anywhere earlier in the context (one attention head each: a constant query, a key only on
its trigger, so the head attends to the trigger when present and reads a one-hot value from it).
The prompt always ends with "<|im_start|>assistant\\n", and after that "\\n" the strongest trigger
present picks the reply:

  <tool_response> in the context  -> AFTER_TOOL (the answer after a tool result)
  " avalanche" in a user message  -> the read_file call below, but its path never ends (cut at
                                     max_tokens mid-call)
  " pineapple"                    -> <tool_call>{"name":"read_file","arguments":{"path":"notes.txt"}}
  " doctor" (`pincer doctor`)     -> the same call, but to list_dir without arguments
  " ponder"                       -> a <think> block, then an answer
  " chatter"                      -> babble that never ends
  none of them                    -> DEFAULT
"""

import sys
from pathlib import Path

import numpy as np

import gguf

DEFAULT = "Hello from this tiny model!"
AFTER_TOOL = "I read the file for you."
# Token 198 ("\n") is where every reply starts, so no reply can contain it: a newline after a
# special token is "\n\n" here, and the think block has none around it (parsers trim anyway).
READ_CALL = '\n\n{"name":"read_file","arguments":{"path":"notes.txt"}}\n'
THINK = "The user wants a careful answer;\n"
THINK_ANSWER = "Done thinking, here it is"
BABBLE = "Here goes:"
BABBLE_LOOP = " la di da"
# The cut call is the read call until its path's opening quote, where it turns into this loop.
CUT_PATH_LOOP = "lo mi fa "
# `pincer doctor`'s probe asks for list_dir without arguments: the read call turns after "name".
PROBE_CALL = 'list_dir", "arguments":{\n}}\n'

# Qwen3's ids for its added tokens (type USER_DEFINED, as in Qwen3's own GGUF files).
ADDED = {151657: "<tool_call>", 151658: "</tool_call>", 151665: "<tool_response>",
         151666: "</tool_response>", 151667: "<think>", 151668: "</think>"}
IM_END, NEWLINE = 151645, 198

N_EMBD, N_HEAD, N_FF = 128, 8, 16
HEAD_DIM = N_EMBD // N_HEAD
# The query/key pair sits in each head's last rotary pair; with this base RoPE turns it by less
# than 1e-12 rad at any position, so attention to a trigger does not depend on where it is.
FREQ_BASE = 1e30
CHAIN, BRANCH = 100.0, 10.0  # logit weights: follow the chain; the reply when no trigger is present


def byte_encoder() -> dict[int, str]:
    """GPT-2's byte-to-character map, which the vocabulary's token strings are written in."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class Segmenter:
    """Splits text into vocabulary tokens so that no token id is used twice across all chains."""

    def __init__(self, tokens: list[str], types: list[int], reserved: set[int]):
        self.ids = {t: i for i, t in enumerate(tokens) if types[i] == gguf.TokenType.NORMAL}
        self.longest = max(len(t) for t in self.ids)
        self.used = set(reserved)
        self.enc = byte_encoder()

    def split(self, text: str) -> list[int]:
        target = "".join(self.enc[b] for b in text.encode())
        self.budget = 100_000  # backtracking steps before giving up
        found = self._search(target, 0, [])
        if found is None:
            sys.exit(f"no segmentation with unused tokens for {text!r}")
        self.used.update(found)
        return found

    def _search(self, target: str, at: int, taken: list[int]) -> list[int] | None:
        if at == len(target):
            return taken
        self.budget -= 1
        if self.budget < 0:
            return None
        for end in range(min(len(target), at + self.longest), at, -1):
            token = self.ids.get(target[at:end])
            if token is None or token in self.used or token in taken:
                continue
            found = self._search(target, end, taken + [token])
            if found is not None:
                return found
        return None


def main(source: Path, out: Path) -> None:
    vocab = gguf.GGUFReader(source / "ggml-vocab-qwen2.gguf")
    tokens = list(vocab.fields["tokenizer.ggml.tokens"].contents())
    types = list(vocab.fields["tokenizer.ggml.token_type"].contents())
    merges = list(vocab.fields["tokenizer.ggml.merges"].contents())
    for token_id, text in ADDED.items():
        tokens[token_id] = text
        types[token_id] = gguf.TokenType.USER_DEFINED
    ids = {t: i for i, t in enumerate(tokens)}
    trigger_words = ["<tool_response>", "Ġavalanche", "Ġpineapple", "Ġdoctor", "Ġponder", "Ġchatter"]
    triggers = [ids[w] for w in trigger_words]
    seg = Segmenter(tokens, types, {NEWLINE, IM_END, *triggers})

    def chain(*parts: str | int) -> list[int]:
        out: list[int] = []
        for part in parts:
            out += [part] if isinstance(part, int) else seg.split(part)
        return out

    tool_call, end_call = 151657, 151658
    think, end_think = 151667, 151668

    def looping(*parts: str | int) -> tuple[list[int], int]:
        """A chain whose last part repeats for ever: (tokens, index the last token leads back to)."""
        head = chain(*parts[:-1])
        return head + chain(parts[-1]), len(head)

    read_call = chain(tool_call, READ_CALL, end_call)
    # name: (tokens, what the last token leads to: IM_END, </tool_call>, or the index it loops to)
    replies = {
        "after_tool": (chain(AFTER_TOOL), IM_END),
        "read_call": (read_call, IM_END),
        "think": (chain(think, THINK, end_think, THINK_ANSWER), IM_END),
        "babble": looping(BABBLE, BABBLE_LOOP),
        "default": (chain(DEFAULT), IM_END),
        "cut_path": looping(CUT_PATH_LOOP),
        "probe_call": (chain(PROBE_CALL), end_call),
    }
    pieces = [tokens[t] for t in read_call]
    path_quote, name_quote = read_call[pieces.index("notes") - 1], read_call[pieces.index("read") - 1]
    for name, (toks, _) in replies.items():
        print(f"{name}: {[tokens[t] for t in toks]}")
    chain_tokens = [t for toks, _ in replies.values() for t in toks]  # the probe ends in </tool_call>
    assert len(set(chain_tokens)) == len(chain_tokens), "a token id is used twice"
    slot_tokens = [NEWLINE, *chain_tokens, *triggers]
    feature_base = len(slot_tokens)
    assert feature_base + len(triggers) <= N_EMBD, f"{feature_base + len(triggers)} slots > {N_EMBD}"
    slot = {t: i for i, t in enumerate(slot_tokens)}
    n_vocab = len(tokens)

    embd = np.zeros((n_vocab, N_EMBD), dtype=np.float32)
    for t, i in slot.items():
        embd[t, i] = 1.0
    logits = np.zeros((n_vocab, N_EMBD), dtype=np.float32)  # output.weight: row = next token

    def link(current: int, following: int) -> None:
        logits[following, slot[current]] = CHAIN

    for toks, after in replies.values():
        for a, b in zip(toks, toks[1:]):
            link(a, b)
        link(toks[-1], after if after in (IM_END, end_call) else toks[after])
    logits[replies["default"][0][0], slot[NEWLINE]] = BRANCH
    # After "\n" the strongest trigger present picks the reply (trigger order), over the default.
    starts = ["after_tool", "read_call", "read_call", "read_call", "think", "babble"]
    for rank, name in enumerate(starts):
        logits[replies[name][0][0], feature_base + rank] = BRANCH * (len(starts) + 1 - rank)
    # Where " avalanche" and " doctor" turn the read call into the endless path or the probe's call.
    for at, name, rank in [(path_quote, "cut_path", 1), (name_quote, "probe_call", 3)]:
        logits[replies[name][0][0], slot[at]] = CHAIN - 5
        logits[replies[name][0][0], feature_base + rank] = 10
    # Attention: head h looks for trigger h. RMSNorm scales a one-hot row to sqrt(N_EMBD).
    scale = np.sqrt(N_EMBD)
    wq = np.zeros((N_EMBD, N_EMBD), dtype=np.float32)
    bq = np.zeros(N_EMBD, dtype=np.float32)
    wk = np.zeros((N_EMBD, N_EMBD), dtype=np.float32)
    wv = np.zeros((N_EMBD, N_EMBD), dtype=np.float32)
    wo = np.zeros((N_EMBD, N_EMBD), dtype=np.float32)
    for h, trigger in enumerate(triggers):
        key_dim = h * HEAD_DIM + HEAD_DIM - 1
        bq[key_dim] = 40.0
        wk[key_dim, slot[trigger]] = 1.0  # score 40 * sqrt(128) / sqrt(16) = 113: the trigger wins
        wv[h * HEAD_DIM, slot[trigger]] = 1.0 / scale
        wo[feature_base + h, h * HEAD_DIM] = 1.0

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_name("pincer tiny qwen3 test model")
    writer.add_context_length(32768)
    writer.add_embedding_length(N_EMBD)
    writer.add_block_count(1)
    writer.add_feed_forward_length(N_FF)
    writer.add_head_count(N_HEAD)
    writer.add_head_count_kv(N_HEAD)
    writer.add_rope_dimension_count(HEAD_DIM)
    writer.add_rope_freq_base(FREQ_BASE)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(151643)
    writer.add_eos_token_id(IM_END)
    writer.add_pad_token_id(151643)
    writer.add_add_bos_token(False)
    writer.add_chat_template((source / "templates" / "Qwen-Qwen3-0.6B.jinja").read_text())

    f16 = lambda a: a.astype(np.float16)  # noqa: E731
    ones = np.ones(N_EMBD, dtype=np.float32)
    writer.add_tensor("token_embd.weight", f16(embd))
    writer.add_tensor("output_norm.weight", ones)
    writer.add_tensor("output.weight", f16(logits))
    writer.add_tensor("blk.0.attn_norm.weight", ones)
    writer.add_tensor("blk.0.attn_q.weight", wq)
    writer.add_tensor("blk.0.attn_q.bias", bq)
    writer.add_tensor("blk.0.attn_k.weight", wk)
    writer.add_tensor("blk.0.attn_v.weight", wv)
    writer.add_tensor("blk.0.attn_output.weight", wo)
    writer.add_tensor("blk.0.ffn_norm.weight", ones)
    writer.add_tensor("blk.0.ffn_gate.weight", np.zeros((N_FF, N_EMBD), dtype=np.float32))
    writer.add_tensor("blk.0.ffn_up.weight", np.zeros((N_FF, N_EMBD), dtype=np.float32))
    writer.add_tensor("blk.0.ffn_down.weight", np.zeros((N_EMBD, N_FF), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
