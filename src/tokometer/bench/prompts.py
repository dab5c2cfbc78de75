"""Prompts for benchmarking: a short one for decode, long ones of a chosen token count for TTFT.

Every prompt starts with a fresh random nonce so prefix caches miss (benchmarkers.md, (b)).
Lengths are set in words drawn from common English words that are single tokens, with a leading
space, in the usual BPE and SentencePiece vocabularies; the ratio of tokens to words is then
measured on the server's own count and corrected (`tokens_per_word`).
"""

from __future__ import annotations

import random

WORDS: tuple[str, ...] = tuple(
    """the of and to in is was for on that with as by at from his her they this which be are
    have had not but what all were when we there can an your one said each she do how their if
    will up other about out many then them these so some would make like him into time has look
    two more write go see number no way could people my than first water been call who oil its now
    find long down day did get come made may part over new sound take only little work know place
    year live me back give most very after thing our just name good sentence man think say great
    where help through much before line right too mean old any same tell boy follow came want show
    also around form three small set put end does another well large must big even such because
    turn here why ask went men read need land different home us move try kind hand picture again
    change off play spell air away animal house point page letter mother answer found study still
    learn should world high every near add food between own below country plant last school father
    keep tree never start city earth eye light thought head under story saw left few while along
    might close something seem next hard open example begin life always those both paper together
    got group often run important until children side feet car mile night walk white sea began grow
    took river four carry state once book hear stop without second later miss idea enough eat face
    watch far really almost let above girl sometimes mountain cut young talk soon list song being
    leave family""".split()
)

SHORT_PROMPT = (
    "Write a long, detailed story about a lighthouse keeper who finds a message in a bottle. "
    "Describe the sea, the weather, the town and every person the keeper meets."
)


def nonce(rng: random.Random) -> str:
    return f"[{rng.getrandbits(48):012x}]"


def filler(n_words: int, rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(max(0, n_words)))


def short_prompt(rng: random.Random) -> str:
    return f"{nonce(rng)} {SHORT_PROMPT}"


def long_prompt(target_tokens: int, rng: random.Random, tokens_per_word: float = 1.0) -> str:
    """About `target_tokens` tokens: a nonce, then filler words, then a request to keep writing."""
    words = round(max(0, target_tokens) / max(tokens_per_word, 0.1))
    return f"{nonce(rng)} {filler(words, rng)}\n\nContinue the text above for as long as you can."


def sized_prompt(target_tokens: int, rng: random.Random, tokens_per_word: float = 1.0) -> str:
    """About `target_tokens` tokens in all (the random workload's `--input-len`): the nonce and the closing
    request (about 12 tokens) count toward it, so a short target is mostly filler, never under a few words."""
    return long_prompt(max(0, target_tokens - PROMPT_FRAME_TOKENS), rng, tokens_per_word)


PROMPT_FRAME_TOKENS = 12  # the nonce and "Continue the text above for as long as you can.", in a BPE vocabulary
CALIBRATION_WORDS = 200
