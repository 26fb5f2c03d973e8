"""The prompt the reference clients of benchmarks/bench_side_by_side.py send (raw httpx, AIPerf): one
text, so a case's clients send the same size, and a word-level tokeniser over its words for AIPerf, which
counts tokens with a Hugging Face tokeniser and has none offline. Sizes are in the simulator's count,
ceil(chars / 4)."""

from __future__ import annotations

SENTENCE = "Summarise the state of the task board in one sentence."
WORDS = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor "

# run by the peers' venv's python with the folder to write: a tokenizer.json AIPerf's --tokenizer loads
TOKENIZER_SCRIPT = f"""
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
vocab = {{w: i for i, w in enumerate(["[UNK]", *{WORDS.split()!r}])}}
tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(sys.argv[1])
"""


def prompt_text(tokens: int) -> str:
    """The fixed sentence (0 tokens asked), or `tokens` tokens of words at 4 characters a token."""
    chars = 4 * tokens
    return (WORDS * (chars // len(WORDS) + 1))[:chars] if tokens else SENTENCE
